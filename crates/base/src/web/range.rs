//! HTTP byte ranges (RFC 9110, section 14): which part of a resource of a
//! known length a `Range` header asks for. One range only: a request for
//! several gets the whole resource, as the RFC allows.

/// What to send.
#[derive(Debug, PartialEq, Eq)]
pub enum Ranged {
    /// The whole resource, 200.
    Whole,
    /// Bytes `start..=last`, 206.
    Part { start: u64, last: u64 },
    /// Nothing of it can be sent, 416.
    Unsatisfiable,
}

/// Reads `header` (the `Range` value, if any) for a resource of `len` bytes.
pub fn ranged(header: Option<&str>, len: u64) -> Ranged {
    let Some(spec) = header.and_then(|h| h.trim().strip_prefix("bytes=")) else {
        // No header, or a unit other than bytes: ignored.
        return Ranged::Whole;
    };
    let Some((first, last)) = spec.split_once('-').filter(|_| !spec.contains(',')) else {
        return Ranged::Whole;
    };
    let (first, last) = (first.trim(), last.trim());
    if first.is_empty() {
        // `-500`: the last 500 bytes.
        return match number(last) {
            None => Ranged::Whole,
            Some(0) => Ranged::Unsatisfiable,
            Some(_) if len == 0 => Ranged::Unsatisfiable,
            Some(suffix) => Ranged::Part {
                start: len.saturating_sub(suffix),
                last: len - 1,
            },
        };
    }
    let Some(start) = number(first) else {
        return Ranged::Whole;
    };
    // `500-` leaves the end open.
    let end = match (last.is_empty(), number(last)) {
        (true, _) => None,
        (false, Some(end)) if end >= start => Some(end),
        (false, _) => return Ranged::Whole,
    };
    if start >= len {
        return Ranged::Unsatisfiable;
    }
    Ranged::Part {
        start,
        last: end.map_or(len - 1, |end| end.min(len - 1)),
    }
}

/// Digits only: no sign, no spaces inside.
fn number(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        let part = |start, last| Ranged::Part { start, last };
        let table = [
            (None, Ranged::Whole),
            (Some("bytes=0-99"), part(0, 99)),
            (Some("bytes=0-"), part(0, 999)),
            (Some("bytes=500-"), part(500, 999)),
            (Some("bytes=990-2000"), part(990, 999)),
            (Some("bytes=-100"), part(900, 999)),
            (Some("bytes=-5000"), part(0, 999)),
            (Some(" bytes=10-19 "), part(10, 19)),
            (Some("bytes=1000-"), Ranged::Unsatisfiable),
            (Some("bytes=5000-6000"), Ranged::Unsatisfiable),
            (Some("bytes=-0"), Ranged::Unsatisfiable),
            // Invalid or unsupported: the whole resource.
            (Some("bytes=20-10"), Ranged::Whole),
            (Some("bytes=0-9,20-29"), Ranged::Whole),
            (Some("items=0-9"), Ranged::Whole),
            (Some("bytes=x-9"), Ranged::Whole),
            (Some("bytes=0-x"), Ranged::Whole),
            (Some("bytes=-"), Ranged::Whole),
            (Some("bytes=+5-9"), Ranged::Whole),
            (Some("bytes=99999999999999999999999-"), Ranged::Whole),
        ];
        for (header, want) in table {
            assert_eq!(ranged(header, 1000), want, "{header:?}");
        }
        assert_eq!(ranged(Some("bytes=0-"), 0), Ranged::Unsatisfiable);
    }
}
