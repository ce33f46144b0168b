//! Scheduler plugins: finding them by name, loading and checking them, and calling them.
//!
//! `SchedulerPlugin` is a checked, loaded library (or a checked table of this process, such as the
//! Python binding's bridge: `in_process`); `SchedulerInstance` is one created scheduler
//! state for one run, with the run's call watchdog (`watchdog.rs`): a thread that calls it as a
//! `SchedulerCaller` (the `*_by` methods) has each call marked, so that the host finds one that
//! does not return. The instance's `push`/`pop` are on the hot path: no allocation or formatting
//! unless the scheduler reports a failure.
//!
//! # Memory ordering
//! `abandoned` is Relaxed: it only stops later calls of this thread and of threads that see it;
//! a call made before the store reaches them is one a broken scheduler could have received anyway.
//! A keep gate's counters are loaded Acquire, `taken` first (`KeepGate::is_open`): counters that
//! only grow, with `taken <= queued` at every moment, so equal loads mean that nothing waited
//! when `taken` was read.

use std::ffi::{CString, c_void};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use abi_stable::library::lib_header_from_path;
use tomii_types::abi::{
    SCHEDULER_ENTRY_SYMBOL, TOMII_KEEP_NONE, TOMII_OK, TOMII_SCHED_ABI_MAJOR, TOMII_SCHED_ABI_MINOR,
    TOMII_SCHED_KEEP_BEFORE_BATCH, TOMII_SCHED_NEEDS_TIMING, TOMII_SCHED_POP_HANDLES, TOMII_SCHED_SERIAL,
    TomiiErrorBuf, TomiiKeepGate, TomiiKnob, TomiiNodeSummary, TomiiSchedInit, TomiiSchedulerVtable, TomiiTask,
};
use tomii_types::stable::{LIB_HEADER_SYMBOL, SchedulerModuleRef};

use super::PluginError;
use super::checked::Checked;
use super::library::{OpenLibrary, absolute, static_text};
use super::watchdog::{Call, MarkCell, Watchdog};

/// The most bytes of a scheduler's `stats` text that are read (a claim of more is not allocated).
pub const MAX_STATS_BYTES: usize = 1 << 20;
/// Size of the v1.0 vtable: every plugin's table must be at least this large. Frozen: the header
/// and the 12 function pointers of v1.0, whatever later minors append.
const V1_VTABLE_SIZE: u32 = (size_of::<tomii_types::abi::TomiiAbiHeader>() + 12 * size_of::<usize>()) as u32;

/// The `push_keep` callback of ABI v1.2.
type PushKeepFn = unsafe extern "C" fn(*mut c_void, u32, *const TomiiTask, usize, *mut usize) -> i32;
/// The `keep_gate` callback of ABI v1.4.
type KeepGateFn = unsafe extern "C" fn(*mut c_void, u32, *mut TomiiKeepGate);

/// A loaded scheduler library whose table passed every check.
pub struct SchedulerPlugin {
    pub name: &'static str,
    pub path: PathBuf,
    /// Whether the full type layout was verified through `abi_stable` (Rust plugins).
    pub layout_checked: bool,
    vtable: &'static TomiiSchedulerVtable,
}

/// One of a scheduler's own options, as its `describe_knobs` hook describes it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SchedulerKnob {
    pub name: &'static str,
    /// "int", "float", "bool", "choice" or "string".
    pub kind: &'static str,
    pub default: &'static str,
    /// "1..64" for numbers, "a|b|c" for choices, "" when free.
    pub domain: &'static str,
    pub description: &'static str,
}

/// The schedulers on the search path, by name, each from the first directory that has it.
pub fn installed_schedulers() -> Vec<(String, PathBuf)> {
    let prefix = format!("{}tomii_sched_", std::env::consts::DLL_PREFIX);
    let mut found: Vec<(String, PathBuf)> = Vec::new();
    for dir in scheduler_search_path() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut here: Vec<(String, PathBuf)> = entries
            .flatten()
            .filter_map(|entry| {
                let file = entry.file_name().into_string().ok()?;
                let stem = file.strip_prefix(&prefix)?.strip_suffix(std::env::consts::DLL_SUFFIX)?;
                Some((stem.replace('_', "-"), entry.path()))
            })
            .collect();
        here.sort();
        for (name, path) in here {
            if !found.iter().any(|(known, _)| *known == name) {
                found.push((name, path));
            }
        }
    }
    found
}

/// The file name a scheduler called `name` is built as: `libtomii_sched_<name>.so` on Linux.
pub fn scheduler_file_name(name: &str) -> String {
    let stem = format!("tomii_sched_{}", name.replace('-', "_"));
    format!("{}{stem}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX)
}

/// Where `--scheduler NAME` looks, in order: each directory of `$TOMII_SCHEDULER_PATH`, then the
/// directory of the running executable and its parent (so `target/<profile>/` is found both from
/// the `tomii` binary and from test binaries in `target/<profile>/deps/`).
pub fn scheduler_search_path() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("TOMII_SCHEDULER_PATH")
        .map(|paths| std::env::split_paths(&paths).collect())
        .unwrap_or_default();
    if let Some(exe_dir) = std::env::current_exe().ok().and_then(|exe| exe.parent().map(Path::to_path_buf)) {
        if let Some(parent) = exe_dir.parent() {
            dirs.push(exe_dir.clone());
            dirs.push(parent.to_path_buf());
        } else {
            dirs.push(exe_dir);
        }
    }
    dirs
}

