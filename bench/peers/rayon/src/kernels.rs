//! The kernel DAG file (bench/peers/README.md, "The kernel DAG file"): the tasks of a real
//! workload, each calling a C kernel of the workload's library with constants, initialization
//! handles and its predecessors' results. `Kernels` is the executor's body for it: it keeps each
//! slot's results and releases them per the kernel ABI. Bad input is an error naming the line.

use std::cell::UnsafeCell;
use std::collections::HashMap;
use std::ffi::CString;
use std::sync::Mutex;

use crate::abi::{self, Kernel, TAG_BOOL, TAG_F32, TAG_F64, TAG_LIST, TAG_STR, Value};
use crate::dag::Dag;
use crate::executor::Body;

/// One argument of a call.
enum Arg {
    /// A constant; a string's bytes are held by `_bytes`, which the value borrows.
    Constant { value: Value, _bytes: Box<[u8]> },
    /// The handle computed initialization K returned.
    Init(usize),
    /// The value task J returned this frame.
    Result(u32),
}

struct Task {
    node: CString,
    instance: u32,
    kernel: Kernel,
    args: Vec<Arg>,
}

/// What a task of one slot returned, and for which frame.
struct Cell(UnsafeCell<(u64, Value)>);

// SAFETY: a cell is written only by its task, and read by its successors and by the next write
// of the same task in the slot, which the executor's counters order after that write
// (executor.rs, "Memory ordering").
unsafe impl Sync for Cell {}

/// A workload's tasks, their initializations' values and, per slot, their results.
pub struct Kernels {
    tasks: Vec<Task>,
    inits: Vec<Value>,
    cells: Vec<Vec<Cell>>,
    error: Mutex<Option<String>>,
}

impl Kernels {
    /// Reads the file, loads its library and computes its initializations; returns the body and
    /// the DAG the executor walks (every cost 0).
    pub fn load(text: &str, slots: usize) -> Result<(Kernels, Dag), String> {
        let mut lines = text.lines().enumerate().map(|(k, line)| (k + 1, line));
        let mut next = |what: &str| lines.next().ok_or(format!("the file ends before {what}"));
        let (_, header) = next("the header")?;
        let tasks = match header.split_whitespace().collect::<Vec<_>>()[..] {
            ["tomii-suite-kernels", "1", n] => n.parse::<usize>().map_err(|e| format!("line 1: {e}"))?,
            _ => return Err(format!("line 1: expected `tomii-suite-kernels 1 N`, found {header:?}")),
        };
        let (_, library) = next("the library")?;
        let path = library.strip_prefix("library ").ok_or("line 2: expected `library PATH`")?;
        let kernels = abi::load(path)?;
        let (at, count) = next("the initializations")?;
        let count = match count.split_whitespace().collect::<Vec<_>>()[..] {
            ["inits", k] => k.parse::<usize>().map_err(|e| format!("line {at}: {e}"))?,
            _ => return Err(format!("line {at}: expected `inits K`")),
        };
        let mut body = Kernels { tasks: Vec::new(), inits: Vec::new(), cells: Vec::new(), error: Mutex::new(None) };
        for _ in 0..count {
            let (at, line) = next("an initialization")?;
            let value = body.initialize(line, &kernels).map_err(|e| format!("line {at}: {e}"))?;
            body.inits.push(value);
        }
        let mut preds = Vec::with_capacity(tasks);
        for t in 0..tasks {
            let (at, line) = next(&format!("task {t}"))?;
            let (task, waits) = body.task(t, line, &kernels).map_err(|e| format!("line {at} (task {t}): {e}"))?;
            body.tasks.push(task);
            preds.push(waits);
        }
        body.cells =
            (0..slots).map(|_| (0..tasks).map(|_| Cell(UnsafeCell::new((0, Value::NONE)))).collect()).collect();
        Ok((body, Dag::from_preds(vec![0; tasks], &preds)))
    }

