//! What the bridge serves of the app's files: JavaScript and CSS without their comments and
//! needless whitespace (decision 0046). The files in `src/web/` are written to be read — their
//! comments explain why — and are about a third comments and indentation; a phone needs none of
//! it. Only whitespace and comments go: every other character is served as written, so the code a
//! phone runs is the code in the folder, token for token.

pub mod css;
pub mod js;

/// The body to serve for a file of `content_type`: minified when it is JavaScript or CSS and reads
/// cleanly, else the file as written (logged: the tests hold every asset to minifying).
pub fn shrink(path: &str, content_type: &str, body: &'static [u8]) -> Vec<u8> {
    let Ok(text) = std::str::from_utf8(body) else {
        return body.to_vec();
    };
    let shrunk = if content_type.starts_with("text/javascript") {
        js::minify(text).map_err(|e| e.to_string())
    } else if content_type.starts_with("text/css") {
        css::minify(text).map_err(|e| e.to_string())
    } else {
        return body.to_vec();
    };
    match shrunk {
        Ok(s) => s.into_bytes(),
        Err(e) => {
            tracing::warn!(%path, error = %e, "served as written: it does not minify");
            body.to_vec()
        }
    }
}

/// The byte after the closing `quote` of the string starting at `start` (a `\` escapes the next
/// byte); `None` when a line break or the end comes first. The same in JavaScript and CSS.
fn quoted_end(b: &[u8], start: usize, quote: u8) -> Option<usize> {
    let mut i = start + 1;
    while let Some(&c) = b.get(i) {
        match c {
            b'\\' => i += 1,
            b'\n' => return None,
            c if c == quote => return Some(i + 1),
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_does_not_minify_is_served_as_written() {
        const JS: &str = "text/javascript; charset=utf-8";
        assert_eq!(shrink("/a.js", JS, b"let a = 1; // x\n"), b"let a=1;\n");
        assert_eq!(shrink("/a.js", JS, b"let a = 'open\n"), b"let a = 'open\n");
        assert_eq!(
            shrink("/s.css", "text/css; charset=utf-8", b"a { b: c } /* open"),
            b"a { b: c } /* open"
        );
        assert_eq!(shrink("/i.png", "image/png", b"\x89PNG  x"), b"\x89PNG  x");
        assert_eq!(shrink("/b.js", JS, b"\xff  x"), b"\xff  x");
    }
}
