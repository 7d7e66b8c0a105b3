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
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    minify_dir(Path::new("src/web"), &out.join("web"))?;
    list_languages(Path::new("src/web/lang"), &out.join("languages.rs"))
}

/// Writes the list of the phone app's languages (decision 0081) as Rust: one `Asset` per
/// `src/web/lang/<code>.json`, served at `/lang/<code>.json`, so a new language is one file and no
/// code. English is the app's own language and has no file.
fn list_languages(from: &Path, to: &Path) -> Result<(), Box<dyn Error>> {
    let mut files = Vec::new();
    for entry in fs::read_dir(from)? {
        let path = entry?.path();
        let Some(code) = path
            .extension()
            .filter(|e| *e == "json")
            .and(path.file_stem())
            .and_then(|s| s.to_str())
        else {
            continue;
        };
        if !is_language_code(code) || code == "en" {
            return Err(format!("{}: not a language code other than en", path.display()).into());
        }
        files.push((code.to_owned(), fs::canonicalize(&path)?));
    }
    files.sort();
    let mut rust = String::from("&[\n");
    for (code, path) in files {
        rust.push_str(&format!(
            "    Asset {{ path: \"/lang/{code}.json\", content_type: JSON, body: include_bytes!({:?}) }},\n",
            path.display().to_string()
        ));
    }
    rust.push(']');
    fs::write(to, rust)?;
    Ok(())
}

/// A BCP 47 tag as the app matches it against the browser's: `de`, `pt-BR`, `zh-Hant`.
fn is_language_code(code: &str) -> bool {
    let mut parts = code.split('-');
    let first = parts.next().unwrap_or_default();
    (2..=3).contains(&first.len())
        && first.bytes().all(|b| b.is_ascii_lowercase())
        && parts.all(|p| (2..=8).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_alphanumeric()))
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
