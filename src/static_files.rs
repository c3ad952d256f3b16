//! The browser UI: files from `www/`, embedded in the binary.

use crate::error::Error;
use crate::http::Reply;

struct Asset {
    path: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

const ASSETS: &[Asset] = &[Asset {
    path: "/index.html",
    content_type: "text/html; charset=utf-8",
    body: include_bytes!("../www/index.html"),
}];

pub fn get(path: &str) -> Result<Reply, Error> {
    let path = if path == "/" { "/index.html" } else { path };
    let asset = ASSETS
        .iter()
        .find(|a| a.path == path)
        .ok_or_else(|| Error::not_found("no such page"))?;
    Ok(Reply::bytes(200, asset.content_type, asset.body.to_vec()))
}
