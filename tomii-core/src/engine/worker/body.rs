//! A task's body: its condition (if any), then its kernel, once or `iterations` times (a loop).
//! The semantics are those of tomii-core/src/graph/README.md, "Conditions" and "Loops".
//!
//! Arguments are borrowed into per-worker buffers sized before the run: nothing here allocates
//! unless a kernel fails or a condition cannot be compared.

use std::cmp::Ordering;

use tomii_types::abi::{TOMII_TAG_LIST, TOMII_TAG_USIZE, TomiiBuffer, TomiiPayload, TomiiValue};
use tomii_types::kernel::{Value, ValueRef};

use std::ffi::c_char;

use super::Engine;
use super::local::Local;
use super::records::{Record, SIMPLE};
use crate::engine::RunError;
use crate::graph::{ArgSource, Condition, Literal};
use crate::plugin::{CallSite as Context, Kernel};

/// What the hot path needs to run one node's tasks, in one place.
#[derive(Clone, Copy)]
pub(super) struct NodeRun {
    pub(super) kernel: Kernel,
    /// The kernel takes the trailing results as one LIST (`TOMII_KERNEL_VARIADIC`).
    pub(super) variadic: bool,
    /// No condition, no loop, not variadic: gather the arguments and call the kernel once.
    pub(super) simple: bool,
    /// `group_size` > 1: a task runs several instances.
    pub(super) grouped: bool,
}

/// What a kernel's call context says of where the call comes from: the node (its id and
/// NUL-terminated name) and the instance's index within it.
#[derive(Clone, Copy)]
struct CallSite {
    node: u32,
    node_name: *const c_char,
    index: u32,
}

/// A node's condition, bound to its function.
pub(super) struct BoundCondition {
    pub(super) function: Kernel,
    pub(super) spec: Condition,
}