impl SchedulerPlugin {
    /// Finds `libtomii_sched_<name>.so` on the search path and loads it.
    pub fn find(name: &str) -> Result<SchedulerPlugin, PluginError> {
        let file = scheduler_file_name(name);
        // A library named with the name as it is (`libtomii_sched_c-lifo.so`) is found too: that
        // is how `installed_schedulers` lists it.
        let exact = format!("{}tomii_sched_{name}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX);
        let dirs = scheduler_search_path();
        let candidates = dirs.iter().flat_map(|dir| [dir.join(&file), dir.join(&exact)]);
        match candidates.into_iter().find(|path| path.is_file()) {
            Some(path) => Self::load(&path),
            None => Err(PluginError::SchedulerNotFound {
                name: name.to_owned(),
                file,
                searched: dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", "),
            }),
        }
    }

    /// The replay scheduler of `tomii replay` (`libtomii_replay.so`, schedulers/replay),
    /// found where schedulers are.
    pub fn replay() -> Result<SchedulerPlugin, PluginError> {
        let file = format!("{}tomii_replay{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX);
        let dirs = scheduler_search_path();
        match dirs.iter().map(|dir| dir.join(&file)).find(|path| path.is_file()) {
            Some(path) => Self::load(&path),
            None => Err(PluginError::SchedulerNotFound {
                name: "replay".to_owned(),
                file,
                searched: dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", "),
            }),
        }
    }

    /// Loads the scheduler plugin at `path` and checks its table, once per process for each file
    /// (`checked.rs`): a later load of the same file is a look-up.
    pub fn load(path: &Path) -> Result<SchedulerPlugin, PluginError> {
        static CHECKED: Checked<(&'static str, bool, &'static TomiiSchedulerVtable)> = Checked::new();
        let (name, layout_checked, vtable) = CHECKED.get_or_check(path, || {
            let plugin = Self::load_and_check(path)?;
            Ok((plugin.name, plugin.layout_checked, plugin.vtable))
        })?;
        Ok(SchedulerPlugin { name, path: path.to_owned(), layout_checked, vtable })
    }

    /// Loads the scheduler plugin at `path` and checks its table: every check, every time, past
    /// the process's record of checked files (what [`load`](Self::load) costs the first time; the
    /// start-up benchmarks measure it).
    pub fn load_and_check(path: &Path) -> Result<SchedulerPlugin, PluginError> {
        let library = OpenLibrary::open(path)?;
        let hint = "is it a Tomii scheduler? Rust schedulers call tomii_types::export_scheduler!, C ones define it";
        // SAFETY: `tomii_scheduler_v1` has the signature `fn() -> *const TomiiSchedulerVtable` by the ABI.
        let table = unsafe { library.entry_table::<TomiiSchedulerVtable>(path, SCHEDULER_ENTRY_SYMBOL, hint)? };
        // SAFETY: the header is the fixed prefix every version shares, and the table is static.
        let header = unsafe { *table.cast::<tomii_types::abi::TomiiAbiHeader>() };
        check_header(path, &header)?;
        // SAFETY: struct_size covers the whole v1 table; it is static data of the library.
        let vtable: &'static TomiiSchedulerVtable = unsafe { &*table };
        // SAFETY: the name is a static string of the library.
        let name = unsafe { static_text(header.name, "the scheduler's name") }
            .map_err(|what| PluginError::Invalid { path: path.to_owned(), what })?;
        check_callbacks(path, name, vtable)?;
        let layout_checked = match check_layout(path, &library) {
            // A Rust plugin built against an older minor describes the shorter table it was built
            // with, which `abi_stable` does not take for today's: the versioning rules promise it
            // loads, so its table is checked at the C level, as a C plugin's is.
            Err(PluginError::Layout { .. }) if header.abi_minor < TOMII_SCHED_ABI_MINOR => false,
            checked => checked?,
        };
        Ok(SchedulerPlugin { name, path: path.to_owned(), layout_checked, vtable })
    }

    /// A scheduler whose table lives in this process rather than in a library: a front end's own
    /// bridge (the Python binding's, to policies written in Python). Its table passes the checks
    /// a loaded one does (version, size, required callbacks, flags), but the `abi_stable` layout
    /// comparison, which needs a library; `name` is what reports and errors call it, `origin`
    /// where it comes from (the report's `scheduler.path`).
    pub fn in_process(
        name: &'static str,
        origin: PathBuf,
        vtable: &'static TomiiSchedulerVtable,
    ) -> Result<SchedulerPlugin, PluginError> {
        check_header(&origin, &vtable.header)?;
        check_callbacks(&origin, name, vtable)?;
        Ok(SchedulerPlugin { name, path: origin, layout_checked: false, vtable })
    }

    pub fn flags(&self) -> u32 {
        self.vtable.header.flags
    }

    /// Whether the table has `push_keep` (v1.2): the scheduler may keep a pushed task for the
    /// pushing worker.
    pub fn keeps(&self) -> bool {
        self.push_keep().is_some()
    }

