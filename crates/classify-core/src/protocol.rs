//! What the node and `nvr-classify` say to each other: a crop goes to its
//! stdin as a line `<id> <width> <height>` and the RGB bytes; each answer
//! comes back on stdout as a line of JSON, naming the crop's id, with the
//! objects found (label, score, box in shares of the crop). Once its model
//! is loaded the program says `ready`. Both sides are here: the node writes
//! headers and reads answers, `nvr-classify` reads headers and writes
//! answers.

use std::io::{BufRead, Read};

use serde::{Deserialize, Serialize};

/// Longest header line accepted, newline included: a u64 and two sizes.
pub const MAX_LINE: usize = 64;
/// Largest payload skipped after a header with the wrong size (so the
/// stream stays in step); past it the stream is given up.
const MAX_SKIP: u64 = 4096 * 4096 * 3;

/// The line the program prints once it can take crops.
pub const READY: &str = "ready";

/// The head of a crop's record.
pub fn header(id: u64, width: usize, height: usize) -> String {
    format!("{id} {width} {height}\n")
}

/// An answer, as the program writes it.
#[derive(Debug, Deserialize, PartialEq)]
pub struct Answer {
    pub id: u64,
    #[serde(default)]
    pub objects: Vec<Object>,
    /// The crop could not be classified (the program says why).
    pub error: Option<String>,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct Object {
    pub label: String,
    pub score: f32,
    /// Left, top, right, bottom, as shares of the crop.
    #[serde(rename = "box")]
    pub area: [f32; 4],
}

/// An answer line; None when it is not one.
pub fn parse_answer(line: &str) -> Option<Answer> {
    let answer: Answer = serde_json::from_str(line).ok()?;
    let sane = answer
        .objects
        .iter()
        .all(|o| (0.0..=1.0).contains(&o.score) && o.area.iter().all(|v| v.is_finite()));
    sane.then_some(answer)
}

/// The answer line for crop `id`: what was found, and how long it took.
pub fn answer_line(id: u64, ms: f64, objects: &[Object]) -> String {
    // A struct, not `json!`, which would widen the f32s to f64 and print
    // 0.42 as 0.41999998688697815.
    #[derive(Serialize)]
    struct Line<'a> {
        id: u64,
        ms: f64,
        objects: &'a [Object],
    }
    let ms = (ms * 10.0).round() / 10.0;
    serde_json::to_string(&Line { id, ms, objects }).expect("numbers and strings serialize")
}

/// The answer line for crop `id` that could not be classified.
pub fn error_line(id: u64, message: &str) -> String {
    serde_json::json!({"id": id, "error": message}).to_string()
}

/// The next header line without its newline; `None` at a clean end of input.
pub fn read_line(input: &mut impl BufRead) -> Result<Option<Vec<u8>>, String> {
    let mut line = Vec::with_capacity(MAX_LINE);
    input
        .take(MAX_LINE as u64)
        .read_until(b'\n', &mut line)
        .map_err(|e| format!("stdin: {e}"))?;
    match line.pop() {
        None => Ok(None),
        Some(b'\n') => Ok(Some(line)),
        Some(_) if line.len() + 1 == MAX_LINE => {
            Err(format!("a header line longer than {MAX_LINE} bytes"))
        }
        Some(_) => Err("stdin ended inside a header line".into()),
    }
}

/// Why a header was refused: the id when it could be read, and how many
/// payload bytes to skip to stay in step (`None`: the stream is lost).
#[derive(Debug, PartialEq)]
pub struct BadHeader {
    pub id: Option<u64>,
    pub message: String,
    pub skip: Option<u64>,
}

