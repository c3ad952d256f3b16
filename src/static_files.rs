//! The browser UI: files from `www/`, embedded in the binary.

use crate::error::Error;
use crate::http::Reply;

struct Asset {
    path: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

macro_rules! assets {
    ($($path:literal => $content_type:literal),* $(,)?) => {
        &[$(Asset {
            path: concat!("/", $path),
            content_type: $content_type,
            body: include_bytes!(concat!("../www/", $path)),
        }),*]
    };
}

const ASSETS: &[Asset] = assets![
    "index.html" => "text/html; charset=utf-8",
    "live.html" => "text/html; charset=utf-8",
    "live.css" => "text/css; charset=utf-8",
    "live.js" => "text/javascript; charset=utf-8",
    "whep.js" => "text/javascript; charset=utf-8",
];

pub fn get(path: &str) -> Result<Reply, Error> {
    let path = if path == "/" { "/index.html" } else { path };
    let asset = ASSETS
        .iter()
        .find(|a| a.path == path)
        .ok_or_else(|| Error::not_found("no such page"))?;
    Ok(Reply::bytes(200, asset.content_type, asset.body.to_vec()))
}
