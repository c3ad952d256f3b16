//! What the node and `nvr-classify` say to each other: a crop goes to its
//! stdin as a line `<id> <width> <height>` and the RGB bytes; each answer
//! comes back on stdout as a line of JSON, naming the crop's id, with the
//! objects found (label, score, box in shares of the crop). Once its model
//! is loaded the program says `ready`.

use serde::Deserialize;

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

#[derive(Clone, Debug, Deserialize, PartialEq)]
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
}
