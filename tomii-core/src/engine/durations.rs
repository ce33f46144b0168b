//! Per-node kernel-duration histograms, one set per worker, for the report's `p99_exec_us`.
//!
//! A histogram is 624 `u64` counts (5 KB) over log-linear buckets of raw ticks (hdrhistogram's layout at
//! 16 sub-buckets: exact below 32 ticks, then each bucket spans at most 1/16 of its values, so a
//! percentile is within 6.25%). Recording is a shift, a leading-zero count and an increment: no
//! allocation, no branch on the value, nothing shared. Kept only with task timing, and only while
//! every worker's histograms fit in [`MEMORY_BUDGET`].

use super::clock::Ticks;

/// Counts below this are one per tick value.
const EXACT: u64 = 32;
/// Sub-buckets per power of two above [`EXACT`].
const SUB_BUCKETS: usize = 16;
/// The longest duration told apart (2^42 ticks: over 20 minutes at 3 GHz); longer ones count as it.
const MAX_TICKS: Ticks = (1 << 42) - 1;
/// Buckets per node: the index of [`MAX_TICKS`] plus one.
const BUCKETS: usize = bucket(MAX_TICKS) + 1;
/// The most bytes the histograms of all workers may take together: beyond it (thousands of nodes
/// times many workers) none are kept and the report's `p99_exec_us` is null.
pub const MEMORY_BUDGET: usize = 64 << 20;

/// The bucket of a duration of `ticks` (at most [`MAX_TICKS`]).
#[inline(always)]
const fn bucket(ticks: Ticks) -> usize {
    // The shift keeps the value's top five bits: `shift` is 0 below 32 ticks.
    let shift = 59 - (ticks | (EXACT - 1)).leading_zeros();
    shift as usize * SUB_BUCKETS + (ticks >> shift) as usize
}

/// The largest duration in `bucket`, in ticks.
fn bucket_top(bucket: usize) -> Ticks {
    if bucket < EXACT as usize {
        return bucket as Ticks;
    }
    let shift = (bucket / SUB_BUCKETS - 1) as u32;
    let mantissa = (bucket % SUB_BUCKETS + SUB_BUCKETS) as Ticks;
    ((mantissa + 1) << shift) - 1
}

/// One worker's duration histograms, node after node in one allocation.
#[derive(Clone, Debug, Default)]
pub struct Durations {
    counts: Vec<u64>,
}

impl Durations {
    /// Histograms for `nodes` nodes, or none (every record a no-op) without `timing` or when
    /// `workers` sets of them would exceed [`MEMORY_BUDGET`].
    pub fn new(nodes: usize, workers: usize, timing: bool) -> Self {
        let bytes = (nodes * BUCKETS * std::mem::size_of::<u64>()).saturating_mul(workers);
        let kept = timing && bytes <= MEMORY_BUDGET;
        Durations { counts: if kept { vec![0; nodes * BUCKETS] } else { Vec::new() } }
    }

    /// Whether histograms are kept.
    pub fn is_kept(&self) -> bool {
        !self.counts.is_empty()
    }

    /// Counts one execution of `node` that took `ticks`.
    #[inline(always)]
    pub fn record(&mut self, node: u32, ticks: Ticks) {
        if let Some(count) = self.counts.get_mut(node as usize * BUCKETS + bucket(ticks.min(MAX_TICKS))) {
            *count += 1;
        }
    }

    /// Adds `other`'s counts to these (both kept, for the same nodes).
    pub fn add(&mut self, other: &Durations) {
        for (count, more) in self.counts.iter_mut().zip(&other.counts) {
            *count += more;
        }
    }

    /// The duration in ticks at quantile `q` of `node`'s executions, by nearest rank: the top of
    /// the bucket holding it. `None` when not kept or when the node never ran.
    pub fn quantile(&self, node: usize, q: f64) -> Option<Ticks> {
        let counts = self.counts.get(node * BUCKETS..(node + 1) * BUCKETS)?;
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return None;
        }
        let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        let at = counts.iter().position(|&count| {
            seen += count;
            seen >= rank
        });
        at.map(bucket_top)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_within_a_sixteenth() {
        assert_eq!(BUCKETS, 624);
        let mut previous = 0;
        for ticks in (0..100_000).chain([MAX_TICKS / 3, MAX_TICKS - 1, MAX_TICKS]) {
            let b = bucket(ticks);
            assert!(b == previous || b == previous + 1 || ticks > 100_000, "bucket of {ticks}");
            previous = b;
            let top = bucket_top(b);
            assert!(top >= ticks && (top - ticks) as f64 <= ticks as f64 / 16.0, "{ticks} in bucket topped {top}");
        }
    }

    #[test]
    fn quantiles_are_nearest_rank_and_merge_across_workers() {
        let (mut a, mut b) = (Durations::new(2, 2, true), Durations::new(2, 2, true));
        for ticks in 1..=50 {
            a.record(1, ticks);
            b.record(1, ticks + 50);
        }
        a.add(&b);
        // 50 shares its bucket with 51 (two values a bucket from 32 to 63).
        assert_eq!(a.quantile(1, 0.5), Some(51));
        assert_eq!(a.quantile(1, 0.99), Some(99));
        assert_eq!(a.quantile(0, 0.99), None, "node 0 never ran");
    }

    #[test]
    fn nothing_is_kept_without_timing_or_beyond_the_budget() {
        let mut off = Durations::new(10, 1, false);
        off.record(3, 100);
        assert!(!off.is_kept() && off.quantile(3, 0.5).is_none());
        assert!(!Durations::new(MEMORY_BUDGET / (BUCKETS * 8) + 1, 1, true).is_kept());
        assert!(Durations::new(MEMORY_BUDGET / (BUCKETS * 8), 1, true).is_kept());
    }
}