    /// `NAME KERNEL NARGS ARG...`: calls the kernel with constants (instance, frame, slot 0).
    fn initialize(&self, line: &str, kernels: &HashMap<String, Kernel>) -> Result<Value, String> {
        let mut words = line.split_whitespace();
        let name = CString::new(words.next().ok_or("empty")?).map_err(|e| e.to_string())?;
        let kernel = lookup(kernels, words.next())?;
        let args = self.args(&mut words, u32::MAX)?;
        let values: Vec<Value> = args
            .iter()
            .map(|arg| match arg {
                Arg::Constant { value, .. } => Ok(*value),
                _ => Err("an initialization takes constants only".to_string()),
            })
            .collect::<Result<_, _>>()?;
        kernel.call(&values, 0, 0, 0, 0, &name).map_err(|e| format!("initialization {name:?}: {e}"))
    }

    /// `NODE INSTANCE KERNEL NPREDS PRED... NARGS ARG...`: the task and its predecessors.
    fn task(&self, t: usize, line: &str, kernels: &HashMap<String, Kernel>) -> Result<(Task, Vec<u32>), String> {
        let mut words = line.split_whitespace();
        let node = CString::new(words.next().ok_or("empty")?).map_err(|e| e.to_string())?;
        let instance = number(words.next(), "the instance")?;
        let kernel = lookup(kernels, words.next())?;
        let npreds: usize = number(words.next(), "the predecessor count")?;
        let preds = (0..npreds).map(|_| number(words.next(), "a predecessor")).collect::<Result<Vec<u32>, _>>()?;
        if preds.iter().any(|&p| p as usize >= t) {
            return Err("a predecessor is not an earlier task".into());
        }
        let args = self.args(&mut words, t as u32)?;
        if args.iter().any(|arg| matches!(arg, Arg::Result(j) if !preds.contains(j))) {
            return Err("a result argument of a task it does not wait for".into());
        }
        Ok((Task { node, instance, kernel, args }, preds))
    }

    /// `NARGS ARG...`; a `res=J` must name a task before `task`.
    fn args<'w>(&self, words: &mut impl Iterator<Item = &'w str>, task: u32) -> Result<Vec<Arg>, String> {
        let count: usize = number(words.next(), "the argument count")?;
        let args = (0..count).map(|_| self.arg(words.next().ok_or("an argument is missing")?, task)).collect();
        if words.next().is_some() {
            return Err("more fields than the counts announce".into());
        }
        args
    }

    fn arg(&self, word: &str, task: u32) -> Result<Arg, String> {
        let (kind, text) = word.split_once('=').ok_or(format!("argument {word:?} is not TYPE=VALUE"))?;
        let bad = |e: &dyn std::fmt::Display| format!("argument {word:?}: {e}");
        let int_tag = ["i8", "i16", "i32", "i64"].iter().position(|&k| k == kind).map(|k| abi::TAG_I8 + k as u32);
        let uint_tag = ["u8", "u16", "u32", "u64"].iter().position(|&k| k == kind).map(|k| abi::TAG_U8 + k as u32);
        let constant = |value| Ok(Arg::Constant { value, _bytes: Box::default() });
        match kind {
            "init" => {
                let k: usize = text.parse().map_err(|e| bad(&e))?;
                if k >= self.inits.len() {
                    return Err(bad(&"no such initialization"));
                }
                Ok(Arg::Init(k))
            }
            "res" => match text.parse::<u32>() {
                Ok(j) if j < task => Ok(Arg::Result(j)),
                _ => Err(bad(&"not an earlier task")),
            },
            "bool" => match text {
                "0" | "1" => constant(Value { tag: TAG_BOOL, elem: 0, payload: abi::Payload { b: text == "1" } }),
                _ => Err(bad(&"not 0 or 1")),
            },
            "isize" => constant(Value::signed(abi::TAG_ISIZE, text.parse().map_err(|e| bad(&e))?)),
            "usize" => constant(Value::unsigned(abi::TAG_USIZE, text.parse().map_err(|e| bad(&e))?)),
            "f32" => constant(Value::float(TAG_F32, text.parse().map_err(|e| bad(&e))?)),
            "f64" => constant(Value::float(TAG_F64, text.parse().map_err(|e| bad(&e))?)),
            "str" => {
                let bytes = hex(text).ok_or(bad(&"not hexadecimal"))?.into_boxed_slice();
                Ok(Arg::Constant { value: Value::borrowed(TAG_STR, bytes.as_ptr().cast(), bytes.len()), _bytes: bytes })
            }
            _ if int_tag.is_some() => constant(Value::signed(int_tag.unwrap_or(0), text.parse().map_err(|e| bad(&e))?)),
            _ if uint_tag.is_some() => {
                constant(Value::unsigned(uint_tag.unwrap_or(0), text.parse().map_err(|e| bad(&e))?))
            }
            _ => Err(bad(&"unknown type")),
        }
    }

    /// The first failure of the run, if any.
    pub fn error(&self) -> Option<String> {
        self.error.lock().map(|e| e.clone()).unwrap_or_else(|e| e.into_inner().clone())
    }

    /// `[[node, instance, value], ...]` for every task in `sinks`, from the slot that ran `frame`.
    pub fn sink_json(&mut self, sinks: &[u32], frame: u64) -> Result<String, String> {
        let mut rows = Vec::new();
        for &t in sinks {
            let task = &self.tasks[t as usize];
            let found = self.cells.iter_mut().map(|slot| slot[t as usize].0.get_mut()).find(|(f, _)| *f == frame);
            let (_, value) = found.ok_or(format!("no slot holds frame {frame} of task {t}"))?;
            rows.push(format!("[{:?}, {}, {}]", task.node.to_string_lossy(), task.instance, value.json()?));
        }
        Ok(format!("[{}]", rows.join(", ")))
    }
}

