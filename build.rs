//! Build step of the phone app (decision 0053): every script and the style sheet of `src/web/`
//! is minified by the `minifier` crate into `$OUT_DIR/web/`, from where `src/web.rs` embeds it.
//! The files in `src/web/` are written to be read — a third of their bytes are comments that say
//! why — and the shell must stay under 60 KiB gzipped (a unit test in `src/web.rs` holds it).
//! Other files (HTML, the manifest, icons) are embedded as written, from `src/web/` itself.

use std::error::Error;
use std::fs;
use std::path::Path;

fn main() -> Result<(), Box<dyn Error>> {
    println!("cargo:rerun-if-changed=src/web");
    let out = Path::new(&std::env::var("OUT_DIR")?).join("web");
    minify_dir(Path::new("src/web"), &out)
}

/// Minifies every `.js` and `.css` file under `from` into the same place under `to`.
fn minify_dir(from: &Path, to: &Path) -> Result<(), Box<dyn Error>> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let path = entry?.path();
        let name = path.file_name().ok_or("a file without a name")?;
        if path.is_dir() {
            minify_dir(&path, &to.join(name))?;
            continue;
        }
        let minified = match path.extension().and_then(|e| e.to_str()) {
            Some("js") => minifier::js::minify(&fs::read_to_string(&path)?)
                .map_err(|e| format!("{}: {e}", path.display()))?
                .to_string(),
            Some("css") => minifier::css::minify(&fs::read_to_string(&path)?)
                .map_err(|e| format!("{}: {e}", path.display()))?
                .to_string(),
            _ => continue,
        };
        fs::write(to.join(name), minified)?;
    }
    Ok(())
}