impl Engine<'_> {
    /// Runs the body of `instance`, whose record is `record`: `None` when its condition does not
    /// hold (the instance is skipped), else the result of its kernel's last call, owned by the
    /// caller.
    #[inline(always)]
    pub(super) fn run_body(
        &self,
        local: &mut Local,
        record: &Record,
        slot: u32,
        instance: u32,
        frame: u64,
    ) -> Result<Option<TomiiValue>, RunError> {
        if record.flags & SIMPLE != 0 {
            self.gather(local, slot, instance, self.plan.records.args(record));
            // A simple body's kernel is not variadic, its only flag (`NodeRun::simple`).
            let kernel = Kernel { func: record.kernel, data: record.kernel_data, flags: 0 };
            let site = CallSite { node: record.node, node_name: record.node_name, index: record.index };
            return self.call_named(local, kernel, None, site, slot, instance, frame).map(Some);
        }
        let node = record.node;
        self.run_general_body(local, self.plan.runs[node as usize], node, slot, instance, frame)
    }

    /// `run_body` for nodes with a condition, a loop or a variadic kernel.
    fn run_general_body(
        &self,
        local: &mut Local,
        run: NodeRun,
        node: u32,
        slot: u32,
        instance: u32,
        frame: u64,
    ) -> Result<Option<TomiiValue>, RunError> {
        if self.plan.abandonable && self.shared.table.slot(slot).abandoned.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(None); // its source gave up on the frame
        }
        if let Some(condition) = &self.plan.conditions[node as usize]
            && !self.condition_holds(local, condition, node, slot, instance, frame)?
        {
            return Ok(None);
        }
        self.gather(local, slot, instance, self.plan.graph.args_of(instance));
        if run.variadic {
            self.gather_trailing_results(local, instance);
        }
        let kernel = run.kernel;
        let iterations = self.plan.graph.nodes[node as usize].iterations;
        let base = local.args.len();
        self.append(local, slot, instance, self.plan.graph.loop_args_of(instance));
        let mut result = self.call(local, kernel, node, slot, instance, frame)?;
        for _ in 1..iterations {
            local.args.truncate(base);
            local.args.push(result);
            let next = self.call(local, kernel, node, slot, instance, frame);
            // SAFETY: `result` was owned and the call that borrowed it has returned.
            drop(unsafe { Value::from_raw(result) });
            result = next?;
        }
        Ok(Some(result))
    }

    /// Calls the condition's function and compares its result with the condition's value.
    fn condition_holds(
        &self,
        local: &mut Local,
        condition: &BoundCondition,
        node: u32,
        slot: u32,
        instance: u32,
        frame: u64,
    ) -> Result<bool, RunError> {
        self.gather(local, slot, instance, self.plan.graph.condition_args_of(instance));
        let site = self.call_site(node, instance);
        let raw =
            self.call_named(local, condition.function, Some(&condition.spec.function), site, slot, instance, frame)?;
        // SAFETY: the function handed over ownership of its result.
        let value = unsafe { Value::from_raw(raw) };
        let ordering = compare(&value.view(), &condition.spec.value).map_err(|why| {
            let meta = &self.plan.graph.nodes[node as usize];
            RunError::Kernel {
                node: meta.name.clone(),
                kernel: condition.spec.function.clone(),
                instance: self.plan.graph.inst_index[instance as usize],
                frame,
                message: format!(
                    "the condition's function {why}; make it return a {}",
                    condition.spec.value.type_name()
                ),
            }
        })?;
        Ok(condition.spec.op.holds(ordering))
    }

    /// Fills `local.args` with `sources`, borrowed (results and constants).
    #[inline(always)]
    fn gather(&self, local: &mut Local, slot: u32, instance: u32, sources: &[ArgSource]) {
        local.args.clear();
        self.append(local, slot, instance, sources);
    }

    /// Appends `sources` to `local.args`, borrowed.
    #[inline(always)]
    fn append(&self, local: &mut Local, slot: u32, instance: u32, sources: &[ArgSource]) {
        for source in sources {
            local.args.push(match *source {
                // SAFETY: the predecessor completed in this generation (we are its successor and
                // were made ready by its arrival).
                ArgSource::Result(pred) => unsafe { self.shared.table.result(slot, pred) },
                ArgSource::Const(index) => *self.plan.consts[index as usize].as_raw(),
                ArgSource::Index => usize_value(u64::from(self.plan.graph.inst_index[instance as usize])),
                ArgSource::Workers => usize_value(u64::from(self.plan.config.workers)),
                ArgSource::Computed(k) => {
                    let values = &self.plan.computed[k as usize];
                    let element =
                        if values.len() == 1 { 0 } else { self.plan.graph.inst_index[instance as usize] as usize };
                    *values[element].as_raw()
                }
            });
        }
    }

    /// For a variadic kernel: replaces the trailing result arguments by one LIST of them, borrowed
    /// from the worker's list buffer (sized before the run, so this never allocates).
    #[inline]
    fn gather_trailing_results(&self, local: &mut Local, instance: u32) {
        let sources = self.plan.graph.args_of(instance);
        let trailing = sources.iter().rev().take_while(|s| matches!(s, ArgSource::Result(_))).count();
        let first = local.args.len() - trailing;
        local.list.clear();
        local.list.extend_from_slice(&local.args[first..]);
        local.args.truncate(first);
        let buf = TomiiBuffer {
            data: local.list.as_mut_ptr().cast(),
            len: trailing,
            ctx: std::ptr::null_mut(),
            release: None,
        };
        local.args.push(TomiiValue { tag: TOMII_TAG_LIST, elem: 0, payload: TomiiPayload { buf } });
    }

    /// Calls the node's kernel with `local.args`.
    #[inline(always)]
    fn call(
        &self,
        local: &mut Local,
        kernel: Kernel,
        node: u32,
        slot: u32,
        instance: u32,
        frame: u64,
    ) -> Result<TomiiValue, RunError> {
        self.call_named(local, kernel, None, self.call_site(node, instance), slot, instance, frame)
    }

    /// Where a call of `instance` of `node` comes from, as its call context says.
    fn call_site(&self, node: u32, instance: u32) -> CallSite {
        CallSite {
            node,
            node_name: self.plan.records.node_name(node).as_ptr(),
            index: self.plan.graph.inst_index[instance as usize],
        }
    }

    /// Calls `kernel` (named `name` in errors, the node's kernel when `None`) with `local.args`; an
    /// error status becomes a `RunError::Kernel`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn call_named(
        &self,
        local: &mut Local,
        kernel: Kernel,
        name: Option<&str>,
        site: CallSite,
        slot: u32,
        instance: u32,
        frame: u64,
    ) -> Result<TomiiValue, RunError> {
        let context = Context { frame, slot, index: site.index, node: site.node_name };
        let subject = u64::from(slot) << 32 | u64::from(instance);
        let mut out = TomiiValue::NONE;
        let status = local.kernels.call(kernel, &local.args, context, subject, &mut out);
        if status.ok() {
            return Ok(out);
        }
        let message = local.kernels.failure(out, status);
        Err(self.kernel_error(name, site.node, instance, frame, message))
    }

    /// A kernel's failure (`message`), named: the kernel (`name`, the node's kernel when `None`),
    /// the node, the instance and the frame.
    #[cold]
    fn kernel_error(&self, name: Option<&str>, node: u32, instance: u32, frame: u64, message: String) -> RunError {
        let name = name.unwrap_or(&self.plan.graph.nodes[node as usize].function);
        RunError::Kernel {
            node: self.plan.graph.nodes[node as usize].name.clone(),
            kernel: name.to_owned(),
            instance: self.plan.graph.inst_index[instance as usize],
            frame,
            message,
        }
    }
}

