//! Which predecessor instances an edge selects, relative to the successor's own instance: parsing
//! the `index` strings ("all", "3", "num", "0-num"), checking the bounds for every instance in
//! O(selection) time, and enumerating the selected instances.
//!
//! `for_each` may only be called on a selection that `first_out_of_range` accepted; nothing here
//! allocates in proportion to a range's length.

use super::literal::Literal;
use super::spec::Groups;

/// A selection of predecessor instances.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Selection {
    /// Instance i selects i + k for each k, in order.
    Offsets(Vec<i64>),
    /// Instance i selects i + a, …, i + b − 1 (never empty: a < b).
    Range(i64, i64),
    /// Every instance of the predecessor, whatever i is.
    All,
    /// `wrap`: like `Offsets`, modulo the predecessor's factor (a ring).
    WrappedOffsets(Vec<i64>),
    /// `wrap`: like `Range`, modulo the predecessor's factor.
    WrappedRange(i64, i64),
    /// `group_by`: instance i selects the first `take` instances of group i / `shared`
    /// (the integer form g: the g instances i·g, …, i·g + g − 1).
    Group(Groups),
    /// `absolute`: instances a, …, b − 1 of the predecessor, whatever i is (never empty: a < b).
    Absolute(i64, i64),
}

impl Selection {
    /// Instance i selects i + k: the range k..k + 1, which selects as the list `[k]` does
    /// (the same instances, bounds and messages) without a list to allocate.
    pub(crate) fn offset(k: i64) -> Selection {
        match k.checked_add(1) {
            Some(end) => Selection::Range(k, end),
            None => Selection::Offsets(vec![k]),
        }
    }

    /// Number of predecessor instances each successor instance selects.
    pub(crate) fn len(&self, pred_factor: u32) -> u64 {
        match self {
            Selection::Offsets(offsets) | Selection::WrappedOffsets(offsets) => offsets.len() as u64,
            Selection::Range(a, b) | Selection::WrappedRange(a, b) | Selection::Absolute(a, b) => b.abs_diff(*a),
            Selection::All => pred_factor.into(),
            Selection::Group(g) => g.take.into(),
        }
    }

    /// The first (instance, offset) that selects outside `0..pred_factor`, scanning instances in
    /// order and, within one, offsets in order; `None` when every selection is valid.
    pub(crate) fn first_out_of_range(&self, factor: u32, pred_factor: u32) -> Option<(u32, i64)> {
        let p = i64::from(pred_factor);
        let outside = |k: i64| k < 0 || k >= p;
        let (at_zero, largest) = match self {
            Selection::All | Selection::WrappedOffsets(_) | Selection::WrappedRange(..) => return None,
            // The same instances for every i: instance 0 fails first, at the first one outside.
            Selection::Absolute(a, b) => {
                return (outside(*a) || *b > p).then(|| (0, if outside(*a) { *a } else { p }));
            }
            Selection::Group(g) => return g.first_out_of_range(factor, pred_factor),
            Selection::Offsets(offsets) => {
                (offsets.iter().copied().find(|&k| outside(k)), offsets.iter().copied().max().unwrap_or(0))
            }
            Selection::Range(a, b) if outside(*a) => (Some(*a), *b - 1),
            Selection::Range(_, b) => ((*b > p).then_some(p), *b - 1),
        };
        if let Some(k) = at_zero {
            return Some((0, k));
        }
        // Every offset is in 0..p, so instance i first fails when i + largest reaches p.
        let first_bad = p - largest;
        (first_bad < i64::from(factor)).then(|| (u32::try_from(first_bad).unwrap_or(u32::MAX), largest))
    }

