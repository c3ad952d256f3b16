//! Which of a camera's zones what moved entered, as Frigate tells it: where
//! a moving region's bottom centre is (the feet or wheels on the ground),
//! not any part of it, so that a head passing in front of a zone drawn on a
//! lawn does not enter it. With zones, an event is made only when what
//! moved entered a zone meant for its kind; without any, every event is.

use crate::cameras::camera::Zone;
use crate::event::Kind;
use crate::media::area::Area;

/// The zones entered so far by the event under way.
#[derive(Debug)]
pub struct Entered {
    entered: Vec<bool>,
}

impl Entered {
    pub fn new(zones: &[Zone]) -> Entered {
        Entered {
            entered: vec![false; zones.len()],
        }
    }

    /// What moved, or an object seen, in these boxes.
    pub fn saw(&mut self, zones: &[Zone], boxes: &[Area]) {
        for area in boxes {
            let (x, y) = bottom_centre(area);
            for (entered, zone) in self.entered.iter_mut().zip(zones) {
                *entered |= zone.polygon.contains(x, y);
            }
        }
    }

    /// The names of the zones entered that are meant for `kind`, or None
    /// when the camera has zones and none such was entered (no event).
    pub fn names_for(&self, zones: &[Zone], kind: Kind) -> Option<Vec<String>> {
        if zones.is_empty() {
            return Some(Vec::new());
        }
        let names: Vec<String> = zones
            .iter()
            .zip(&self.entered)
            .filter(|(zone, entered)| **entered && zone.kinds.contains(&kind))
            .map(|(zone, _)| zone.name.clone())
            .collect();
        (!names.is_empty()).then_some(names)
    }
}

pub(super) fn bottom_centre(area: &Area) -> (f32, f32) {
    ((area.left + area.right) / 2.0, area.bottom)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::media::polygon::Polygon;

    fn zone(name: &str, [left, top, right, bottom]: [f32; 4], kinds: &[Kind]) -> Zone {
        Zone {
            name: name.into(),
            polygon: Polygon::new(vec![
                [left, top],
                [right, top],
                [right, bottom],
                [left, bottom],
            ]),
            kinds: kinds.to_vec(),
            loiter: None,
        }
    }

    #[test]
    fn an_event_is_made_where_its_kind_entered_a_zone_of_it() {
        use Kind::{Motion, Package, Person, Vehicle};
        let zones = [
            zone("Path", [0.0, 0.6, 0.5, 1.0], &[Person, Motion]),
            zone("Drive", [0.5, 0.6, 1.0, 1.0], &[Vehicle]),
            zone("Step", [0.4, 0.8, 0.6, 1.0], &[Package]),
        ];
        let mut entered = Entered::new(&zones);
        // Above the path, its bottom centre out of every zone.
        entered.saw(&zones, &[Area::new(0.1, 0.1, 0.3, 0.5)]);
        assert_eq!(entered.names_for(&zones, Person), None);
        assert_eq!(entered.names_for(&zones, Motion), None);
        // Its feet on the path: a person's and motion's zone, not a car's.
        entered.saw(&zones, &[Area::new(0.1, 0.3, 0.3, 0.7)]);
        assert_eq!(entered.names_for(&zones, Person), Some(vec!["Path".into()]));
        assert_eq!(entered.names_for(&zones, Vehicle), None);
        // On the drive too, and at the step (its bottom centre at 0.5, 1.0:
        // on the outlines of both, so in both).
        entered.saw(&zones, &[Area::new(0.3, 0.7, 0.7, 1.0)]);
        assert_eq!(
            entered.names_for(&zones, Vehicle),
            Some(vec!["Drive".into()])
        );
        assert_eq!(
            entered.names_for(&zones, Package),
            Some(vec!["Step".into()])
        );
        assert_eq!(entered.names_for(&zones, Person), Some(vec!["Path".into()]));
        // A camera without zones makes every event, in none.
        assert_eq!(Entered::new(&[]).names_for(&[], Motion), Some(vec![]));
    }
}
