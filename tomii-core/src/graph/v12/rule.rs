//! What a Tomii 1.2 edge selects, given the factors: the one rule the 1.2-dialect reader, the
//! current format's `"rule": "tomii-1.2"` (decided when the graph compiles) and the Python builder
//! (`python/tomii/graph.py`, `_v12_meaning`) follow. Tomii 1.2's runtime counted, per successor,
//! the completions of the predecessor instances its edge "filters" to, and read
//! `pred[(i + l) mod P]` (graph/README.md, "What Tomii 1.2's edges mean"):
//!
//! - the edge is filtered (only instances `min L ..= max L` count) when |L| < P, L is contiguous
//!   and |L| = F; otherwise all P instances count;
//! - a `$barrier` releases every successor instance at once: it waits for the filtered instances
//!   (absolute), else for every instance;
//! - a single offset l reads and waits for `(i + l) mod P` (a factor-1 successor of a factor>1
//!   predecessor: instance l, which must exist);
//! - |L| = F > 1 (contiguous): instance i reads the i-th selected instance, `(min L + i) mod P`;
//! - otherwise the successor reads every `(i + l) mod P`, in order, and waits for them (a `$dep`
//!   of a factor-1 successor waits for every instance, as 1.2's count did).
//!
//! A range with `group_by` G (1.2's `wait(a, b, group_by=G)`, [`groups`]) splits into B = |L| / G
//! groups of G; successor instance i waits for group i / (F / B).
//!
//! Where 1.2 hung or crashed (negative offsets, a filtered range past the predecessor, a list of
//! |L| = F that is not contiguous), the rule is an error saying what to write instead.

use super::super::spec::{EdgeKind, Groups};

/// What a 1.2 edge selects, in the current format's terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Meaning {
    /// The offsets as written (`wrap` when some instance leaves the predecessor).
    AsWritten { wrap: bool },
    /// One offset k (`wrap` as above).
    Offset { k: i64, wrap: bool },
    /// Every instance.
    All,
    /// Instances lo..hi of the predecessor for every successor instance.
    Absolute { lo: i64, hi: i64 },
}

/// The meaning of an edge of `kind` selecting `offsets` (non-empty, in order) from a predecessor
/// of `pred_factor` instances, read by a node of `factor` instances.
pub(crate) fn meaning(kind: EdgeKind, offsets: &[i64], factor: u32, pred_factor: u32) -> Result<Meaning, String> {
    let (f, p, n) = (i64::from(factor), i64::from(pred_factor), offsets.len() as i64);
    let (Some(&lo), Some(&hi)) = (offsets.iter().min(), offsets.iter().max()) else {
        return Err("an empty selection selects nothing; give at least one offset".to_owned());
    };
    if lo < 0 {
        return Err(format!(
            "offset {lo} is negative, which Tomii 1.2 refused or crashed on; write the offsets with \"wrap\": true \
             (a ring) or select absolute instances"
        ));
    }
    let contiguous = hi - lo + 1 == n;
    let filtered = n < p && contiguous && n == f;
    let wraps = |largest: i64| f - 1 + largest >= p;
    match kind {
        EdgeKind::Barrier if filtered && hi >= p => Err(past_end(lo, hi, pred_factor)),
        EdgeKind::Barrier if filtered && f == 1 => Ok(Meaning::Offset { k: lo, wrap: false }),
        EdgeKind::Barrier if filtered => Ok(Meaning::Absolute { lo, hi: hi + 1 }),
        EdgeKind::Barrier => Ok(Meaning::All),
        _ if n == 1 && f == 1 && p > 1 && lo >= p => Err(past_end(lo, hi, pred_factor)),
        _ if n == 1 => Ok(Meaning::Offset { k: lo, wrap: wraps(lo) }),
        _ if n == f && !contiguous => Err(format!(
            "Tomii 1.2 gave each of the {factor} instances one of the {n} listed predecessor instances, in the \
             order they completed; select each instance's own with an offset (\"wrap\": true for a ring)"
        )),
        _ if n == f => Ok(Meaning::Offset { k: lo, wrap: wraps(lo) }),
        EdgeKind::Dep if f == 1 => Ok(Meaning::All),
        _ => Ok(Meaning::AsWritten { wrap: wraps(hi) }),
    }
}

