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

impl Area {
    /// The area two boxes share, as a share of the smaller.
    pub fn overlap(&self, other: &Area) -> f32 {
        let w = (self.right.min(other.right) - self.left.max(other.left)).max(0.0);
        let h = (self.bottom.min(other.bottom) - self.top.max(other.top)).max(0.0);
        let size = |x: &Area| (x.right - x.left) * (x.bottom - x.top);
        let smaller = size(self).min(size(other));
        if smaller <= 0.0 { 0.0 } else { w * h / smaller }
    }
}

impl Area {
    /// The tests' shorthand (the node's too).
    pub fn new(left: f32, top: f32, right: f32, bottom: f32) -> Area {
        Area {
            left,
            top,
            right,
            bottom,
        }
    }
}
