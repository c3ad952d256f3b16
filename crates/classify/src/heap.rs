//! glibc's allocator told how the classifier uses memory: loading and
//! optimising the model makes large short-lived copies of its weights, and
//! glibc, by default, serves them from its main heap once a large block has
//! been freed (its mmap threshold adapts upwards), where they stay as holes
//! the heap cannot give back: that load peak then stayed the classifier's
//! RSS for good. musl (the aarch64 board's static binary) maps each large
//! block by itself and unmaps it when freed already.

/// While the model loads: a block of 128 KiB or more is mapped by itself
/// and unmapped when freed, so the load's copies go back to the system.
pub fn loading() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    glibc::set(glibc::M_MMAP_THRESHOLD, 128 << 10);
}

/// Once loaded: each crop's tensors come from the heap, and what a crop
/// frees stays there for the next (no trim), so a crop does not fault in
/// fresh pages (which cost each crop much processor time:
/// docs/design/classification.md).
pub fn loaded() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // glibc's largest mmap threshold on 32-bit boards (armv7).
        glibc::set(glibc::M_MMAP_THRESHOLD, 16 << 20);
        glibc::set(glibc::M_TRIM_THRESHOLD, 256 << 20);
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod glibc {
    use std::ffi::c_int;

    pub const M_TRIM_THRESHOLD: c_int = -1;
    pub const M_MMAP_THRESHOLD: c_int = -3;

    unsafe extern "C" {
        fn mallopt(param: c_int, value: c_int) -> c_int;
    }

    /// One of glibc's malloc parameters; a value it refuses leaves its own.
    pub fn set(param: c_int, value: c_int) {
        // SAFETY: mallopt takes any parameter and value and says 0 for one
        // it refuses; no memory is handed over.
        unsafe { mallopt(param, value) };
    }
}
