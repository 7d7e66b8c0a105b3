//! Comments and whitespace out of a style sheet, every other character kept.
//!
//! Strings and `url(…)` are copied as written; a comment goes; a run of whitespace becomes one
//! space, or nothing next to `{ } ; , >` and after a `:` (a space *before* a `:` stays: in a
//! selector `a :hover` is not `a:hover`). Nothing else is rewritten, so what the browser parses is
//! the sheet as written.

use thiserror::Error;

/// Why a sheet was left as written.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum CssError {
    /// A string or comment that does not end.
    #[error("unterminated {0} at byte {1}")]
    Unterminated(&'static str, usize),
}

/// Characters next to which whitespace never matters.
fn tight(c: u8) -> bool {
    matches!(c, b'{' | b'}' | b';' | b',' | b'>')
}

/// `src` without comments and with its whitespace cut to what the grammar needs.
pub fn minify(src: &str) -> Result<String, CssError> {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let mut gap = false;
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\t' | b'\n' | b'\r' | 0x0c => {
                gap = true;
                i += 1;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let close = src[i + 2..]
                    .find("*/")
                    .ok_or(CssError::Unterminated("comment", i))?;
                gap = true;
                i += close + 4;
            }
            _ => {
                let end = match c {
                    b'"' | b'\'' => {
                        super::quoted_end(b, i, c).ok_or(CssError::Unterminated("string", i))?
                    }
                    _ if src[i..].starts_with("url(") => src[i..]
                        .find(')')
                        .map(|n| i + n + 1)
                        .ok_or(CssError::Unterminated("url(", i))?,
                    _ => i + 1,
                };
                let prev = out.as_bytes().last().copied();
                if gap && prev.is_some_and(|p| !tight(p) && p != b':') && !tight(c) {
                    out.push(' ');
                }
                gap = false;
                out.push_str(&src[i..end]);
                i = end;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_spaces_go_where_they_mean_nothing() {
        let sheet =
            "/* a */\n.a  .b:hover,\n.c > .d {\n  color: red;  /* x */\n  margin: 0 auto;\n}\n";
        assert_eq!(
            minify(sheet).as_deref(),
            Ok(".a .b:hover,.c>.d{color:red;margin:0 auto;}")
        );
    }

    #[test]
    fn a_space_before_a_colon_strings_and_urls_stay() {
        assert_eq!(minify("a :hover {}").as_deref(), Ok("a :hover{}"));
        assert_eq!(
            minify(".a::after { content: \"  /* no */  \"; }").as_deref(),
            Ok(".a::after{content:\"  /* no */  \";}")
        );
        assert_eq!(
            minify("b { background: url(x  y.png) }").as_deref(),
            Ok("b{background:url(x  y.png)}")
        );
        assert_eq!(
            minify("@media (max-width: 400px) and (hover: none) { a { b: calc(1px + 2em) } }")
                .as_deref(),
            Ok("@media (max-width:400px) and (hover:none){a{b:calc(1px + 2em)}}")
        );
    }

    #[test]
    fn an_unterminated_comment_or_string_is_an_error() {
        assert!(minify("a { b: c } /* open").is_err());
        assert!(minify("a { content: \"open }").is_err());
    }
}
