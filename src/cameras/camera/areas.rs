//! A camera's motion masks and zones, as clients send them and the node
//! keeps them (the database holds the API's JSON): `motionMasks`, polygons
//! whose motion the detector never sees, and `zones`, named polygons that
//! what moved must enter for an event of their kinds to be made. Each error
//! names the field and the element (`motionMasks[2] must have 3 to 32
//! points`).

use serde::Serialize;
use serde_json::{Map, Value};

use super::kind_names;
use crate::error::Error;
use crate::event::{Kind, MAX_ZONES, checked_zone_name};
use crate::media::polygon::{Point, Polygon};

/// The most masks a camera has, and points a polygon.
pub const MAX_MASKS: usize = 16;
const MIN_POINTS: usize = 3;
pub const MAX_POINTS: usize = 32;

/// Where what moved must go for an event to be made, and of which kinds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Zone {
    /// 1 to 32 characters, unique on its camera (whatever the case).
    pub name: String,
    pub polygon: Polygon,
    /// The kinds of event it is for, in [`Kind::ALL`]'s order, never empty.
    pub kinds: Vec<Kind>,
    /// A person or vehicle in it longer than this is loitering; none: no one is.
    #[serde(rename = "loiterSeconds", skip_serializing_if = "Option::is_none")]
    pub loiter: Option<Seconds>,
}

/// Whole seconds (a zone's `loiterSeconds`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Seconds(pub u32);

/// How long a zone's `loiterSeconds` may be.
const LOITER_SECONDS: std::ops::RangeInclusive<u64> = 1..=3600;

/// `motionMasks`: at most 16 polygons.
pub fn checked_masks(value: &Value) -> Result<Vec<Polygon>, Error> {
    let items = array(value, "motionMasks", MAX_MASKS, "polygons")?;
    items
        .iter()
        .enumerate()
        .map(|(i, item)| checked_polygon(&format!("motionMasks[{i}]"), item))
        .collect()
}

/// `zones`: at most 8 `{"name", "polygon", "kinds", "loiterSeconds"}`,
/// their names unique.
pub fn checked_zones(value: &Value) -> Result<Vec<Zone>, Error> {
    let items = array(
        value,
        "zones",
        MAX_ZONES,
        "zones {\"name\", \"polygon\", \"kinds\"}",
    )?;
    let mut zones: Vec<Zone> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let zone = checked_zone(&format!("zones[{i}]"), item)?;
        let name = zone.name.to_lowercase();
        if zones.iter().any(|z| z.name.to_lowercase() == name) {
            return Err(Error::bad_request(format!(
                "zones[{i}].name must be unique on the camera"
            )));
        }
        zones.push(zone);
    }
    Ok(zones)
}

/// The items of `value`, an array of at most `most` `what`.
fn array<'a>(value: &'a Value, field: &str, most: usize, what: &str) -> Result<&'a [Value], Error> {
    match value {
        Value::Array(items) if items.len() <= most => Ok(items),
        _ => Err(Error::bad_request(format!(
            "{field} must be an array of at most {most} {what}"
        ))),
    }
}

/// 3 to 32 points `[x, y]`, x and y from 0 to 1.
fn checked_polygon(field: &str, value: &Value) -> Result<Polygon, Error> {
    let count = || {
        Error::bad_request(format!(
            "{field} must have {MIN_POINTS} to {MAX_POINTS} points [x, y]"
        ))
    };
    let Value::Array(items) = value else {
        return Err(count());
    };
    if !(MIN_POINTS..=MAX_POINTS).contains(&items.len()) {
        return Err(count());
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| checked_point(&format!("{field}[{i}]"), item))
        .collect::<Result<_, _>>()
        .map(Polygon::new)
}

/// `[x, y]`, shares of the picture's width and height.
fn checked_point(field: &str, value: &Value) -> Result<Point, Error> {
    let share = |v: &Value| {
        v.as_f64()
            .filter(|v| (0.0..=1.0).contains(v))
            .map(|v| v as f32)
    };
    match value {
        Value::Array(xy) if xy.len() == 2 => {
            if let (Some(x), Some(y)) = (share(&xy[0]), share(&xy[1])) {
                return Ok([x, y]);
            }
        }
        _ => {}
    }
    Err(Error::bad_request(format!(
        "{field} must be [x, y] with x and y from 0 to 1 (shares of the picture's width and height)"
    )))
}

