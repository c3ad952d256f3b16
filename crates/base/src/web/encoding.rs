//! Content codings (RFC 9110, section 12.5.3): whether a request's
//! `Accept-Encoding` lets the node answer with gzip, the only coding its
//! embedded files are stored in.

/// Whether gzip is acceptable to a client that sent `header` (all its
/// `Accept-Encoding` lines joined by commas), or none.
pub fn allows_gzip(header: Option<&str>) -> bool {
    // No header: any coding is acceptable (RFC 9110); an empty one: none.
    let Some(header) = header else {
        return true;
    };
    let mut gzip = None;
    let mut any = None;
    for element in header.split(',') {
        let mut parts = element.split(';');
        let coding = parts.next().unwrap_or("").trim();
        if coding.is_empty() {
            continue;
        }
        let Some(allowed) = allowed(parts) else {
            continue; // a malformed weight: as if the element were not there
        };
        // "x-gzip" is gzip's old name, which recipients should accept.
        let slot = if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
            &mut gzip
        } else if coding == "*" {
            &mut any
        } else {
            continue;
        };
        slot.get_or_insert(allowed);
    }
    // gzip named outright wins over `*`, whichever comes first.
    gzip.or(any).unwrap_or(false)
}

/// Whether the element's `q` is above 0 (no `q` is 1), or `None` when it is
/// not a qvalue: "0" to "1" with at most three decimals. Read as digits, so
/// "above 0" is exact: a nonzero digit.
fn allowed<'a>(parameters: impl Iterator<Item = &'a str>) -> Option<bool> {
    let mut allowed = true;
    for parameter in parameters {
        let (name, value) = parameter.split_once('=')?;
        if !name.trim().eq_ignore_ascii_case("q") {
            continue;
        }
        let value = value.trim();
        let (whole, decimals) = value.split_once('.').unwrap_or((value, ""));
        let well_formed = matches!(whole, "0" | "1")
            && decimals.len() <= 3
            && decimals.bytes().all(|b| b.is_ascii_digit())
            && (whole == "0" || decimals.bytes().all(|b| b == b'0'));
        if !well_formed {
            return None;
        }
        allowed = whole == "1" || decimals.bytes().any(|b| b != b'0');
    }
    Some(allowed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_encoding() {
        for (header, want) in [
            (None, true),
            (Some(""), false),
            (Some("  "), false),
            (Some("gzip"), true),
            (Some("GZip"), true),
            (Some("x-gzip"), true),
            (Some("gzip, deflate, br, zstd"), true), // Chromium
            (Some("br;q=1.0, gzip;q=0.8, *;q=0.1"), true),
            (Some("deflate, br"), false),
            (Some("identity"), false),
            (Some("gzip;q=0"), false),
            (Some("gzip; q=0.000"), false),
            (Some("gzip;q=0.001"), true),
            (Some("gzip;Q=1"), true),
            (Some("*"), true),
            (Some("*;q=0"), false),
            (Some("br, *"), true),
            (Some("*, gzip;q=0"), false),
            (Some("gzip;q=0, *"), false),
            (Some("gzip;q=0.5, *;q=0"), true),
            (Some("identity;q=1, *;q=0"), false),
            (Some(" , ,gzip"), true),
            // A weight that is no qvalue drops its element only.
            (Some("gzip;q=2"), false),
            (Some("gzip;q=0.5000"), false),
            (Some("gzip;q=1.5"), false),
            (Some("gzip;q=abc, *"), true),
            (Some("gzip;q"), false),
            (Some("gzip;level=9"), true),
        ] {
            assert_eq!(allows_gzip(header), want, "{header:?}");
        }
    }
}