    /// The table's `push_keep` (v1.2), if its `struct_size` covers the field and it is set.
    fn push_keep(&self) -> Option<PushKeepFn> {
        covers(self.vtable, std::mem::offset_of!(TomiiSchedulerVtable, push_keep)).then_some(self.vtable.push_keep)?
    }

    /// The table's `keep_gate` (v1.4), if its `struct_size` covers the field and it is set.
    fn keep_gate(&self) -> Option<KeepGateFn> {
        covers(self.vtable, std::mem::offset_of!(TomiiSchedulerVtable, keep_gate)).then_some(self.vtable.keep_gate)?
    }

    /// The scheduler's own options, from its `describe_knobs` hook (empty without one).
    pub fn knobs(&self) -> Result<Vec<SchedulerKnob>, PluginError> {
        let Some(describe) = self.vtable.describe_knobs else { return Ok(Vec::new()) };
        let mut count = 0usize;
        // SAFETY: the hook takes a count pointer and returns a static array of that many entries.
        let table = unsafe { describe(&mut count) };
        if count == 0 {
            return Ok(Vec::new());
        }
        let invalid = |what: String| PluginError::Invalid { path: self.path.clone(), what };
        if table.is_null() {
            return Err(invalid(format!("describe_knobs reported {count} options but returned NULL")));
        }
        // SAFETY: `count` static entries, per the ABI.
        let entries = unsafe { std::slice::from_raw_parts(table, count) };
        entries
            .iter()
            .enumerate()
            .map(|(i, knob)| {
                // SAFETY: each field is a static NUL-terminated string of the library.
                let field = |ptr, what: &str| unsafe { static_text(ptr, &format!("option #{i}'s {what}")) };
                Ok(SchedulerKnob {
                    name: field(knob.name, "name").map_err(invalid)?,
                    kind: field(knob.kind, "kind").map_err(invalid)?,
                    default: field(knob.default_value, "default").map_err(invalid)?,
                    domain: field(knob.domain, "domain").map_err(invalid)?,
                    description: field(knob.description, "description").map_err(invalid)?,
                })
            })
            .collect()
    }

    /// Whether a task the scheduler keeps may run before the rest of its worker's last pop
    /// (`TOMII_SCHED_KEEP_BEFORE_BATCH`, v1.4).
    pub fn keeps_before_batch(&self) -> bool {
        self.flags() & TOMII_SCHED_KEEP_BEFORE_BATCH != 0
    }

    /// Whether the scheduler reads `ready_ns`/`cost_ns`, so the host must measure them.
    pub fn needs_timing(&self) -> bool {
        self.flags() & TOMII_SCHED_NEEDS_TIMING != 0
    }
}

/// Whether the table's `struct_size` covers the callback at `offset` (an optional field appended
/// after v1.0).
fn covers(vtable: &TomiiSchedulerVtable, offset: usize) -> bool {
    vtable.header.struct_size as usize >= offset + size_of::<usize>()
}

/// Refuses a table of another major version, or one smaller than v1.0's.
fn check_header(path: &Path, header: &tomii_types::abi::TomiiAbiHeader) -> Result<(), PluginError> {
    if header.abi_major != TOMII_SCHED_ABI_MAJOR {
        return Err(PluginError::Version {
            path: path.to_owned(),
            abi: "scheduler",
            found: header.abi_major,
            expected: TOMII_SCHED_ABI_MAJOR,
        });
    }
    if header.struct_size < V1_VTABLE_SIZE {
        return Err(PluginError::Invalid {
            path: path.to_owned(),
            what: format!(
                "scheduler table is {} bytes, smaller than the {V1_VTABLE_SIZE} bytes of ABI v1.0",
                header.struct_size
            ),
        });
    }
    Ok(())
}

/// Refuses a table without one of the required callbacks, or with task hooks beside
/// `TOMII_SCHED_POP_HANDLES`.
fn check_callbacks(path: &Path, name: &str, vtable: &TomiiSchedulerVtable) -> Result<(), PluginError> {
    let invalid = |what: String| PluginError::Invalid { path: path.to_owned(), what };
    let required = [
        ("create", vtable.create.is_some()),
        ("destroy", vtable.destroy.is_some()),
        ("push", vtable.push.is_some()),
        ("pop", vtable.pop.is_some()),
    ];
    if let Some((missing, _)) = required.iter().find(|(_, present)| !present) {
        return Err(invalid(format!("scheduler {name:?} has a NULL `{missing}` callback, which is required")));
    }
    if covers(vtable, std::mem::offset_of!(TomiiSchedulerVtable, keep_gate))
        && vtable.keep_gate.is_some()
        && vtable.push_keep.is_none()
    {
        return Err(invalid(format!(
            "scheduler {name:?} has `keep_gate` but no `push_keep`, which the host calls whenever the gate is \
             closed: add `push_keep` or drop `keep_gate`"
        )));
    }
    if vtable.header.flags & TOMII_SCHED_POP_HANDLES != 0
        && (vtable.task_started.is_some() || vtable.task_completed.is_some())
    {
        return Err(invalid(format!(
            "scheduler {name:?} sets TOMII_SCHED_POP_HANDLES and has a task hook, which receives the popped \
             descriptor: drop the flag or the task_started/task_completed hooks"
        )));
    }
    Ok(())
}