/// Parses `<id> <width> <height>` (decimal, single spaces) into the id,
/// refusing any size but `size` by `size`.
pub fn parse_header(line: &[u8], size: usize) -> Result<u64, BadHeader> {
    let bad = |id, message: &str, skip| BadHeader {
        id,
        message: message.into(),
        skip,
    };
    let number = |s: &str| -> Option<u64> {
        // u64::from_str takes a leading '+'; the protocol is digits only.
        if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
            s.parse().ok()
        } else {
            None
        }
    };
    let text = std::str::from_utf8(line).map_err(|_| bad(None, "not ASCII", None))?;
    let mut fields = text.split(' ');
    let id = fields
        .next()
        .and_then(number)
        .ok_or_else(|| bad(None, "no record id", None))?;
    let (Some(w), Some(h), None) = (fields.next(), fields.next(), fields.next()) else {
        return Err(bad(Some(id), "expected <id> <width> <height>", None));
    };
    let (Some(w), Some(h)) = (number(w), number(h)) else {
        return Err(bad(Some(id), "width and height must be numbers", None));
    };
    let size = size as u64;
    if (w, h) != (size, size) {
        let bytes = w.checked_mul(h).and_then(|p| p.checked_mul(3));
        let skip = bytes.filter(|&n| n <= MAX_SKIP);
        let message = format!("the crop must be {size}x{size}, not {w}x{h}");
        return Err(bad(Some(id), &message, skip));
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers() {
        let line = r#"{"id":7,"ms":35.2,"objects":[{"label":"Person","score":0.42,"box":[0.1,0.2,0.5,0.9]}]}"#;
        assert_eq!(
            parse_answer(line),
            Some(Answer {
                id: 7,
                objects: vec![Object {
                    label: "Person".into(),
                    score: 0.42,
                    area: [0.1, 0.2, 0.5, 0.9],
                }],
                error: None,
            })
        );
        let failed = parse_answer(r#"{"id":8,"error":"bad size"}"#).unwrap();
        assert_eq!((failed.id, failed.error.as_deref()), (8, Some("bad size")));
        for bad in [
            "ready",
            "",
            r#"{"objects":[]}"#,
            r#"{"id":-1}"#,
            r#"{"id":1,"objects":[{"label":"Cat","score":1.5,"box":[0,0,1,1]}]}"#,
            r#"{"id":1,"objects":[{"label":"Cat","score":0.5,"box":[0,0,1]}]}"#,
        ] {
            assert_eq!(parse_answer(bad), None, "{bad}");
        }
        assert_eq!(header(3, 300, 300), "3 300 300\n");
    }

    fn parse_header_300(line: &[u8]) -> Result<u64, BadHeader> {
        parse_header(line, 300)
    }

    #[test]
    fn a_good_header_gives_its_id() {
        assert_eq!(parse_header_300(b"7 300 300"), Ok(7));
        assert_eq!(
            parse_header_300(b"18446744073709551615 300 300"),
            Ok(u64::MAX)
        );
    }

    #[test]
    fn a_header_without_an_id_is_refused_without_one() {
        for line in [
            &b""[..],
            b"x 300 300",
            b"-1 300 300",
            b"+7 300 300",
            b" 7 300 300",
            b"\xff",
        ] {
            let bad = parse_header_300(line).unwrap_err();
            assert_eq!(bad.id, None, "{line:?}: {bad:?}");
            assert_eq!(bad.skip, None);
        }
        // One past u64::MAX.
        assert_eq!(
            parse_header_300(b"18446744073709551616 300 300")
                .unwrap_err()
                .id,
            None
        );
    }

    #[test]
    fn a_header_with_an_id_but_no_sizes_loses_the_stream() {
        for line in [
            &b"7"[..],
            b"7 300",
            b"7 300 300 1",
            b"7  300 300",
            b"7 300 30a",
            b"7 300 300\r",
        ] {
            let bad = parse_header_300(line).unwrap_err();
            assert_eq!((bad.id, bad.skip), (Some(7), None), "{line:?}: {bad:?}");
        }
    }

    #[test]
    fn a_header_with_another_size_says_how_much_to_skip() {
        let bad = parse_header_300(b"9 320 240").unwrap_err();
        assert_eq!((bad.id, bad.skip), (Some(9), Some(320 * 240 * 3)));
        assert!(bad.message.contains("300x300"), "{}", bad.message);
        // Too large to skip, or overflowing: the stream is given up.
        assert_eq!(parse_header_300(b"9 5000 5000").unwrap_err().skip, None);
        let bad = parse_header_300(b"9 18446744073709551615 2").unwrap_err();
        assert_eq!((bad.id, bad.skip), (Some(9), None));
    }

    #[test]
    fn header_lines_are_bounded_and_must_end() {
        let mut input = &b"1 300 300\n"[..];
        assert_eq!(read_line(&mut input), Ok(Some(b"1 300 300".to_vec())));
        assert_eq!(read_line(&mut input), Ok(None));
        let long = [b'1'; 200];
        assert!(
            read_line(&mut &long[..])
                .unwrap_err()
                .contains("longer than 64")
        );
        assert!(
            read_line(&mut &b"1 300"[..])
                .unwrap_err()
                .contains("ended inside")
        );
    }

    #[test]
    fn the_classifier_s_lines_are_what_the_node_reads() {
        let object = Object {
            label: "person".into(),
            score: 0.42,
            area: [0.1, 0.2, 0.5, 0.9],
        };
        let line = answer_line(7, 35.24, std::slice::from_ref(&object));
        assert_eq!(
            line,
            r#"{"id":7,"ms":35.2,"objects":[{"label":"person","score":0.42,"box":[0.1,0.2,0.5,0.9]}]}"#
        );
        let answer = parse_answer(&line).unwrap();
        assert_eq!(
            (answer.id, answer.objects, answer.error),
            (7, vec![object], None)
        );
        let failed = parse_answer(&error_line(8, "bad size")).unwrap();
        assert_eq!((failed.id, failed.error.as_deref()), (8, Some("bad size")));
    }
}
