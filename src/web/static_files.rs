//! The browser UI: the files of `www/`, embedded gzip-compressed in the
//! binary, or read as they are from `WWW_DIR` while developing, with headers
//! that keep them fresh and confined.

use std::path::PathBuf;

use crate::error::{Error, Kind};
use crate::web::encoding;
use crate::web::reply::Reply;

/// (URL path, gzip-compressed contents) of every file under `www/`, written
/// by `build.rs`. Compressed, the UI takes a third of the space in the binary,
/// which must fit the boards' 3 MiB.
const EMBEDDED: &[(&str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/www.rs"));

/// Scripts, styles, media and connections from the node itself only; no frames.
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
     img-src 'self' data: blob:; media-src 'self' blob:; connect-src 'self'; object-src 'none'; \
     base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

pub struct Ui {
    /// Serve from this folder instead of the embedded copy.
    dir: Option<PathBuf>,
}

impl Ui {
    pub fn new(dir: Option<PathBuf>) -> Ui {
        Ui { dir }
    }

    /// The file at `path`, for a client that sent `accept_encoding`.
    pub fn get(&self, path: &str, accept_encoding: Option<&str>) -> Result<Reply, Error> {
        let not_found = || Error::not_found("no such page");
        // The views' addresses (www/views.js) are the one page.
        let path = match path {
            "/" | "/live" | "/review" | "/recordings" | "/settings" => "/index.html",
            _ => path,
        };
        let reply = match &self.dir {
            Some(dir) if is_plain(path) => {
                let body = std::fs::read(dir.join(&path[1..])).map_err(|_| not_found())?;
                Reply::bytes(200, content_type(path), body)
            }
            Some(_) => return Err(not_found()),
            None => {
                let (_, body) = EMBEDDED
                    .iter()
                    .find(|(p, _)| *p == path)
                    .ok_or_else(not_found)?;
                // Every browser takes gzip; decompressing here for the rest
                // would cost the binary an inflater.
                let reply = if encoding::allows_gzip(accept_encoding) {
                    Reply::bytes(200, content_type(path), body.to_vec())
                        .with_header("Content-Encoding", "gzip")
                } else {
                    Reply::error(&Error::new(
                        Kind::NotAcceptable,
                        "the UI is only sent gzip-compressed: use a browser, or curl --compressed",
                    ))
                };
                // Caches must not give one client's answer to another.
                reply.with_header("Vary", "Accept-Encoding")
            }
        };
        let reply = reply
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
        let gzip = Some("gzip");
        for path in ["/", "/review", "/settings", "/whep.js"] {
            let reply = ui.get(path, gzip).unwrap();
            assert_eq!(reply.status, 200);
            assert_eq!(reply.header("Content-Encoding"), Some("gzip"));
            assert_eq!(reply.header("Vary"), Some("Accept-Encoding"));
        }
        let refused = ui.get("/", Some("identity")).unwrap();
        assert_eq!(refused.status, 406);
        assert_eq!(refused.header("Content-Encoding"), None);
        assert_eq!(refused.header("Vary"), Some("Accept-Encoding"));
        assert_eq!(ui.get("/nope.js", gzip).unwrap_err().kind, Kind::NotFound);
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
        // From a folder, files go as they are, whatever the client takes.
        for accept_encoding in [None, Some("gzip"), Some("identity")] {
            let reply = ui.get("/", accept_encoding).unwrap();
            assert_eq!(reply.status, 200);
            assert_eq!(reply.header("Content-Encoding"), None);
        }
        assert!(ui.get("/css/a.css", None).is_ok());
        for path in [
            "/../etc/passwd",
            "/css/../index.html",
            "/.secret",
            "/css//a.css",
            "/a\\b",
        ] {
            assert!(ui.get(path, None).is_err(), "{path}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }
}