fn past_end(lo: i64, hi: i64, pred_factor: u32) -> String {
    format!(
        "Tomii 1.2 waited for instances {lo}..={hi} of a predecessor of {pred_factor} instance(s), some of which \
         never exist, and hung; select instances below {pred_factor}"
    )
}

/// Tomii 1.2's grouped selection of `offsets` (a range) in groups of `size`, read by a node of
/// `factor` instances: B = |L| / `size` groups, each shared by F / B successor instances (the
/// 1.2 reader's `v12/grouped.rs` and the Python builder's `_Edge._groups` make the same object).
pub(crate) fn groups(offsets: &[i64], size: u32, factor: u32) -> Result<Groups, String> {
    let (Some(&lo), Some(&hi)) = (offsets.iter().min(), offsets.iter().max()) else {
        return Err("an empty range selects nothing; give an end above the start".to_owned());
    };
    let from = u32::try_from(lo).map_err(|_| format!("the range starts at {lo}, which is not an instance"))?;
    let count = hi - lo + 1;
    let groups = count / i64::from(size.max(1));
    if groups == 0 {
        return Err(format!(
            "the range selects {count} instance(s), fewer than one group of {size}, so Tomii 1.2 never released the \
             node (it hung); give a range over whole groups"
        ));
    }
    let f = i64::from(factor);
    if f < groups || f % groups != 0 {
        return Err(format!(
            "the range makes {groups} group(s) of {size} for a node of {factor} instance(s); Tomii 1.2 released no \
             instance or hung: give the node a multiple of that many instances"
        ));
    }
    Ok(Groups { size, from, shared: (f / groups) as u32, take: size })
}

#[cfg(test)]
mod tests {
    use super::super::super::spec::EdgeKind::{Barrier, Dep, Res};
    use super::{Meaning, meaning};

    #[test]
    fn each_case_of_the_rule() {
        let m = |kind, offsets: &[i64], f, p| meaning(kind, offsets, f, p);
        // A barrier's "0": instance 0 for a factor-1 successor of a larger predecessor, else all.
        assert_eq!(m(Barrier, &[0], 1, 200), Ok(Meaning::Offset { k: 0, wrap: false }));
        assert_eq!(m(Barrier, &[0], 200, 200), Ok(Meaning::All));
        assert_eq!(m(Barrier, &[0], 1, 1), Ok(Meaning::All));
        assert_eq!(m(Barrier, &[2, 3], 2, 8), Ok(Meaning::Absolute { lo: 2, hi: 4 }));
        assert_eq!(m(Barrier, &[0, 1, 2, 3], 2, 4), Ok(Meaning::All));
        // Single offsets wrap modulo the predecessor's factor.
        assert_eq!(m(Res, &[1], 4, 4), Ok(Meaning::Offset { k: 1, wrap: true }));
        assert_eq!(m(Res, &[0], 4, 4), Ok(Meaning::Offset { k: 0, wrap: false }));
        assert_eq!(m(Dep, &[0], 4, 2), Ok(Meaning::Offset { k: 0, wrap: true }));
        // |L| = F pairs instance i with the i-th selected instance.
        assert_eq!(m(Res, &[0, 1, 2, 3], 4, 4), Ok(Meaning::Offset { k: 0, wrap: false }));
        assert_eq!(m(Res, &[2, 3], 2, 8), Ok(Meaning::Offset { k: 2, wrap: false }));
        // Collect-all: every selected value; a factor-1 dep waits for every instance.
        assert_eq!(m(Res, &[0, 1, 2, 3, 4], 1, 4), Ok(Meaning::AsWritten { wrap: true }));
        assert_eq!(m(Dep, &[0, 1], 1, 4), Ok(Meaning::All));
        // What 1.2 crashed or hung on.
        assert!(m(Res, &[-1], 4, 4).is_err_and(|e| e.contains("negative")));
        assert!(m(Barrier, &[4], 1, 4).is_err_and(|e| e.contains("hung")));
        assert!(m(Res, &[4], 1, 4).is_err_and(|e| e.contains("hung")));
        assert!(m(Res, &[0, 2], 2, 4).is_err_and(|e| e.contains("order they completed")));
    }
}
