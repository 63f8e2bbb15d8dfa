//! Embeds the viewer's files (`app/`) in the binary under one content hash: every asset is
//! served as `/app/assets/<hash>/<name>`, so a changed file changes every asset URL, and
//! each can be cached as immutable. The page (`app/index.html`) names its assets through
//! `{{assets}}`, replaced here with that path.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Content types by extension; a file of another kind is not embedded.
const TYPES: [(&str, &str); 3] =
    [("js", "text/javascript; charset=utf-8"), ("css", "text/css; charset=utf-8"), ("svg", "image/svg+xml")];

fn main() {
    let app = Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo")).join("app");
    println!("cargo:rerun-if-changed={}", app.display());
    let mut files = Vec::new();
    collect(&app, &mut files);
    files.sort();
    let mut hash = Sha256::new();
    let mut assets = Vec::new();
    for file in &files {
        let name = file.strip_prefix(&app).expect("under app/").to_string_lossy().replace('\\', "/");
        let ext = file.extension().and_then(|e| e.to_str()).unwrap_or_default();
        let Some((_, content_type)) = TYPES.iter().find(|(e, _)| *e == ext) else { continue };
        let bytes = std::fs::read(file).expect("readable asset");
        hash.update(name.as_bytes());
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(&bytes);
        assets.push((name, *content_type, file.clone()));
    }
    let version: String = hash.finalize()[..8].iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    });
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo"));
    let page = std::fs::read_to_string(app.join("index.html")).expect("app/index.html");
    assert!(page.contains("{{assets}}"), "app/index.html names its assets through {{{{assets}}}}");
    std::fs::write(out.join("index.html"), page.replace("{{assets}}", &format!("/app/assets/{version}")))
        .expect("writable OUT_DIR");
    let mut code = format!("/// The assets' content hash.\npub const VERSION: &str = \"{version}\";\n");
    code.push_str("/// (name under app/, content type, bytes)\npub static ASSETS: &[(&str, &str, &[u8])] = &[\n");
    for (name, content_type, path) in &assets {
        let _ = writeln!(code, "    ({name:?}, {content_type:?}, include_bytes!({:?})),", path.display().to_string());
    }
    code.push_str("];\n/// The page, naming its assets by hash.\npub static PAGE: &[u8] = include_bytes!(concat!(env!(\"OUT_DIR\"), \"/index.html\"));\n");
    std::fs::write(out.join("assets.rs"), code).expect("writable OUT_DIR");
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable app/") {
        let path = entry.expect("readable entry").path();
        if path.is_dir() {
            collect(&path, files);
        } else {
            files.push(path);
        }
    }
}
