//! Recorded spans: consecutive segments merged into one stretch of time; a
//! gap of more than [`MAX_GAP_MS`] starts a new span.

/// The longest gap between two segments that still counts as one span.
pub const MAX_GAP_MS: i64 = 2_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub start_ms: i64,
    pub end_ms: i64,
}

/// Merges `segments` ((start, end) in ms, sorted by start) into spans, cut
/// to the window `[from_ms, to_ms)`.
pub fn spans(
    segments: impl IntoIterator<Item = (i64, i64)>,
    from_ms: i64,
    to_ms: i64,
) -> Vec<Span> {
    let mut spans: Vec<Span> = Vec::new();
    for (start, end) in segments {
        let (start, end) = (start.max(from_ms), end.min(to_ms));
        if end <= start {
            continue;
        }
        match spans.last_mut() {
            Some(last) if start - last.end_ms <= MAX_GAP_MS => last.end_ms = last.end_ms.max(end),
            _ => spans.push(Span {
                start_ms: start,
                end_ms: end,
            }),
        }
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(start_ms: i64, end_ms: i64) -> Span {
        Span { start_ms, end_ms }
    }

    #[test]
    fn merging() {
        type Case = (&'static [(i64, i64)], (i64, i64), Vec<Span>);
        let table: [Case; 7] = [
            (&[], (0, 100_000), vec![]),
            (
                &[(0, 10_000), (10_000, 20_000)],
                (0, 100_000),
                vec![span(0, 20_000)],
            ),
            // A gap of exactly 2 s still joins; 2.001 s does not.
            (
                &[(0, 10_000), (12_000, 20_000), (22_001, 30_000)],
                (0, 100_000),
                vec![span(0, 20_000), span(22_001, 30_000)],
            ),
            // Cut to the window.
            (
                &[(0, 10_000), (10_000, 20_000)],
                (5_000, 15_000),
                vec![span(5_000, 15_000)],
            ),
            // Segments outside the window are left out.
            (&[(0, 10_000), (50_000, 60_000)], (20_000, 40_000), vec![]),
            // Overlaps (a clock set back) merge.
            (
                &[(0, 10_000), (9_000, 12_000), (11_000, 11_500)],
                (0, 100_000),
                vec![span(0, 12_000)],
            ),
            // An empty segment is no recording.
            (&[(5_000, 5_000)], (0, 100_000), vec![]),
        ];
        for (segments, (from, to), want) in table {
            assert_eq!(
                spans(segments.iter().copied(), from, to),
                want,
                "{segments:?}"
            );
        }
    }
}
