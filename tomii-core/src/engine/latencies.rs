//! Frame latencies and the report's figures of them ([`Latency`]): hdrhistogram's, to 3 significant
//! digits.
//!
//! A short run completes a handful of frames, and one worker a handful of those. An hdrhistogram
//! sized for a frame's latency is tens of KiB zeroed, grown and merged per worker per run: most of
//! what a repeated one-frame launch cost the engine (bench/README.md, "Repeated launches"). So
//! latencies are kept as they come while they are few (up to [`EXACT_LIMIT`], in a buffer grown as
//! they arrive, at a frame's end, never per task) and moved into a histogram only beyond that. Both
//! give the same figures: the few values are read through the histogram's buckets, by
//! hdrhistogram's own arithmetic (`exact_summary`), and a test holds the two equal.

use std::sync::OnceLock;

use hdrhistogram::Histogram;

use super::report::{Latency, latency};

/// Latencies kept as they are, at most; beyond, they go into a histogram (8 KiB of values).
const EXACT_LIMIT: usize = 1024;
/// Frame latencies in nanoseconds, at least 1.
#[derive(Clone, Debug, Default)]
pub(crate) struct Latencies {
    /// Every latency, while there are at most [`EXACT_LIMIT`] and no histogram.
    values: Vec<u64>,
    histogram: Option<Histogram<u64>>,
}

/// A histogram of nanoseconds at 3 significant digits, growing to the largest value recorded.
fn histogram() -> Histogram<u64> {
    let mut histogram = Histogram::new_with_bounds(1, 2, 3).expect("valid histogram bounds");
    histogram.auto(true);
    histogram
}

/// The buckets every latency histogram has (their count aside): what says which values are
/// equivalent, and what each bucket reads as. Made once per process.
fn shape() -> &'static Histogram<u64> {
    static SHAPE: OnceLock<Histogram<u64>> = OnceLock::new();
    SHAPE.get_or_init(histogram)
}

impl Latencies {
    /// No latencies: allocates nothing.
    pub(crate) fn new() -> Self {
        Latencies::default()
    }

    /// Records one latency (a zero-length one as 1 ns, the histogram's least value).
    pub(crate) fn record(&mut self, ns: u64) {
        let ns = ns.max(1);
        match &mut self.histogram {
            // The histogram grows to any value: this never fails.
            Some(histogram) => {
                let _ = histogram.record(ns);
            }
            None if self.values.len() < EXACT_LIMIT => self.values.push(ns),
            None => {
                let mut spilled = histogram();
                for value in self.values.drain(..).chain([ns]) {
                    let _ = spilled.record(value);
                }
                self.values = Vec::new();
                self.histogram = Some(spilled);
            }
        }
    }

    /// Adds `other`'s latencies to these.
    pub(crate) fn add(&mut self, other: Latencies) {
        match (&mut self.histogram, other.histogram) {
            (Some(mine), Some(theirs)) => {
                let _ = mine.add(theirs);
            }
            (None, Some(mut theirs)) => {
                for value in self.values.drain(..) {
                    let _ = theirs.record(value);
                }
                self.histogram = Some(theirs);
            }
            (_, None) => other.values.into_iter().for_each(|value| self.record(value)),
        }
    }

    /// The report's figures, in microseconds.
    pub(crate) fn summary(&self) -> Latency {
        match &self.histogram {
            Some(histogram) => latency(histogram),
            None => exact_summary(&self.values),
        }
    }
}

