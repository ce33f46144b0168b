//! Computed initializations evaluated before a graph compiles, for the counts that name one (a
//! Tomii 1.2 factor, `group_size`, `group_by`, range end or network number; README.md, "Computed
//! counts"). The graph module never calls a kernel: the caller hands it an [`Evaluate`] (the
//! engine's initialization code, `engine::evaluate_initializations`), and the compiled graph keeps
//! the values so that the first run takes them instead of computing them again.
//!
//! Nothing here is on the hot path: a run takes the values once, before its first frame.

use std::fmt;
use std::sync::Mutex;

use tomii_types::abi::TOMII_TAG_ISIZE;
use tomii_types::kernel::{Value, ValueRef};

use super::compiled::ComputedInit;
use super::literal::Literal;

/// The computed initializations to evaluate, in file order, with their arguments resolved as the
/// run would resolve them (`ArgSource::Const` indexes `consts`).
pub struct PendingInits<'a> {
    /// The graph's source name, for messages.
    pub source: &'a str,
    pub computed: &'a [ComputedInit],
    pub consts: &'a [Literal],
    /// What `$workers` is: the worker count of the run the graph is compiled for.
    pub workers: u32,
}

/// Why an initialization could not be computed: its name and what its kernel said.
#[derive(Clone, Debug)]
pub struct InitFailure {
    pub init: String,
    pub message: String,
}

/// Computes the pending initializations not in `values` yet (`values[k]` holds the elements of
/// the k-th computed initialization), in file order, element by element, appending them.
pub type Evaluate<'a> = &'a mut dyn FnMut(&PendingInits<'_>, &mut Vec<Vec<Value>>) -> Result<(), InitFailure>;

/// What a count of the graph's shape took from a computed initialization.
#[derive(Clone, Debug, PartialEq)]
pub enum ShapeValue {
    Count(u64),
    Text(String),
}

impl fmt::Display for ShapeValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShapeValue::Count(v) => write!(f, "{v}"),
            ShapeValue::Text(text) => write!(f, "{text:?}"),
        }
    }
}

/// One field of the shape that named a computed initialization.
#[derive(Clone, Debug, PartialEq)]
pub struct ShapeUse {
    /// Position of the initialization among the computed ones.
    pub init: u32,
    /// The field, e.g. `node "fft": factor`.
    pub at: String,
    pub value: ShapeValue,
}

/// The values of the computed initializations made while the graph compiled, kept for the first
/// run, and the fields of the shape that took one.
#[derive(Default)]
pub struct Precomputed {
    /// The worker count they were computed with, and the values; taken by the first run.
    slot: Mutex<Option<(u32, Vec<Vec<Value>>)>>,
    /// Every field of the shape that names a computed initialization, with the value it took.
    pub shape: Vec<ShapeUse>,
}

impl Precomputed {
    pub(crate) fn new(workers: u32, values: Vec<Vec<Value>>, shape: Vec<ShapeUse>) -> Self {
        Precomputed { slot: Mutex::new(Some((workers, values))), shape }
    }

    /// The values made while the graph compiled, if no run has taken them yet and they were made
    /// for `workers` workers (`$workers` may be an argument); a second call returns none.
    pub fn take(&self, workers: u32) -> Option<Vec<Vec<Value>>> {
        let mut slot = self.slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        match slot.as_ref() {
            Some((made_for, _)) if *made_for == workers => slot.take().map(|(_, values)| values),
            _ => None,
        }
    }

    /// Checks that values computed again (a later run of the same compiled graph) still give the
    /// shape the counts it took; an error names the field, the initialization and both values.
    pub fn check(&self, computed: &[ComputedInit], values: &[Vec<Value>]) -> Result<(), String> {
        for shape in &self.shape {
            let init = &computed[shape.init as usize];
            let now = values.get(shape.init as usize).and_then(|v| v.first()).map(describe);
            let same = match (&shape.value, values.get(shape.init as usize).and_then(|v| v.first())) {
                (ShapeValue::Count(count), Some(value)) => count_of(value) == Ok(*count),
                (ShapeValue::Text(text), Some(value)) => matches!(value.view(), ValueRef::Str(s) if s == text),
                (_, None) => false,
            };
            if !same {
                return Err(format!(
                    "{}: initialization {:?} gave {} when the graph compiled and {} in this run; the graph's \
                     shape was fixed by the first value: make the initialization give the same value every time, \
                     or compile the graph again",
                    shape.at,
                    init.name,
                    shape.value,
                    now.unwrap_or_else(|| "nothing".to_owned())
                ));
            }
        }
        Ok(())
    }
}

impl Clone for Precomputed {
    /// A copy of a graph keeps the shape; its runs compute the initializations themselves.
    fn clone(&self) -> Self {
        Precomputed { slot: Mutex::new(None), shape: self.shape.clone() }
    }
}

impl fmt::Debug for Precomputed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kept = self.slot.lock().map(|slot| slot.is_some()).unwrap_or(false);
        f.debug_struct("Precomputed").field("kept", &kept).field("shape", &self.shape).finish()
    }
}

impl PartialEq for Precomputed {
    /// Two graphs of the same shape are equal whether or not a run has taken the values.
    fn eq(&self, other: &Self) -> bool {
        self.shape == other.shape
    }
}

/// The value as a count, as Tomii 1.2 read one (`valid_number_to_usize`): an unsigned integer or
/// a non-negative signed one; a float, an `isize` or a negative number is refused, saying which.
pub(crate) fn count_of(value: &Value) -> Result<u64, String> {
    if value.as_raw().tag == TOMII_TAG_ISIZE {
        return Err(format!("the isize {}", describe(value)));
    }
    match value.view() {
        ValueRef::UInt(v) => Ok(v),
        ValueRef::Int(v) if v >= 0 => Ok(v as u64),
        ValueRef::Int(v) => Err(format!("the negative integer {v}")),
        ValueRef::U128(v) => u64::try_from(v).map_err(|_| format!("the integer {v}, too large")),
        ValueRef::I128(v) => u64::try_from(v).map_err(|_| format!("the integer {v}, negative or too large")),
        _ => Err(describe(value)),
    }
}

/// A value as a message shows it.
pub(crate) fn describe(value: &Value) -> String {
    match value.view() {
        ValueRef::UInt(v) => format!("{v}"),
        ValueRef::Int(v) => format!("{v}"),
        ValueRef::F32(v) => format!("the float {v}"),
        ValueRef::F64(v) => format!("the float {v}"),
        ValueRef::Str(s) => format!("the string {s:?}"),
        ValueRef::None => "no value".to_owned(),
        other => format!("a value {other:?}"),
    }
}