/// A `usize` scalar (no buffer, nothing to release).
#[inline]
pub(super) fn usize_value(value: u64) -> TomiiValue {
    TomiiValue { tag: TOMII_TAG_USIZE, elem: 0, payload: TomiiPayload { u: value } }
}

/// A value as a condition compares it.
#[derive(Debug, PartialEq)]
enum Key<'a> {
    Int(Integer),
    Float(f64),
    Text(&'a str),
    Bool(bool),
    Char(char),
}

/// An integer of any width, ordered exactly: every negative below every non-negative.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Integer {
    Negative(i128),
    NonNegative(u128),
}

impl Integer {
    fn signed(v: i128) -> Integer {
        u128::try_from(v).map_or(Integer::Negative(v), Integer::NonNegative)
    }

    fn as_f64(self) -> f64 {
        match self {
            Integer::Negative(v) => v as f64,
            Integer::NonNegative(v) => v as f64,
        }
    }
}

/// How the function's result `got` compares with the condition's value `want`; an error says
/// what the function returned when the two cannot be compared.
fn compare(got: &ValueRef<'_>, want: &Literal) -> Result<Ordering, String> {
    let (Some(got_key), Some(want_key)) = (value_key(got), literal_key(want)) else {
        return Err(format!("returned {}, which cannot be compared with {}", describe(got), want.type_name()));
    };
    let ordering = match (got_key, want_key) {
        (Key::Int(a), Key::Int(b)) => Some(a.cmp(&b)),
        (Key::Int(a), Key::Float(b)) => a.as_f64().partial_cmp(&b),
        (Key::Float(a), Key::Int(b)) => a.partial_cmp(&b.as_f64()),
        (Key::Float(a), Key::Float(b)) => a.partial_cmp(&b),
        (Key::Text(a), Key::Text(b)) => Some(a.cmp(b)),
        (Key::Bool(a), Key::Bool(b)) => Some(a.cmp(&b)),
        (Key::Char(a), Key::Char(b)) => Some(a.cmp(&b)),
        _ => return Err(format!("returned {}, which cannot be compared with {}", describe(got), want.type_name())),
    };
    ordering.ok_or_else(|| "returned NaN, which compares with nothing".to_owned())
}

