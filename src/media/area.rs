//! A box in a picture, in shares of its width and height, so that it
//! means the same in a frame of any size (the motion decoder's, a crop's,
//! the recording's).

/// Left, top, right and bottom, each from 0 to 1.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Area {
    pub left: f32,
    pub top: f32,
    pub right: f32,
    pub bottom: f32,
}

#[cfg(test)]
impl Area {
    /// The tests' shorthand.
    pub fn new(left: f32, top: f32, right: f32, bottom: f32) -> Area {
        Area {
            left,
            top,
            right,
            bottom,
        }
    }
}