    /// Calls `visit` with each predecessor instance index that instance `i` selects, in order.
    pub(crate) fn for_each(&self, i: u32, pred_factor: u32, mut visit: impl FnMut(u32)) {
        let at = |k: i64| u32::try_from(i64::from(i) + k).unwrap_or(u32::MAX);
        let ring = |k: i64| u32::try_from((i64::from(i) + k).rem_euclid(i64::from(pred_factor.max(1)))).unwrap_or(0);
        match self {
            Selection::Offsets(offsets) => offsets.iter().for_each(|&k| visit(at(k))),
            Selection::Range(a, b) => (*a..*b).for_each(|k| visit(at(k))),
            Selection::All => (0..pred_factor).for_each(visit),
            Selection::WrappedOffsets(offsets) => offsets.iter().for_each(|&k| visit(ring(k))),
            Selection::WrappedRange(a, b) => (*a..*b).for_each(|k| visit(ring(k))),
            Selection::Group(g) => {
                let start = u32::try_from(g.start(i)).unwrap_or(u32::MAX);
                (start..start.saturating_add(g.take)).for_each(visit);
            }
            Selection::Absolute(a, b) => (*a..*b).for_each(|k| visit(u32::try_from(k).unwrap_or(u32::MAX))),
        }
    }
}

impl Groups {
    /// As [`Selection::first_out_of_range`]: group q ends at from + q·size + take − 1, so the
    /// first failing group is the first whose end reaches the predecessor's factor.
    fn first_out_of_range(&self, factor: u32, pred_factor: u32) -> Option<(u32, i64)> {
        let (size, shared) = (u64::from(self.size), u64::from(self.shared));
        let reach = u64::from(self.from) + u64::from(self.take);
        let first_bad_group = match u64::from(pred_factor).checked_sub(reach) {
            None => 0,
            Some(room) => room / size + 1,
        };
        let first_bad = first_bad_group.checked_mul(shared).filter(|&i| i < u64::from(factor))?;
        let i = u32::try_from(first_bad).ok()?;
        let last = self.start(i) + u64::from(self.take) - 1;
        Some((i, i64::try_from(last).unwrap_or(i64::MAX) - i64::from(i)))
    }
}

/// Parses an `index` string. `lookup` finds an initialization by name.
pub(crate) fn parse_text<'a>(text: &str, lookup: impl Fn(&str) -> Option<&'a Literal>) -> Result<Selection, String> {
    if text == "all" {
        return Ok(Selection::All);
    }
    if let Ok(k) = text.parse::<i64>() {
        return Ok(Selection::offset(k));
    }
    if let Some(literal) = lookup(text) {
        return bound(text, Some(literal)).map(Selection::offset);
    }
    let mut first_error = None;
    for (at, _) in text.match_indices('-') {
        let (left, right) = (text[..at].trim(), text[at + 1..].trim());
        if left.is_empty() || right.is_empty() {
            continue;
        }
        match (bound_of(left, &lookup), bound_of(right, &lookup)) {
            (Ok(a), Ok(b)) => return range(a, b),
            (Err(e), _) | (_, Err(e)) => first_error = first_error.or(Some(e)),
        }
    }
    Err(first_error
        .unwrap_or_else(|| r#"it is not an offset, a range "a-b", "all" or the name of an initialization"#.to_owned()))
}

fn range(a: i64, b: i64) -> Result<Selection, String> {
    if b <= a {
        return Err(format!(r#"the range {a}-{b} is empty; write "a-b" with b > a (b is excluded)"#));
    }
    Ok(Selection::Range(a, b))
}

fn bound_of<'a>(text: &str, lookup: &impl Fn(&str) -> Option<&'a Literal>) -> Result<i64, String> {
    match text.parse::<u64>() {
        Ok(v) => i64::try_from(v).map_err(|_| format!("{v} is too large for an index")),
        Err(_) => bound(text, lookup(text)),
    }
}

/// The value of the initialization `name`, which must be a non-negative integer.
fn bound(name: &str, literal: Option<&Literal>) -> Result<i64, String> {
    let literal = literal.ok_or_else(|| {
        format!(r#"{name:?} is neither a non-negative integer nor an initialization; define it in "initializations""#)
    })?;
    let value = literal.as_u64().ok_or_else(|| {
        format!("initialization {name:?} holds a value of type {}, not a non-negative integer", literal.type_name())
    })?;
    i64::try_from(value).map_err(|_| format!("initialization {name:?} holds {value}, too large for an index"))
}