/// Verifies the full layout of a Rust scheduler through its `abi_stable` root module. C schedulers
/// have none; they are checked at the C level only. Returns whether the layout was checked.
fn check_layout(path: &Path, library: &OpenLibrary) -> Result<bool, PluginError> {
    let mut symbol = LIB_HEADER_SYMBOL.as_bytes().to_vec();
    symbol.push(0);
    if !library.has_symbol(&symbol) {
        return Ok(false);
    }
    let layout_error = |detail: String| PluginError::Layout { path: path.to_owned(), detail };
    let header = lib_header_from_path(&absolute(path)).map_err(|e| layout_error(first_line(&e.to_string())))?;
    header.init_root_module::<SchedulerModuleRef>().map_err(|e| layout_error(first_line(&e.to_string())))?;
    Ok(true)
}

fn first_line(text: &str) -> String {
    text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("unknown").to_owned()
}

/// What the host tells a scheduler at create time (the owned side of `TomiiSchedInit`).
pub struct SchedulerSetup<'a> {
    pub workers: u32,
    pub slots: u32,
    pub frames: u64,
    pub tasks_per_frame: u64,
    /// (name, factor, priority, worker_lo, worker_hi) per node.
    pub nodes: Vec<(&'a str, u32, i32, u32, u32)>,
    pub knobs: &'a [(String, String)],
}

/// What the guard descriptor after a [`PopBuffer`] holds: its handle spells "popguard" in ASCII.
const POP_GUARD: TomiiTask = TomiiTask {
    handle: u64::from_be_bytes(*b"popguard"),
    frame: 0,
    ready_ns: 0,
    cost_ns: 0,
    rank: 0,
    node: 0,
    instance: 0,
    slot: 0,
    priority: 0,
    worker_lo: 0,
    worker_hi: 0,
    locality: 0,
    reserved: 0,
};

/// The buffer a worker pops into: the descriptors a scheduler may write, then one guard
/// descriptor ([`POP_GUARD`]) that [`SchedulerInstance::pop_guarded`] checks after every pop. It
/// dereferences to the descriptors alone.
pub struct PopBuffer {
    /// `max` descriptors, then the guard.
    tasks: Vec<TomiiTask>,
}

impl PopBuffer {
    /// A buffer for pops of at most `max` tasks.
    pub fn new(max: usize) -> PopBuffer {
        let mut tasks = vec![TomiiTask::default(); max + 1];
        tasks[max] = POP_GUARD;
        PopBuffer { tasks }
    }

    /// The most tasks a pop may write.
    #[inline]
    fn max(&self) -> usize {
        self.tasks.len() - 1
    }
}

impl std::ops::Deref for PopBuffer {
    type Target = [TomiiTask];

    #[inline]
    fn deref(&self) -> &[TomiiTask] {
        &self.tasks[..self.max()]
    }
}

impl std::ops::DerefMut for PopBuffer {
    #[inline]
    fn deref_mut(&mut self) -> &mut [TomiiTask] {
        let max = self.max();
        &mut self.tasks[..max]
    }
}

/// One created scheduler state, destroyed on drop.
pub struct SchedulerInstance<'p> {
    plugin: &'p SchedulerPlugin,
    state: *mut c_void,
    push_fn: unsafe extern "C" fn(*mut c_void, u32, *const TomiiTask, usize) -> i32,
    pop_fn: unsafe extern "C" fn(*mut c_void, u32, *mut TomiiTask, usize, *mut usize) -> i32,
    push_keep_fn: Option<PushKeepFn>,
    /// Per worker: its keep gate (`keep_gate`, v1.4), if the scheduler gave it one.
    gates: Box<[Option<KeepGate>]>,
    /// Held around every call when the scheduler declared `TOMII_SCHED_SERIAL`.
    serial: Option<Mutex<()>>,
    /// Set when the scheduler broke its contract: its state is then never destroyed.
    abandoned: AtomicBool,
    /// Marks the calls of every thread that calls as a [`SchedulerCaller`] (and their kernel
    /// calls, when limited: `plugin::KernelCaller`).
    watchdog: Watchdog,
}

// SAFETY: the ABI requires scheduler callbacks to be callable from any thread, concurrently unless
// the scheduler sets SERIAL, in which case `serial` makes the calls one at a time.
unsafe impl Send for SchedulerInstance<'_> {}
// SAFETY: as above.
unsafe impl Sync for SchedulerInstance<'_> {}

