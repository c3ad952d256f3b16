//! The real go2rtc (v1.9.14), which `tests/run.sh` builds into
//! `target/go2rtc` and names in `GO2RTC`.

use std::path::PathBuf;

/// The go2rtc binary: `GO2RTC`, else the one `tests/run.sh` builds.
pub fn binary() -> PathBuf {
    let path = std::env::var_os("GO2RTC").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/go2rtc/go2rtc"),
        PathBuf::from,
    );
    assert!(
        path.is_file(),
        "go2rtc is missing at {}: build it with `bash tests/run.sh` (or ../shared/go2rtc/build.sh) \
         or set GO2RTC",
        path.display()
    );
    path
}
