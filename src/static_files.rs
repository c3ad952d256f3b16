//! The browser UI: the files of `www/`, embedded in the binary, or read from
//! `WWW_DIR` while developing, with headers that keep them fresh and confined.

use std::path::PathBuf;

use crate::error::Error;
use crate::reply::Reply;

/// (URL path, contents) of every file under `www/`, written by `build.rs`.
const EMBEDDED: &[(&str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/www.rs"));

/// Scripts, styles, media and connections from the node itself only; no frames.
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; media-src 'self' blob:; connect-src 'self'; object-src 'none'; \
     base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

pub struct Ui {
    /// Serve from this folder instead of the embedded copy.
    dir: Option<PathBuf>,
}

impl Ui {
    pub fn new(dir: Option<PathBuf>) -> Ui {
        Ui { dir }
    }

    pub fn get(&self, path: &str) -> Result<Reply, Error> {
        let not_found = || Error::not_found("no such page");
        let path = if path == "/" { "/index.html" } else { path };
        let body = match &self.dir {
            Some(dir) if is_plain(path) => {
                std::fs::read(dir.join(&path[1..])).map_err(|_| not_found())?
            }
            Some(_) => return Err(not_found()),
            None => EMBEDDED
                .iter()
                .find(|(p, _)| *p == path)
                .map(|(_, body)| body.to_vec())
                .ok_or_else(not_found)?,
        };
        let reply = Reply::bytes(200, content_type(path), body)
            // Revalidate every time, so a new release shows up at once.
            .with_header("Cache-Control", "no-cache")
            .with_header("X-Content-Type-Options", "nosniff")
            .with_header("Referrer-Policy", "no-referrer")
            .with_header("X-Frame-Options", "DENY");
        Ok(reply.with_header("Content-Security-Policy", CONTENT_SECURITY_POLICY))
    }
}

/// A path that stays inside the folder: no `..`, no hidden files, no backslashes.
fn is_plain(path: &str) -> bool {
    path.starts_with('/')
        && !path.contains('\\')
        && !path.contains('\0')
        && path[1..]
            .split('/')
            .all(|s| !s.is_empty() && !s.starts_with('.'))
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("json" | "webmanifest") => "application/json",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_files_are_served_with_their_types() {
        let ui = Ui::new(None);
        assert!(ui.get("/").is_ok());
        assert!(ui.get("/whep.js").is_ok());
        assert_eq!(
            ui.get("/nope.js").unwrap_err().kind,
            crate::error::Kind::NotFound
        );
        assert_eq!(content_type("/app.js"), "text/javascript; charset=utf-8");
        assert_eq!(content_type("/a/b.css"), "text/css; charset=utf-8");
        assert_eq!(content_type("/x"), "application/octet-stream");
    }

    #[test]
    fn paths_outside_the_folder_are_refused() {
        let dir = std::env::temp_dir().join(format!("nvr-node-www-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("css")).unwrap();
        std::fs::write(dir.join("index.html"), "hi").unwrap();
        std::fs::write(dir.join("css/a.css"), "a{}").unwrap();
        std::fs::write(dir.join(".secret"), "s").unwrap();
        let ui = Ui::new(Some(dir.join("css").parent().unwrap().to_owned()));
        assert!(ui.get("/").is_ok());
        assert!(ui.get("/css/a.css").is_ok());
        for path in [
            "/../etc/passwd",
            "/css/../index.html",
            "/.secret",
            "/css//a.css",
            "/a\\b",
        ] {
            assert!(ui.get(path).is_err(), "{path}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }
}