impl<'p> SchedulerInstance<'p> {
    pub fn create(plugin: &'p SchedulerPlugin, setup: &SchedulerSetup<'_>) -> Result<Self, PluginError> {
        let create_error =
            |message: String| PluginError::Create { name: plugin.name.to_owned(), path: plugin.path.clone(), message };
        let to_c = |text: &str| CString::new(text).map_err(|_| create_error(format!("{text:?} contains a NUL byte")));
        let names = setup.nodes.iter().map(|n| to_c(n.0)).collect::<Result<Vec<_>, _>>()?;
        let nodes: Vec<TomiiNodeSummary> = setup
            .nodes
            .iter()
            .zip(&names)
            .map(|(n, name)| TomiiNodeSummary {
                name: name.as_ptr(),
                factor: n.1,
                priority: n.2,
                worker_lo: n.3,
                worker_hi: n.4,
            })
            .collect();
        let knob_text = setup.knobs.iter().map(|(k, v)| Ok((to_c(k)?, to_c(v)?))).collect::<Result<Vec<_>, _>>()?;
        let knobs: Vec<TomiiKnob> =
            knob_text.iter().map(|(k, v)| TomiiKnob { key: k.as_ptr(), value: v.as_ptr() }).collect();
        let init = TomiiSchedInit {
            struct_size: size_of::<TomiiSchedInit>() as u32,
            workers: setup.workers,
            slots: setup.slots,
            node_count: nodes.len() as u32,
            tasks_per_frame: setup.tasks_per_frame,
            max_ready: setup.tasks_per_frame.saturating_mul(u64::from(setup.slots)),
            frames: setup.frames,
            nodes: nodes.as_ptr(),
            knobs: knobs.as_ptr(),
            knob_count: knobs.len(),
        };
        let mut message = vec![0u8; 1024];
        let mut state = std::ptr::null_mut();
        let vt = plugin.vtable;
        let (create, push_fn, pop_fn) = match (vt.create, vt.push, vt.pop) {
            (Some(c), Some(pu), Some(po)) => (c, pu, po),
            _ => unreachable!("checked at load"),
        };
        let err = TomiiErrorBuf { ptr: message.as_mut_ptr().cast(), cap: message.len() };
        // SAFETY: `init` and the arrays it points at live until the call returns; `err` is 1 KiB.
        let status = unsafe { create(&init, &mut state, err) };
        if status == TOMII_OK && state.is_null() {
            return Err(create_error("create returned TOMII_OK but a NULL state; return a non-NULL state".to_owned()));
        }
        if status != TOMII_OK {
            let text = c_message(&message);
            let text =
                if text.is_empty() { format!("create returned status {status} without a message") } else { text };
            return Err(create_error(text));
        }
        let serial = (plugin.flags() & TOMII_SCHED_SERIAL != 0).then(|| Mutex::new(()));
        let watchdog = Watchdog::new(setup.workers);
        let mut instance = SchedulerInstance {
            plugin,
            state,
            push_fn,
            pop_fn,
            push_keep_fn: plugin.push_keep(),
            gates: Box::default(),
            serial,
            abandoned: AtomicBool::new(false),
            watchdog,
        };
        // A task hook hears of every kept task, so a scheduler with one keeps through `push_keep`.
        if let Some(keep_gate) = plugin.keep_gate().filter(|_| !instance.has_task_hooks()) {
            // Dropped on failure: the state is destroyed.
            instance.gates = (0..setup.workers)
                .map(|worker| instance.ask_gate(keep_gate, worker))
                .collect::<Result<_, _>>()
                .map_err(create_error)?;
        }
        Ok(instance)
    }

    /// Asks for `worker`'s keep gate; refuses counters the host could not read atomically.
    fn ask_gate(&self, keep_gate: KeepGateFn, worker: u32) -> Result<Option<KeepGate>, String> {
        let mut gate = TomiiKeepGate::NONE;
        let _serial = self.lock();
        // SAFETY: valid state from `create`; `gate` is a live TomiiKeepGate.
        unsafe { keep_gate(self.state, worker, &mut gate) };
        let counter = |ptr: *const u64| !ptr.is_null() && ptr.is_aligned();
        match (gate.queued.is_null(), gate.taken.is_null()) {
            (true, true) => Ok(None),
            _ if counter(gate.queued) && counter(gate.taken) => {
                Ok(Some(KeepGate { queued: gate.queued.cast(), taken: gate.taken.cast() }))
            }
            _ => Err(format!(
                "keep_gate gave worker {worker} a NULL or misaligned counter ({:p}, {:p}): both must point at \
                 8-byte aligned uint64_t, or both be left NULL",
                gate.queued, gate.taken
            )),
        }
    }

    pub fn plugin(&self) -> &SchedulerPlugin {
        self.plugin
    }

    fn lock(&self) -> Option<std::sync::MutexGuard<'_, ()>> {
        self.serial.as_ref().map(|m| m.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }

    /// Hands `tasks` to the scheduler. `worker` is the pushing worker or `TOMII_NO_WORKER`.
    /// Inlined into the engine's push hand-off, which stays out of line itself.
    #[inline(always)]
    pub fn push(&self, worker: u32, tasks: &[TomiiTask]) -> Result<(), String> {
        let _serial = self.lock();
        // SAFETY: valid state from `create`; `tasks` is a live slice.
        let status = unsafe { (self.push_fn)(self.state, worker, tasks.as_ptr(), tasks.len()) };
        if status == TOMII_OK { Ok(()) } else { Err(self.failure("push", status)) }
    }

    /// Whether the scheduler may keep a pushed task for the pushing worker (`push_keep`, v1.2).
    #[inline]
    pub fn keeps(&self) -> bool {
        self.push_keep_fn.is_some()
    }