fn checked_zone(field: &str, value: &Value) -> Result<Zone, Error> {
    let Value::Object(fields) = value else {
        return Err(Error::bad_request(format!(
            "{field} must be {{\"name\", \"polygon\", \"kinds\"}}"
        )));
    };
    let required = |name: &str| {
        present(fields, name)
            .ok_or_else(|| Error::bad_request(format!("{field}.{name} is required")))
    };
    let name = checked_zone_name(&format!("{field}.name"), required("name")?)?;
    let polygon = checked_polygon(&format!("{field}.polygon"), required("polygon")?)?;
    let kinds = match present(fields, "kinds") {
        None => Kind::ALL.to_vec(),
        Some(kinds) => {
            let field = format!("{field}.kinds");
            let kinds = kind_names(&field, kinds, &Kind::ALL)?;
            if kinds.is_empty() {
                return Err(Error::bad_request(format!(
                    "{field} must name at least one kind"
                )));
            }
            kinds
        }
    };
    let loiter = match present(fields, "loiterSeconds") {
        None => None,
        Some(seconds) => match seconds.as_u64().filter(|s| LOITER_SECONDS.contains(s)) {
            Some(s) => Some(Seconds(s as u32)),
            None => {
                return Err(Error::bad_request(format!(
                    "{field}.loiterSeconds must be a whole number of seconds from {} to {}",
                    LOITER_SECONDS.start(),
                    LOITER_SECONDS.end()
                )));
            }
        },
    };
    Ok(Zone {
        name,
        polygon,
        kinds,
        loiter,
    })
}