impl Body for Kernels {
    fn run(&self, slot: usize, frame: u64, task: u32) -> bool {
        let spec = &self.tasks[task as usize];
        let cells = &self.cells[slot];
        // SAFETY: the predecessors' cells were written before this task became ready, and no one
        // writes them until this frame ends (Cell's Sync).
        let result = |j: u32| unsafe { (*cells[j as usize].0.get()).1 };
        let mut args: Vec<Value> = spec
            .args
            .iter()
            .map(|arg| match *arg {
                Arg::Constant { value, .. } => value,
                Arg::Init(k) => self.inits[k],
                Arg::Result(j) => result(j),
            })
            .collect();
        let list: Vec<Value>;
        if spec.kernel.variadic {
            let trailing = spec.args.iter().rev().take_while(|arg| matches!(arg, Arg::Result(_))).count();
            list = args.split_off(args.len() - trailing);
            args.push(Value::borrowed(TAG_LIST, list.as_ptr().cast(), list.len()));
        }
        let worker = rayon::current_thread_index().unwrap_or(0) as u32;
        // SAFETY: this task alone writes its cell; its readers of the frame before have finished.
        let cell = unsafe { &mut *cells[task as usize].0.get() };
        cell.1.release();
        match spec.kernel.call(&args, worker, frame, slot as u32, spec.instance, &spec.node) {
            Ok(value) => {
                *cell = (frame, value);
                true
            }
            Err(message) => {
                let text = format!("node {} instance {}: {message}", spec.node.to_string_lossy(), spec.instance);
                self.error.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(text);
                false
            }
        }
    }
}

impl Drop for Kernels {
    /// Releases every result, then the initializations (the handles the results may point into).
    fn drop(&mut self) {
        self.cells.iter_mut().flatten().for_each(|cell| cell.0.get_mut().1.release());
        self.inits.iter_mut().for_each(Value::release);
    }
}

fn lookup(kernels: &HashMap<String, Kernel>, name: Option<&str>) -> Result<Kernel, String> {
    let name = name.ok_or("the kernel name is missing")?;
    kernels.get(name).copied().ok_or(format!("the library has no kernel {name:?}"))
}

fn number<T: std::str::FromStr>(word: Option<&str>, what: &str) -> Result<T, String> {
    word.and_then(|w| w.parse().ok()).ok_or(format!("{what} is missing or not a number"))
}

fn hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|k| u8::from_str_radix(text.get(k..k + 2)?, 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::hex;

    #[test]
    fn decodes_hex_strings() {
        assert_eq!(hex("414243"), Some(b"ABC".to_vec()));
        assert_eq!(hex(""), Some(vec![]));
        assert_eq!(hex("4"), None);
        assert_eq!(hex("zz"), None);
    }
}