    /// Hands `tasks`, made ready by `worker`'s completion, to the scheduler, which may keep one for
    /// `worker` to run next (`push_keep`; plain `push` without it): the kept task's index.
    #[inline(always)]
    pub fn push_keep(&self, worker: u32, tasks: &[TomiiTask]) -> Result<Option<usize>, String> {
        let Some(push_keep) = self.push_keep_fn else {
            return self.push(worker, tasks).map(|()| None);
        };
        let _serial = self.lock();
        let mut kept = TOMII_KEEP_NONE;
        // SAFETY: valid state from `create`; `tasks` is a live slice; `kept` a live usize.
        let status = unsafe { push_keep(self.state, worker, tasks.as_ptr(), tasks.len(), &mut kept) };
        if status != TOMII_OK {
            return Err(self.failure("push_keep", status));
        }
        match kept {
            TOMII_KEEP_NONE => Ok(None),
            index if index < tasks.len() => Ok(Some(index)),
            index => Err(kept_out_of_range(index, tasks.len())),
        }
    }

    /// Asks for up to `out.len()` tasks for `worker`; returns how many were written.
    #[inline]
    pub fn pop(&self, worker: u32, out: &mut [TomiiTask]) -> Result<usize, String> {
        // SAFETY: `out` has room for `out.len()` descriptors.
        let (status, count) = unsafe { self.call_pop(worker, out.as_mut_ptr(), out.len()) };
        self.popped(status, count, out.len())
    }

    /// Like [`pop`](Self::pop), into a [`PopBuffer`], and checks its guard: a scheduler that wrote
    /// past the descriptors it was lent broke its contract (the guard took the write, not the
    /// heap). One compare per pop. Kept out of line: the engine's worker loop and the simulator
    /// both call it through `pop_by`, and inlined into that closure it made the closure too large
    /// to inline into the worker loop (+20 instructions per task on W1).
    #[inline(never)]
    pub fn pop_guarded(&self, worker: u32, buffer: &mut PopBuffer) -> Result<usize, String> {
        let max = buffer.max();
        // SAFETY: the buffer has room for `max` descriptors, and one more, the guard.
        let (status, count) = unsafe { self.call_pop(worker, buffer.tasks.as_mut_ptr(), max) };
        if buffer.tasks[max].handle != POP_GUARD.handle {
            buffer.tasks[max] = POP_GUARD;
            let plural = if max == 1 { "" } else { "s" };
            return Err(format!("pop wrote past the end of the {max} descriptor{plural} pop may write"));
        }
        self.popped(status, count, max)
    }

    /// Calls the scheduler's pop; (its status, the count it reported).
    ///
    /// # Safety
    /// `out` must have room for `max` descriptors.
    #[inline]
    unsafe fn call_pop(&self, worker: u32, out: *mut TomiiTask, max: usize) -> (i32, usize) {
        let _serial = self.lock();
        let mut count = 0usize;
        // SAFETY: valid state; `out` has room for `max` descriptors (the caller's promise);
        // `count` is a live usize.
        let status = unsafe { (self.pop_fn)(self.state, worker, out, max, &mut count) };
        (status, count)
    }

    /// The outcome of a pop that returned `status` and reported `count` of at most `max` tasks.
    #[inline]
    fn popped(&self, status: i32, count: usize, max: usize) -> Result<usize, String> {
        if status != TOMII_OK {
            return Err(self.failure("pop", status));
        }
        if count > max {
            return Err(format!("pop reported {count} tasks for a buffer of {max}"));
        }
        Ok(count)
    }

    /// Marks the state as not to be destroyed: the scheduler broke its contract, its state may be
    /// corrupt, and calling into it again could crash the process. The state is leaked.
    pub fn abandon(&self) {
        self.abandoned.store(true, Ordering::Relaxed);
    }

    /// Whether `abandon` was called.
    #[inline]
    pub fn is_abandoned(&self) -> bool {
        self.abandoned.load(Ordering::Relaxed)
    }

    /// Calls the optional hook `pick` of the table, if the scheduler has it and has not broken
    /// its contract, with the same serialisation as push and pop (`SERIAL`).
    #[inline]
    fn with_hook<F: Copy>(&self, pick: impl Fn(&TomiiSchedulerVtable) -> Option<F>, call: impl FnOnce(F)) {
        if let Some(hook) = pick(self.plugin.vtable)
            && !self.is_abandoned()
        {
            let _serial = self.lock();
            call(hook);
        }
    }

    /// Whether the scheduler has a task hook (`task_started` or `task_completed`): without one the
    /// engine skips the per-task hook path.
    #[inline]
    pub fn has_task_hooks(&self) -> bool {
        let vtable = self.plugin.vtable;
        vtable.task_started.is_some() || vtable.task_completed.is_some()
    }

    /// The optional hook: a popped task is about to run on `worker`.
    #[inline]
    pub fn task_started(&self, worker: u32, task: &TomiiTask) {
        // SAFETY: valid state from `create`; a live descriptor.
        self.with_hook(|v| v.task_started, |hook| unsafe { hook(self.state, worker, task) });
    }