/// What [`latency`] gives for a histogram of `values`, computed from the values themselves:
/// each read as its bucket reads it, each sum taken bucket by bucket in the histogram's order.
fn exact_summary(values: &[u64]) -> Latency {
    if values.is_empty() {
        return Latency::default();
    }
    let shape = shape();
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let total = sorted.len() as f64;
    // Each bucket's reading and count, lowest first.
    let mut buckets: Vec<(f64, f64)> = Vec::new();
    for group in sorted.chunk_by(|a, b| shape.equivalent(*a, *b)) {
        buckets.push((shape.median_equivalent(group[0]) as f64, group.len() as f64));
    }
    let mean = buckets.iter().fold(0.0_f64, |sum, &(value, count)| sum + value * count / total);
    let deviations = buckets.iter().fold(0.0_f64, |sum, &(value, count)| {
        let deviation = value - mean;
        sum + (deviation * deviation) * count
    });
    // hdrhistogram's `value_at_quantile`: the highest equivalent of the value at rank ⌈q·n⌉ (≥ 1).
    let at = |quantile: f64| {
        let rank = ((quantile * total).ceil() as usize).clamp(1, sorted.len());
        shape.highest_equivalent(sorted[rank - 1])
    };
    let us = |ns: u64| ns as f64 / 1e3;
    Latency {
        mean: mean / 1e3,
        p50: us(at(0.50)),
        p95: us(at(0.95)),
        p99: us(at(0.99)),
        min: us(shape.lowest_equivalent(sorted[0])),
        max: us(shape.highest_equivalent(sorted[sorted.len() - 1])),
        stdev: (deviations / total).sqrt() / 1e3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The figures of a histogram holding `values`, as hdrhistogram computes them.
    fn of_histogram(values: &[u64]) -> Latency {
        let mut histogram = histogram();
        values.iter().for_each(|&v| histogram.record(v).unwrap());
        latency(&histogram)
    }

    /// A small seeded generator (xorshift), so the sets below are the same every run.
    fn draws(seed: u64) -> impl FnMut() -> u64 {
        let mut state = seed | 1;
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    #[test]
    fn few_latencies_give_the_figures_of_a_histogram() {
        let mut next = draws(0x5eed);
        let mut sets: Vec<Vec<u64>> = vec![
            vec![1],
            vec![7_777],
            vec![123_456_789; 3],
            vec![3_600_000_000_000],
            vec![u64::MAX / 2],
            vec![1_000_000, 1_000_100, 1_000_400],
            vec![5; 1000],
            (1..=100).map(|i| i * 1000).collect(),
        ];
        for size in [2, 3, 10, 99, 100, 101, 500, EXACT_LIMIT] {
            // Values spread over many powers of two, and values crowded into a few buckets.
            sets.push((0..size).map(|_| 1 + next() % (1 << (next() % 42))).collect());
            sets.push((0..size).map(|_| 80_000 + next() % 400).collect());
        }
        for values in sets {
            let mut latencies = Latencies::new();
            values.iter().for_each(|&v| latencies.record(v));
            assert!(latencies.histogram.is_none(), "{} values are few", values.len());
            let (exact, scanned) = (latencies.summary(), of_histogram(&values));
            assert_eq!(format!("{exact:?}"), format!("{scanned:?}"), "{} values", values.len());
        }
    }

    #[test]
    fn many_latencies_spill_into_a_histogram_and_merge_either_way() {
        let mut next = draws(7);
        let values: Vec<u64> = (0..3 * EXACT_LIMIT).map(|_| 1 + next() % 10_000_000).collect();
        let (mut a, mut b, mut c) = (Latencies::new(), Latencies::new(), Latencies::new());
        values[..2 * EXACT_LIMIT].iter().for_each(|&v| a.record(v));
        values[2 * EXACT_LIMIT..2 * EXACT_LIMIT + 10].iter().for_each(|&v| b.record(v));
        values[2 * EXACT_LIMIT + 10..].iter().for_each(|&v| c.record(v));
        assert!(a.histogram.is_some() && a.values.is_empty(), "beyond the limit the values spill");
        assert!(b.histogram.is_none() && c.histogram.is_none());
        // Exact into a histogram, and a histogram into exact values.
        b.add(a);
        b.add(c);
        assert!(b.histogram.is_some());
        assert_eq!(format!("{:?}", b.summary()), format!("{:?}", of_histogram(&values)));
    }

    #[test]
    fn a_zero_latency_reads_as_one_and_none_as_zeros() {
        let mut latencies = Latencies::new();
        assert_eq!(format!("{:?}", latencies.summary()), format!("{:?}", Latency::default()));
        latencies.record(0);
        latencies.record(5_000);
        assert_eq!(format!("{:?}", latencies.summary()), format!("{:?}", of_histogram(&[1, 5_000])));
    }
}
