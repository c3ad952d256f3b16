//! The query string of a request URL: a named parameter's value, decoded.

use crate::error::Error;

/// The value of the last `name=...` in `query`, percent-decoded (`+` is a
/// space); None when it is not there.
pub fn param(query: &str, name: &str) -> Result<Option<String>, Error> {
    let Some(raw) = query
        .split('&')
        .filter_map(|pair| pair.split_once('=').filter(|(key, _)| *key == name))
        .map(|(_, value)| value)
        .next_back()
    else {
        return Ok(None);
    };
    decode(raw)
        .map(Some)
        .ok_or_else(|| Error::bad_request(format!("{name} is not validly encoded")))
}

fn decode(raw: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(raw.len());
    let mut rest = raw.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        match b {
            b'+' => bytes.push(b' '),
            b'%' => {
                let hex = std::str::from_utf8(tail.get(..2)?).ok()?;
                bytes.push(u8::from_str_radix(hex, 16).ok()?);
                rest = &tail[2..];
                continue;
            }
            _ => bytes.push(b),
        }
        rest = tail;
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params() {
        let table = [
            ("", "start", Ok(None)),
            ("end=1", "start", Ok(None)),
            (
                "start=2026-11-22T10:04:05Z",
                "start",
                Ok(Some("2026-11-22T10:04:05Z")),
            ),
            (
                "start=2026-11-22T10%3A04%3A05.000Z&x",
                "start",
                Ok(Some("2026-11-22T10:04:05.000Z")),
            ),
            ("a=1&start=x&start=y", "start", Ok(Some("y"))),
            ("start=", "start", Ok(Some(""))),
            ("start=a+b%2B", "start", Ok(Some("a b+"))),
            ("restart=1", "start", Ok(None)),
            ("start=%zz", "start", Err(())),
            ("start=%4", "start", Err(())),
            ("start=%ff", "start", Err(())),
        ];
        for (query, name, want) in table {
            let got = param(query, name).map_err(|_| ());
            assert_eq!(got, want.map(|v| v.map(str::to_owned)), "{query}");
        }
    }
}