    /// The optional hook: a popped task finished on `worker` after `duration_ns` of kernel time.
    #[inline]
    pub fn task_completed(&self, worker: u32, task: &TomiiTask, duration_ns: u64) {
        // SAFETY: as above.
        self.with_hook(|v| v.task_completed, |hook| unsafe { hook(self.state, worker, task, duration_ns) });
    }

    /// The optional hook: frame `frame` started in `slot`, before its first tasks are pushed.
    pub fn frame_started(&self, frame: u64, slot: u32) {
        // SAFETY: valid state from `create`.
        self.with_hook(|v| v.frame_started, |hook| unsafe { hook(self.state, frame, slot) });
    }

    /// The optional hook: frame `frame` in `slot` completed after `latency_ns`.
    pub fn frame_completed(&self, frame: u64, slot: u32, latency_ns: u64) {
        // SAFETY: valid state from `create`.
        self.with_hook(|v| v.frame_completed, |hook| unsafe { hook(self.state, frame, slot, latency_ns) });
    }

    /// Changes one of the scheduler's options while it runs (its `set_knob`), behind the SERIAL
    /// lock; the scheduler's message when it refuses.
    pub fn set_knob(&self, key: &str, value: &str) -> Result<(), String> {
        let name = self.plugin.name;
        let Some(set_knob) = self.plugin.vtable.set_knob else {
            return Err(format!("scheduler {name:?} has no set_knob: its options are fixed when the run starts"));
        };
        if self.is_abandoned() {
            return Err(format!("scheduler {name:?} broke its contract and is no longer called"));
        }
        let text =
            |what: &str, s: &str| CString::new(s).map_err(|_| format!("the option's {what} contains a NUL byte"));
        let (key_c, value_c) = (text("name", key)?, text("value", value)?);
        let mut message = vec![0u8; 1024];
        let err = TomiiErrorBuf { ptr: message.as_mut_ptr().cast(), cap: message.len() };
        let _serial = self.lock();
        // SAFETY: valid state; NUL-terminated strings and a 1 KiB error buffer live for the call.
        let status = unsafe { set_knob(self.state, key_c.as_ptr(), value_c.as_ptr(), err) };
        if status == TOMII_OK {
            return Ok(());
        }
        let text = c_message(&message);
        Err(if text.is_empty() { format!("scheduler {name:?} refused {key}={value} (status {status})") } else { text })
    }

    /// The scheduler's `stats` text, at most [`MAX_STATS_BYTES`] of it.
    pub fn stats(&self) -> Option<String> {
        let stats = self.plugin.vtable.stats?;
        let _serial = self.lock();
        let mut buf = vec![0u8; 4096];
        // SAFETY: valid state; `buf` has the stated capacity.
        let needed = unsafe { stats(self.state, buf.as_mut_ptr().cast(), buf.len()) };
        if needed > MAX_STATS_BYTES {
            // A scheduler's claim is not a reason to allocate: past the limit, its text is cut.
            return Some(format!(
                "{} (the scheduler's stats claim {needed} bytes, more than the {MAX_STATS_BYTES} read)",
                c_message(&buf)
            ));
        }
        if needed >= buf.len() {
            buf.resize(needed + 1, 0);
            // SAFETY: as above, with the larger buffer.
            unsafe { stats(self.state, buf.as_mut_ptr().cast(), buf.len()) };
        }
        Some(c_message(&buf))
    }

    fn failure(&self, call: &str, status: i32) -> String {
        let detail = self
            .plugin
            .vtable
            .last_error
            // SAFETY: valid state; the returned string lives until this thread's next failing call.
            .map(|last_error| unsafe { last_error(self.state) })
            .filter(|ptr| !ptr.is_null())
            // SAFETY: non-NULL, NUL-terminated by the ABI.
            .map(|ptr| unsafe { std::ffi::CStr::from_ptr(ptr) }.to_string_lossy().into_owned())
            .unwrap_or_default();
        if detail.is_empty() { format!("{call} returned status {status}") } else { format!("{call} failed: {detail}") }
    }
}

/// One thread as it calls the scheduler: its worker index (`TOMII_NO_WORKER` for the host
/// thread) and its mark in the instance's watchdog. Workers and the host thread call the
/// scheduler only through the `*_by` methods with it, each call marked for as long as it runs
/// (engine/README.md, "Stuck callbacks").
#[derive(Clone, Copy)]
pub(crate) struct SchedulerCaller<'s> {
    worker: u32,
    mark: &'s MarkCell,
}