fn value_key<'a>(value: &ValueRef<'a>) -> Option<Key<'a>> {
    Some(match *value {
        ValueRef::Int(v) => Key::Int(Integer::signed(v.into())),
        ValueRef::UInt(v) => Key::Int(Integer::NonNegative(v.into())),
        ValueRef::I128(v) => Key::Int(Integer::signed(v)),
        ValueRef::U128(v) => Key::Int(Integer::NonNegative(v)),
        ValueRef::F32(v) => Key::Float(f64::from(v)),
        ValueRef::F64(v) => Key::Float(v),
        ValueRef::Str(s) => Key::Text(s),
        ValueRef::Bool(b) => Key::Bool(b),
        ValueRef::Char(c) => Key::Char(c),
        _ => return None,
    })
}

fn literal_key(literal: &Literal) -> Option<Key<'_>> {
    Some(match *literal {
        Literal::I8(v) => Key::Int(Integer::signed(v.into())),
        Literal::I16(v) => Key::Int(Integer::signed(v.into())),
        Literal::I32(v) => Key::Int(Integer::signed(v.into())),
        Literal::I64(v) | Literal::Isize(v) => Key::Int(Integer::signed(v.into())),
        Literal::I128(v) => Key::Int(Integer::signed(v)),
        Literal::U8(v) => Key::Int(Integer::NonNegative(v.into())),
        Literal::U16(v) => Key::Int(Integer::NonNegative(v.into())),
        Literal::U32(v) => Key::Int(Integer::NonNegative(v.into())),
        Literal::U64(v) | Literal::Usize(v) => Key::Int(Integer::NonNegative(v.into())),
        Literal::U128(v) => Key::Int(Integer::NonNegative(v)),
        Literal::F32(v) => Key::Float(v.into()),
        Literal::F64(v) => Key::Float(v),
        Literal::Str(ref s) => Key::Text(s),
        Literal::Bool(b) => Key::Bool(b),
        Literal::Char(c) => Key::Char(c),
        _ => return None,
    })
}

/// What a returned value is, for messages.
fn describe(value: &ValueRef<'_>) -> String {
    match value {
        ValueRef::None => "nothing".to_owned(),
        other => format!("{other:?}").split('(').next().unwrap_or("a value").to_lowercase(),
    }
}

/// Whether a condition's value can be compared at all (checked when the run starts).
pub(super) fn comparable(literal: &Literal) -> bool {
    literal_key(literal).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering::{Equal, Greater, Less};

    #[test]
    fn compares_numbers_across_widths_and_kinds() {
        assert_eq!(compare(&ValueRef::UInt(3), &Literal::Usize(3)), Ok(Equal));
        assert_eq!(compare(&ValueRef::Int(-1), &Literal::U8(0)), Ok(Less));
        assert_eq!(compare(&ValueRef::F64(2.5), &Literal::I32(2)), Ok(Greater));
        assert_eq!(compare(&ValueRef::Str("b"), &Literal::Str("a".into())), Ok(Greater));
        assert!(
            compare(&ValueRef::Str("1"), &Literal::Usize(1)).unwrap_err().contains("cannot be compared with usize")
        );
        assert!(compare(&ValueRef::F64(f64::NAN), &Literal::F64(1.0)).is_err());
    }

    #[test]
    fn compares_128_bit_integers_exactly() {
        let big = u128::MAX - 1;
        assert_eq!(compare(&ValueRef::U128(big), &Literal::U128(u128::MAX)), Ok(Less));
        assert_eq!(compare(&ValueRef::U128(u128::MAX), &Literal::U128(u128::MAX)), Ok(Equal));
        assert_eq!(compare(&ValueRef::I128(i128::MIN), &Literal::U128(0)), Ok(Less));
        assert_eq!(compare(&ValueRef::Int(-1), &Literal::U128(u128::MAX)), Ok(Less));
        assert_eq!(compare(&ValueRef::U128(u128::from(u64::MAX) + 1), &Literal::U64(u64::MAX)), Ok(Greater));
    }
}
