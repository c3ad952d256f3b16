//! The property tests' random numbers (`crate::properties`, the fMP4
//! mutation tests), replayable from a seed.

/// xorshift64*: small, fast, and replayable from its seed (a seed must not
/// be 0).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    /// A seed of its own, or `PROPERTY_SEED`'s to replay a failure.
    pub(crate) fn new() -> (Rng, u64) {
        let seed = std::env::var("PROPERTY_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| uuid::Uuid::new_v4().as_u64_pair().0 | 1);
        (Rng(seed), seed)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub(crate) fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}
