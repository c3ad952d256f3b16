//! The model's labels, as its package ships them (`labels.txt`), and the
//! classifier's answer naming them: what `nvr-classify` does around its
//! network, testable without it.

use std::path::Path;

use crate::protocol;
use crate::ssd;

/// The label of the background and of the ids the labels do not name.
pub const UNNAMED: &str = "???";

/// The label of each score column, read from `labels.txt`; errors name the
/// file and say how to install it.
pub fn read(path: &Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "cannot read {}: {e} (install the model with deploy/model/install-model.sh)",
            path.display()
        )
    })?;
    parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Lines of `<id>  <name>`, COCO's ids counted from 0 (person), the score
/// column of an id being the id plus 1 (column 0 is the background).
/// Columns without a name are `???`, as the background.
pub fn parse(text: &str) -> Result<Vec<String>, String> {
    let mut labels = vec![UNNAMED.to_owned(); ssd::CLASSES];
    for (n, line) in text.lines().enumerate() {
        let bad = |what: &str| format!("line {}: {what}: {line:?}", n + 1);
        let (id, name) = line
            .split_once(char::is_whitespace)
            .ok_or_else(|| bad("not <id> <name>"))?;
        let column = id
            .parse::<usize>()
            .ok()
            .map(|id| id + 1)
            .filter(|&c| c < ssd::CLASSES)
            .ok_or_else(|| bad(&format!("not an id from 0 to {}", ssd::CLASSES - 2)))?;
        let name = name.trim();
        if name.is_empty() || labels[column] != UNNAMED {
            return Err(bad("no name, or an id named twice"));
        }
        labels[column] = name.to_owned();
    }
    if labels.iter().all(|l| l == UNNAMED) {
        return Err("no labels".into());
    }
    Ok(labels)
}

/// The answer to record `id`: `objects` named by `labels`, scores and boxes
/// rounded to 4 places.
pub fn answer_line(id: u64, ms: f64, objects: &[ssd::Object], labels: &[String]) -> String {
    let round = |v: f32| (v * 10_000.0).round() / 10_000.0;
    let objects: Vec<_> = objects
        .iter()
        .map(|o| protocol::Object {
            label: labels[o.class].clone(),
            score: round(o.score),
            area: o.bbox.map(round),
        })
        .collect();
    protocol::answer_line(id, ms, &objects)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_read_as_the_package_ships_them() {
        let labels = parse("0  person\n2  car\n89  toothbrush\n").unwrap();
        assert_eq!(labels.len(), ssd::CLASSES);
        assert_eq!(
            [&labels[0], &labels[1], &labels[2], &labels[3], &labels[90]],
            ["???", "person", "???", "car", "toothbrush"]
        );
        for bad in [
            "",
            "person",
            "x  person",
            "90  hair brush",
            "-1  person",
            "0  ",
            "0  person\n0  man",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn an_answer_names_labels_and_rounds() {
        let labels: Vec<String> = ["???", "person"].map(String::from).to_vec();
        let object = ssd::Object {
            class: 1,
            score: 0.123456,
            bbox: [0.1, 0.2, 0.30004, 1.0],
        };
        assert_eq!(
            answer_line(7, 35.25, &[object], &labels),
            r#"{"id":7,"ms":35.3,"objects":[{"label":"person","score":0.1235,"box":[0.1,0.2,0.3,1.0]}]}"#
        );
    }
}