/// A field that may be absent; JSON null counts as absent.
fn present<'a>(fields: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    fields.get(name).filter(|v| !v.is_null())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn square() -> Value {
        json!([[0.1, 0.1], [0.4, 0.1], [0.4, 0.4], [0.1, 0.4]])
    }

    #[test]
    fn masks_and_zones_are_taken_and_shown_as_given() {
        let masks = checked_masks(&json!([square(), [[0, 0], [1, 0], [0.5, 1]]])).unwrap();
        assert_eq!(masks.len(), 2);
        assert_eq!(masks[1].points(), [[0.0, 0.0], [1.0, 0.0], [0.5, 1.0]]);
        assert_eq!(
            serde_json::to_string(&masks).unwrap(),
            "[[[0.1,0.1],[0.4,0.1],[0.4,0.4],[0.1,0.4]],[[0.0,0.0],[1.0,0.0],[0.5,1.0]]]",
            "f32 shares are written as they were sent"
        );
        assert!(checked_masks(&json!([])).unwrap().is_empty());
        let most = vec![square(); 16];
        assert_eq!(checked_masks(&json!(most)).unwrap().len(), 16);
        let longest: Vec<Value> = (0..32).map(|i| json!([i as f64 / 32.0, 0.5])).collect();
        assert_eq!(
            checked_masks(&json!([longest])).unwrap()[0].points().len(),
            32
        );

        let zones = checked_zones(&json!([
            {"name": " Driveway ", "polygon": square(), "kinds": ["vehicle", "person"]},
            {"name": "Door", "polygon": square(), "kinds": null, "loiterSeconds": 3600},
            {"name": "Path", "polygon": square(), "loiterSeconds": 1},
        ]))
        .unwrap();
        assert_eq!(zones[0].name, "Driveway", "trimmed");
        assert_eq!(
            zones[0].kinds,
            [Kind::Person, Kind::Vehicle],
            "in one order"
        );
        assert_eq!(zones[1].kinds, Kind::ALL, "all kinds by default");
        let loiter: Vec<_> = zones.iter().map(|z| z.loiter).collect();
        assert_eq!(loiter, [None, Some(Seconds(3600)), Some(Seconds(1))]);
        assert!(
            serde_json::to_string(&zones[1])
                .unwrap()
                .ends_with(r#""loiterSeconds":3600}"#)
        );
        assert_eq!(
            serde_json::to_string(&zones[0]).unwrap(),
            r#"{"name":"Driveway","polygon":[[0.1,0.1],[0.4,0.1],[0.4,0.4],[0.1,0.4]],"kinds":["person","vehicle"]}"#
        );
        let eight: Vec<Value> = (0..8)
            .map(|i| json!({"name": format!("z{i}"), "polygon": square()}))
            .collect();
        assert_eq!(checked_zones(&json!(eight)).unwrap().len(), 8);
        let name = "é".repeat(32);
        assert_eq!(
            checked_zones(&json!([{"name": name, "polygon": square()}])).unwrap()[0].name,
            name
        );
    }

    #[test]
    fn every_refusal_names_the_field_and_the_element() {
        let seventeen = vec![square(); 17];
        let nine: Vec<Value> = (0..9)
            .map(|i| json!({"name": format!("z{i}"), "polygon": square()}))
            .collect();
        let many_points: Vec<Value> = (0..33).map(|_| json!([0.5, 0.5])).collect();
        let zone = |fields: Value| {
            let mut zone = json!({"name": "Yard", "polygon": square()});
            for (k, v) in fields.as_object().unwrap() {
                zone[k] = v.clone();
            }
            json!([{"name": "Gate", "polygon": square()}, zone])
        };
        let masks: [(Value, &str); 12] = [
            (
                json!("x"),
                "motionMasks must be an array of at most 16 polygons",
            ),
            (json!({}), "motionMasks must be an array"),
            (
                json!(seventeen),
                "motionMasks must be an array of at most 16",
            ),
            (
                json!([square(), "x"]),
                "motionMasks[1] must have 3 to 32 points [x, y]",
            ),
            (
                json!([[[0, 0], [1, 1]]]),
                "motionMasks[0] must have 3 to 32 points",
            ),
            (json!([[]]), "motionMasks[0] must have 3 to 32 points"),
            (
                json!([many_points]),
                "motionMasks[0] must have 3 to 32 points",
            ),
            (
                json!([square(), [[0, 0], [1, 0], [0.5, 1.5]]]),
                "motionMasks[1][2] must be [x, y] with x and y from 0 to 1",
            ),
            (
                json!([[[0, 0], [-0.1, 0], [0.5, 1]]]),
                "motionMasks[0][1] must be [x, y]",
            ),
            (
                json!([[[0, 0], [0.5], [0.5, 1]]]),
                "motionMasks[0][1] must be [x, y]",
            ),
            (
                json!([[[0, 0], [0.5, 0.5, 0.5], [0.5, 1]]]),
                "motionMasks[0][1] must be [x, y]",
            ),
            (
                json!([[[0, 0], ["0.5", 0.5], [0.5, 1]]]),
                "motionMasks[0][1] must be [x, y]",
            ),
        ];
        for (value, message) in masks {
            let err = checked_masks(&value).expect_err(&value.to_string());
            assert!(err.message.contains(message), "{value}: {}", err.message);
        }
        let zones: [(Value, &str); 20] = [
            (
                zone(json!({"loiterSeconds": 0})),
                "zones[1].loiterSeconds must be a whole number of seconds from 1 to 3600",
            ),
            (
                zone(json!({"loiterSeconds": 3601})),
                "zones[1].loiterSeconds must be a whole number",
            ),
            (
                zone(json!({"loiterSeconds": 2.5})),
                "zones[1].loiterSeconds must be a whole number",
            ),
            (
                zone(json!({"loiterSeconds": "10"})),
                "zones[1].loiterSeconds must be a whole number",
            ),
            (
                json!("x"),
                "zones must be an array of at most 8 zones {\"name\", \"polygon\", \"kinds\"}",
            ),
            (json!(nine), "zones must be an array of at most 8 zones"),
            (
                json!([square()]),
                "zones[0] must be {\"name\", \"polygon\", \"kinds\"}",
            ),
            (zone(json!({"name": null})), "zones[1].name is required"),
            (zone(json!({"name": 3})), "zones[1].name must be a string"),
            (
                zone(json!({"name": "  "})),
                "zones[1].name must be 1 to 32 characters",
            ),
            (
                zone(json!({"name": "x".repeat(33)})),
                "zones[1].name must be 1 to 32 characters",
            ),
            (
                zone(json!({"name": "a\tb"})),
                "zones[1].name must not contain control characters",
            ),
            (
                zone(json!({"name": "GATE "})),
                "zones[1].name must be unique on the camera",
            ),
            (
                zone(json!({"polygon": null})),
                "zones[1].polygon is required",
            ),
            (
                zone(json!({"polygon": [[0, 0], [1, 1]]})),
                "zones[1].polygon must have 3 to 32 points",
            ),
            (
                zone(json!({"polygon": [[0, 0], [1, 1], [2, 0]]})),
                "zones[1].polygon[2] must be [x, y] with x and y from 0 to 1",
            ),
            (
                zone(json!({"kinds": []})),
                "zones[1].kinds must name at least one kind",
            ),
            (
                zone(json!({"kinds": "person"})),
                "zones[1].kinds must be an array of names from motion, person, vehicle, animal, package",
            ),
            (
                zone(json!({"kinds": ["dog"]})),
                "zones[1].kinds may only name motion, person, vehicle, animal, package",
            ),
            (
                zone(json!({"kinds": ["motion", "motion"]})),
                "zones[1].kinds must not name a kind twice",
            ),
        ];
        for (value, message) in zones {
            let err = checked_zones(&value).expect_err(&value.to_string());
            assert!(err.message.contains(message), "{value}: {}", err.message);
        }
    }
}