impl SchedulerInstance<'_> {
    /// The run's call watchdog, which the host thread looks at.
    pub(crate) fn watchdog(&self) -> &Watchdog {
        &self.watchdog
    }

    /// How `worker` calls the scheduler.
    pub(crate) fn caller(&self, worker: u32) -> SchedulerCaller<'_> {
        SchedulerCaller { worker, mark: self.watchdog.cell(worker) }
    }

    /// [`push`](Self::push), marked.
    #[inline(always)]
    pub(crate) fn push_by(&self, caller: SchedulerCaller<'_>, tasks: &[TomiiTask]) -> Result<(), String> {
        self.watchdog.watch(caller.mark, Call::Push, || self.push(caller.worker, tasks))
    }

    /// [`push_keep`](Self::push_keep), marked.
    #[inline(always)]
    pub(crate) fn push_keep_by(
        &self,
        caller: SchedulerCaller<'_>,
        tasks: &[TomiiTask],
    ) -> Result<Option<usize>, String> {
        self.watchdog.watch(caller.mark, Call::Push, || self.push_keep(caller.worker, tasks))
    }

    /// Whether the scheduler gave some worker a keep gate (ABI v1.4).
    pub fn has_gates(&self) -> bool {
        self.gates.iter().any(Option::is_some)
    }

    /// Whether `worker`'s keep gate (ABI v1.4) is open: then the host keeps the first task a
    /// completion of the worker's made ready that it may run, without asking (`keep_at_gate`).
    /// False for a worker without a gate, the host thread included.
    #[inline(always)]
    pub(crate) fn gate_open(&self, worker: u32) -> bool {
        self.gates.get(worker as usize).is_some_and(|gate| gate.is_some_and(KeepGate::is_open))
    }

    /// The keep gate's rule, applied to `tasks`: keeps the first the worker may run and pushes
    /// the others.
    pub(crate) fn keep_at_gate(
        &self,
        caller: SchedulerCaller<'_>,
        tasks: &[TomiiTask],
    ) -> Result<Option<usize>, String> {
        let worker = caller.worker;
        let Some(kept) = tasks.iter().position(|task| (task.worker_lo..task.worker_hi).contains(&worker)) else {
            return self.push_by(caller, tasks).map(|()| None);
        };
        for queued in [&tasks[..kept], &tasks[kept + 1..]] {
            if !queued.is_empty() {
                self.push_by(caller, queued)?;
            }
        }
        Ok(Some(kept))
    }

    /// [`pop_guarded`](Self::pop_guarded), marked.
    #[inline(always)]
    pub(crate) fn pop_by(&self, caller: SchedulerCaller<'_>, buffer: &mut PopBuffer) -> Result<usize, String> {
        self.watchdog.watch(caller.mark, Call::Pop, || self.pop_guarded(caller.worker, buffer))
    }

    /// [`task_started`](Self::task_started), marked.
    #[inline]
    pub(crate) fn task_started_by(&self, caller: SchedulerCaller<'_>, task: &TomiiTask) {
        self.watchdog.watch(caller.mark, Call::TaskStarted, || self.task_started(caller.worker, task));
    }

    /// [`task_completed`](Self::task_completed), marked.
    #[inline]
    pub(crate) fn task_completed_by(&self, caller: SchedulerCaller<'_>, task: &TomiiTask, duration_ns: u64) {
        self.watchdog.watch(caller.mark, Call::TaskCompleted, || self.task_completed(caller.worker, task, duration_ns));
    }

    /// [`frame_started`](Self::frame_started), marked.
    pub(crate) fn frame_started_by(&self, caller: SchedulerCaller<'_>, frame: u64, slot: u32) {
        self.watchdog.watch(caller.mark, Call::FrameStarted, || self.frame_started(frame, slot));
    }

    /// [`frame_completed`](Self::frame_completed), marked.
    pub(crate) fn frame_completed_by(&self, caller: SchedulerCaller<'_>, frame: u64, slot: u32, latency_ns: u64) {
        self.watchdog.watch(caller.mark, Call::FrameCompleted, || self.frame_completed(frame, slot, latency_ns));
    }
}

impl Drop for SchedulerInstance<'_> {
    fn drop(&mut self) {
        if self.is_abandoned() {
            return;
        }
        if let Some(destroy) = self.plugin.vtable.destroy {
            // SAFETY: the state came from `create` and every other call has returned.
            unsafe { destroy(self.state) };
        }
    }
}

/// A worker's keep gate (ABI v1.4): two counters of the scheduler's, checked non-NULL and aligned
/// when it gave them, valid until its `destroy`.
#[derive(Clone, Copy)]
struct KeepGate {
    queued: *const AtomicU64,
    taken: *const AtomicU64,
}

impl KeepGate {
    /// Whether nothing waits: `taken` read first, then `queued`, equal (module doc, "Memory
    /// ordering").
    #[inline(always)]
    fn is_open(self) -> bool {
        // SAFETY: aligned, non-NULL counters that live as long as the scheduler's state (`ask_gate`).
        let (taken, queued) = unsafe { (&*self.taken, &*self.queued) };
        let taken = taken.load(Ordering::Acquire);
        taken == queued.load(Ordering::Acquire)
    }
}

#[cold]
fn kept_out_of_range(index: usize, pushed: usize) -> String {
    let plural = if pushed == 1 { "" } else { "s" };
    format!("push_keep kept task index {index} of the {pushed} task{plural} pushed")
}

/// The NUL-terminated text at the start of `buf`.
fn c_message(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The frozen v1.0 size is today's table while no minor appended a field (v1.1 added a flag
    /// only); a minor that appends fields grows the table and leaves the minimum where it is.
    #[test]
    fn the_v1_0_table_size_is_frozen() {
        if tomii_types::abi::TOMII_SCHED_ABI_MINOR <= 1 {
            assert_eq!(V1_VTABLE_SIZE as usize, size_of::<TomiiSchedulerVtable>());
        } else {
            assert!((V1_VTABLE_SIZE as usize) < size_of::<TomiiSchedulerVtable>());
        }
    }
}
