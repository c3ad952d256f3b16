//! Media plumbing that knows nothing of cameras, the database or HTTP:
//! supervised ffmpeg-family processes, what their errors mean, the boxes
//! of the fragmented MP4 files that recordings are made of, and boxes and
//! polygons in a picture.

pub use nvr_base::media::area;
pub mod child;
pub mod failure;
pub use nvr_base::media::fmp4;
pub mod gate;
pub mod input;
pub use nvr_base::media::polygon;
pub use nvr_base::media::restart;
