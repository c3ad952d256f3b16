//! The property tests' random numbers (the node's `properties`, the fMP4
//! mutation tests), replayable from a seed.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

/// xorshift64*: small, fast, and replayable from its seed (a seed must not
/// be 0).
pub struct Rng(pub u64);

impl Rng {
    /// A seed of its own, or `PROPERTY_SEED`'s to replay a failure.
    pub fn new() -> (Rng, u64) {
        let seed = std::env::var("PROPERTY_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| RandomState::new().build_hasher().finish() | 1);
        (Rng(seed), seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}
