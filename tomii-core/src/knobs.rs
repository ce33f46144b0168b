//! The knob catalog: every option of `tomii run`, with its type, default, domain, role, description
//! and search hint. `tomii knobs` prints it; the Python binding reads the same table, so an option
//! has one name, one default and one domain everywhere.
//!
//! Pure data and its rendering: no clap, no I/O, no engine. `tests/knobs.rs` checks it against the
//! clap definition in `cli.rs` (every long flag, default and choice), so the two cannot drift.

use serde::ser::{Serialize, SerializeMap, SerializeStruct, Serializer};

/// The version of the JSON shape `tomii knobs --json` prints; bumped when a field changes meaning.
pub const FORMAT_VERSION: u32 = 1;

/// One option of a run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Knob {
    /// The option's name in Python (`run(workers=4)`) and in JSON: snake_case.
    pub name: &'static str,
    /// The `tomii run` flag. A bool knob's flag flips it from its default: `--quiet` sets `quiet`
    /// (default false), `--no-task-timing` clears `task_timing` (default true).
    pub cli: &'static str,
    pub kind: Kind,
    pub default: Preset,
    pub domain: Domain,
    pub role: Role,
    pub description: &'static str,
    /// How to search the knob, for a tuner (a person, a script or an agent).
    pub search_hint: &'static str,
}

/// The type of a knob's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Int,
    Bool,
    String,
    Path,
    /// Several paths; on the CLI, the flag once per path.
    PathList,
    /// `KEY=VALUE` pairs; on the CLI, the flag once per pair.
    KeyValueList,
}

impl Kind {
    /// The name in the catalog's `type` field.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Int => "int",
            Kind::Bool => "bool",
            Kind::String => "string",
            Kind::Path => "path",
            Kind::PathList => "list<path>",
            Kind::KeyValueList => "list<key=value>",
        }
    }
}

/// A knob's default value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preset {
    /// Unset (JSON `null`): the option is off unless given.
    Unset,
    /// No items (JSON `[]`), for list knobs.
    Empty,
    Int(u64),
    Bool(bool),
    Text(&'static str),
}

impl Serialize for Preset {
    fn serialize<S: Serializer>(&self, out: S) -> Result<S::Ok, S::Error> {
        match *self {
            Preset::Unset => out.serialize_none(),
            Preset::Empty => out.collect_seq(std::iter::empty::<u8>()),
            Preset::Int(value) => out.serialize_u64(value),
            Preset::Bool(value) => out.serialize_bool(value),
            Preset::Text(value) => out.serialize_str(value),
        }
    }
}

impl Preset {
    /// The default as the CLI would print it; `-` when unset or empty.
    pub fn to_text(self) -> String {
        match self {
            Preset::Unset | Preset::Empty => "-".to_owned(),
            Preset::Int(value) => value.to_string(),
            Preset::Bool(value) => value.to_string(),
            Preset::Text(value) => value.to_owned(),
        }
    }
}

/// The values a knob accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Domain {
    /// An integer in `min..=max`, the values the runtime accepts (for an option without a limit of
    /// its own, its type's range); `scale` is how to step through it, the search hint where.
    Int {
        min: u64,
        max: u64,
        scale: Scale,
    },
    Bool,
    /// One of these words.
    Choice(&'static [&'static str]),
    /// The name of a scheduler installed where the binary looks (`tomii schedulers --json`).
    Scheduler,
    /// Options of the chosen scheduler: its keys and their domains are listed by
    /// `tomii schedulers --json`.
    SchedulerOptions,
    /// A file path.
    Path,
}

/// How to step through an integer domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    Linear,
    /// Powers of two.
    Pow2,
    /// Logarithmic: factors of ten or so.
    Log,
}

impl Scale {
    pub fn name(self) -> &'static str {
        match self {
            Scale::Linear => "linear",
            Scale::Pow2 => "pow2",
            Scale::Log => "log",
        }
    }
}

/// Where the installed schedulers and their options are listed.
const SCHEDULER_LISTING: &str = "tomii schedulers --json";

/// `{"kind": ..., ...}`, the catalog's `domain` field.
impl Serialize for Domain {
    fn serialize<S: Serializer>(&self, out: S) -> Result<S::Ok, S::Error> {
        let mut map = out.serialize_map(None)?;
        match *self {
            Domain::Int { min, max, scale } => {
                map.serialize_entry("kind", "int")?;
                map.serialize_entry("min", &min)?;
                map.serialize_entry("max", &max)?;
                map.serialize_entry("scale", scale.name())?;
            }
            Domain::Bool => map.serialize_entry("kind", "bool")?,
            Domain::Choice(values) => {
                map.serialize_entry("kind", "choice")?;
                map.serialize_entry("values", values)?;
            }
            Domain::Scheduler => {
                map.serialize_entry("kind", "scheduler")?;
                map.serialize_entry("listed_by", SCHEDULER_LISTING)?;
            }
            Domain::SchedulerOptions => {
                map.serialize_entry("kind", "scheduler_options")?;
                map.serialize_entry("listed_by", SCHEDULER_LISTING)?;
            }
            Domain::Path => map.serialize_entry("kind", "path")?,
        }
        map.end()
    }
}

impl Domain {
    /// A short rendering for the text table.
    pub fn to_text(self) -> String {
        match self {
            Domain::Int { min, max, scale } => format!("{min}..={max} ({})", scale.name()),
            Domain::Bool => "true|false".to_owned(),
            Domain::Choice(values) => values.join("|"),
            Domain::Scheduler => "installed scheduler".to_owned(),
            Domain::SchedulerOptions => "scheduler's options".to_owned(),
            Domain::Path => "path".to_owned(),
        }
    }
}

/// What a knob is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Changes how fast a run goes, never what it computes: what a tuner searches.
    Perf,
    /// Changes what a run does or when it stops.
    Behaviour,
    /// Inputs, outputs and what is recorded.
    Io,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Perf => "perf",
            Role::Behaviour => "behaviour",
            Role::Io => "io",
        }
    }
}

/// The engine's most slots, most workers and largest pop batch.
const MAX_SLOTS: u64 = crate::engine::MAX_SLOTS as u64;
const MAX_WORKERS: u64 = crate::engine::MAX_WORKERS as u64;
const MAX_POP_BATCH: u64 = crate::engine::MAX_POP_BATCH as u64;

/// Every option of `tomii run`, in the order `tomii run --help` lists them. The graph itself
/// (GRAPH, or `--json GRAPH`) is the run's input, not an option, and is not listed.
pub const CATALOG: &[Knob] = &[
    Knob {
        name: "dylib",
        cli: "--dylib",
        kind: Kind::PathList,
        default: Preset::Empty,
        domain: Domain::Path,
        role: Role::Io,
        description: "Kernel libraries (.so) whose kernels the graph's nodes call; on the CLI, repeat the flag for several",
        search_hint: "not a tuning knob: the graph needs the libraries that hold its kernels",
    },
    Knob {
        name: "workers",
        cli: "--workers",
        kind: Kind::Int,
        default: Preset::Int(1),
        domain: Domain::Int { min: 1, max: MAX_WORKERS, scale: Scale::Linear },
        role: Role::Perf,
        description: "Worker threads that run the kernels",
        search_hint: "unimodal: throughput rises until the physical cores are busy, then falls; \
            binary search 1..=physical cores",
    },
    Knob {
        name: "slots",
        cli: "--slots",
        kind: Kind::Int,
        default: Preset::Int(1),
        domain: Domain::Int { min: 1, max: MAX_SLOTS, scale: Scale::Pow2 },
        role: Role::Perf,
        description: "Frames in flight at once; each holds one slot until it completes",
        search_hint: "rises then plateaus; try powers of two from 1 to 4 × workers (memory grows as slots × instances)",
    },
    Knob {
        name: "frames",
        cli: "--frames",
        kind: Kind::Int,
        default: Preset::Int(1),
        domain: Domain::Int { min: 0, max: u64::MAX, scale: Scale::Log },
        role: Role::Behaviour,
        description: "Frames to run; 0 runs until Ctrl-C, which completes the frames in flight and reports",
        search_hint: "not a tuning knob: hold it fixed across trials, large enough that a run lasts a second or more",
    },
    Knob {
        name: "warmup_frames",
        cli: "--warmup-frames",
        kind: Kind::Int,
        default: Preset::Int(0),
        domain: Domain::Int { min: 0, max: u64::MAX, scale: Scale::Log },
        role: Role::Behaviour,
        description: "Warm-up: the first N frames run, but every figure of the report and the timing file leaves \
            them out (the report counts them in frames_excluded); Tomii 1.2's --exclude-streams",
        search_hint: "not a tuning knob: hold it fixed across trials; enough frames for caches and the scheduler's \
            estimates to settle (a few times slots)",
    },
    Knob {
        name: "max_runtime_s",
        cli: "--max-runtime-s",
        kind: Kind::Int,
        default: Preset::Int(0),
        domain: Domain::Int { min: 0, max: u64::MAX, scale: Scale::Log },
        role: Role::Behaviour,
        description: "Stop after this many seconds, as Ctrl-C does: the frames in flight complete and the run reports \
            (as interrupted); 0: no limit. Tomii 1.2's --max-runtime",
        search_hint: "not a tuning knob: a time budget per trial, with frames 0 (or large)",
    },
    Knob {
        name: "scheduler",
        cli: "--scheduler",
        kind: Kind::String,
        default: Preset::Text("fifo"),
        domain: Domain::Scheduler,
        role: Role::Perf,
        description: "Scheduler by name: loads libtomii_sched_NAME.so from $TOMII_SCHEDULER_PATH or beside the binary",
        search_hint: "categorical: try each installed scheduler (tomii schedulers) first, then tune its options",
    },
    Knob {
        name: "scheduler_plugin",
        cli: "--scheduler-plugin",
        kind: Kind::Path,
        default: Preset::Unset,
        domain: Domain::Path,
        role: Role::Perf,
        description: "Scheduler by path to its .so (Rust or C); replaces scheduler",
        search_hint: "categorical: for a scheduler built outside this workspace; otherwise search scheduler",
    },
    Knob {
        name: "sched_opt",
        cli: "--sched-opt",
        kind: Kind::KeyValueList,
        default: Preset::Empty,
        domain: Domain::SchedulerOptions,
        role: Role::Perf,
        description: "Options of the scheduler, KEY=VALUE; on the CLI, repeat the flag for several",
        search_hint: "conditional on scheduler: each option's kind, default and domain are in tomii schedulers --json",
    },
    Knob {
        name: "trace",
        cli: "--trace",
        kind: Kind::Path,
        default: Preset::Unset,
        domain: Domain::Path,
        role: Role::Io,
        description: "Stream the trace (one row per task execution, in the order workers hand them over) to this CSV file",
        search_hint: "not a tuning knob: recording costs time per task; leave it off while searching",
    },
    Knob {
        name: "trace_format",
        cli: "--trace-format",
        kind: Kind::String,
        default: Preset::Text("csv"),
        domain: Domain::Choice(&["csv", "chrome"]),
        role: Role::Io,
        description: "The trace file's format: csv (one row per task execution) or chrome (the trace-event JSON that \
            Perfetto and chrome://tracing open)",
        search_hint: "not a tuning knob: how the trace is written",
    },
    Knob {
        name: "report",
        cli: "--report",
        kind: Kind::Path,
        default: Preset::Unset,
        domain: Domain::Path,
        role: Role::Io,
        description: "Write the report (throughput, latency percentiles, per-node and per-worker figures) as JSON",
        search_hint: "not a tuning knob: the report is how a trial is scored; always set it",
    },
    Knob {
        name: "timing",
        cli: "--timing",
        kind: Kind::Path,
        default: Preset::Unset,
        domain: Domain::Path,
        role: Role::Io,
        description: "Write Tomii 1.2's timing file (plain-text statistics: frames, their mean time, a per-node table) \
            from the trace",
        search_hint: "not a tuning knob: it records the trace, which costs time per task; for Tomii 1.2's scripts",
    },
    Knob {
        name: "record",
        cli: "--record",
        kind: Kind::Path,
        default: Preset::Unset,
        domain: Domain::Path,
        role: Role::Io,
        description: "Write Tomii 1.2's scheduler record (CSV: slot,job_id,start_ns,end_ns,worker,task_id,index) from \
            the trace; on the CLI without FILE (in Python, true), beside the timing file as NAME_sched.csv, else \
            scheduler_record.csv",
        search_hint: "not a tuning knob: it records the trace, which costs time per task; for Tomii 1.2's scripts",
    },
    Knob {
        name: "record_decisions",
        cli: "--record-decisions",
        kind: Kind::Path,
        default: Preset::Unset,
        domain: Domain::Path,
        role: Role::Io,
        description: "Record every scheduling decision (which task each worker ran, in order) with the graph, knobs \
            and scheduler, for tomii replay FILE",
        search_hint: "not a tuning knob: it records the trace, which costs time per task; for reproducing a run",
    },
    Knob {
        name: "pop_batch",
        cli: "--pop-batch",
        kind: Kind::Int,
        default: Preset::Int(1),
        domain: Domain::Int { min: 1, max: MAX_POP_BATCH, scale: Scale::Pow2 },
        role: Role::Perf,
        description: "The most tasks a worker takes from the scheduler at once",
        search_hint: "powers of two 1..=64; helps short tasks and batching schedulers (multi-slot-batch), may hurt balance",
    },
    Knob {
        name: "inline_continuation",
        cli: "--inline-continuation",
        kind: Kind::Bool,
        default: Preset::Bool(false),
        domain: Domain::Bool,
        role: Role::Perf,
        description: "A worker runs one task its completion made ready itself, without the scheduler (which never sees that task)",
        search_hint: "on for chains and 1:1 pipelines of short tasks; it bypasses the scheduler's policy for those tasks, so leave it off when comparing schedulers",
    },
    Knob {
        name: "task_timing",
        cli: "--no-task-timing",
        kind: Kind::Bool,
        default: Preset::Bool(true),
        domain: Domain::Bool,
        role: Role::Io,
        description: "Time each kernel (per-node times and busy fractions in the report); --no-task-timing turns it off",
        search_hint: "keep it on while tuning (the report's per-node figures need it); off saves two clock reads per task",
    },
    Knob {
        name: "stall_timeout_ms",
        cli: "--stall-timeout-ms",
        kind: Kind::Int,
        default: Preset::Int(2000),
        domain: Domain::Int { min: 0, max: u64::MAX, scale: Scale::Log },
        role: Role::Behaviour,
        description: "Stop with an error when every worker has been idle this long (ms) while frames are incomplete",
        search_hint: "not a tuning knob: raise it only for kernels that wait on something outside the graph",
    },
    Knob {
        name: "scheduler_call_timeout_ms",
        cli: "--scheduler-call-timeout-ms",
        kind: Kind::Int,
        default: Preset::Int(10_000),
        domain: Domain::Int { min: 1, max: u64::MAX, scale: Scale::Log },
        role: Role::Behaviour,
        description: "Stop with an error when a call into the scheduler (push, pop, a hook) has not returned after this \
            long (ms); a thread stuck in a plugin cannot be stopped, so the command exits",
        search_hint: "not a tuning knob: a scheduler call takes nanoseconds to microseconds; raise it only for a \
            scheduler that blocks on purpose",
    },
    Knob {
        name: "kernel_timeout_ms",
        cli: "--kernel-timeout-ms",
        kind: Kind::Int,
        default: Preset::Int(0),
        domain: Domain::Int { min: 0, max: u64::MAX, scale: Scale::Log },
        role: Role::Behaviour,
        description: "Stop with an error when a kernel call has not returned after this long (ms); 0: no limit. A \
            thread stuck in a plugin cannot be stopped, so the command exits",
        search_hint: "not a tuning knob: set it well above the slowest kernel while developing kernels",
    },
    Knob {
        name: "on_scheduler_fault",
        cli: "--on-scheduler-fault",
        kind: Kind::String,
        default: Preset::Text("stop"),
        domain: Domain::Choice(&["stop", "fallback"]),
        role: Role::Behaviour,
        description: "When the scheduler breaks its contract: stop the run with an error, or fallback: \
            eject it and finish on the host's FIFO",
        search_hint: "not a tuning knob: stop while developing a scheduler; fallback for long sweeps \
            (the report records an ejection)",
    },
    Knob {
        name: "receiver_threads",
        cli: "--receiver-threads",
        kind: Kind::Int,
        default: Preset::Int(1),
        domain: Domain::Int { min: 1, max: 1024, scale: Scale::Linear },
        role: Role::Perf,
        description: "Network source: threads that read the sockets (each socket is read by one; at most num_sockets are used)",
        search_hint: "only for graphs with a network_config: 1 until one thread cannot keep up (packets_dropped grows), \
            then up to num_sockets",
    },
    Knob {
        name: "socket_recv_buf_bytes",
        cli: "--socket-recv-buf-bytes",
        kind: Kind::Int,
        default: Preset::Int(16 << 20),
        domain: Domain::Int { min: 4096, max: 1 << 31, scale: Scale::Pow2 },
        role: Role::Perf,
        description: "Network source: SO_RCVBUF asked for each socket, in bytes (the system may grant less; the report says what it gave)",
        search_hint: "only for graphs with a network_config: raise it when bursts overflow the socket; the system caps it \
            (net.core.rmem_max)",
    },
    Knob {
        name: "network_dispatch",
        cli: "--network-dispatch",
        kind: Kind::String,
        default: Preset::Text("packet"),
        domain: Domain::Choice(&["packet", "frame"]),
        role: Role::Perf,
        description: "Network source: packet runs a packet's tasks as it arrives (a frame starts at its first packet); \
            frame collects a frame's packets, then starts it",
        search_hint: "only for graphs with a network_config: packet is the point of a packet-driven runtime; frame is the \
            collect-first baseline to compare with",
    },
    Knob {
        name: "on_slots_busy",
        cli: "--on-slots-busy",
        kind: Kind::String,
        default: Preset::Text("drop"),
        domain: Domain::Choice(&["drop", "wait"]),
        role: Role::Behaviour,
        description: "Network source: a new frame that finds every slot busy is dropped (its packets counted), or waits \
            in the window, holding its packets, until a slot is free",
        search_hint: "not a tuning knob: drop keeps up with a live stream; wait loses nothing while the window and the \
            socket buffers hold",
    },
    Knob {
        name: "frame_timeout_ms",
        cli: "--frame-timeout-ms",
        kind: Kind::Int,
        default: Preset::Int(1000),
        domain: Domain::Int { min: 1, max: u64::MAX, scale: Scale::Log },
        role: Role::Behaviour,
        description: "Network source: a frame whose packets have not all arrived this long (ms) after its first one is \
            abandoned and reported incomplete",
        search_hint: "not a tuning knob: a few frame periods of the sender",
    },
    Knob {
        name: "frame_window",
        cli: "--frame-window",
        kind: Kind::Int,
        default: Preset::Int(64),
        domain: Domain::Int { min: 1, max: MAX_SLOTS, scale: Scale::Pow2 },
        role: Role::Behaviour,
        description: "Network source: frame ids accepted from the oldest frame in flight on (at least slots); \
            packets of ids beyond are dropped as outside the window (with on_slots_busy=wait, the receiver waits for room)",
        search_hint: "not a tuning knob: larger than the frames a sender has in the air at once",
    },
    Knob {
        name: "quiet",
        cli: "--quiet",
        kind: Kind::Bool,
        default: Preset::Bool(false),
        domain: Domain::Bool,
        role: Role::Io,
        description: "Print nothing but errors",
        search_hint: "not a tuning knob",
    },
];

/// The knob called `name`, if any.
pub fn find(name: &str) -> Option<&'static Knob> {
    CATALOG.iter().find(|knob| knob.name == name)
}

/// Checks `value` of the integer knob `name` against the catalog's domain, which is therefore the
/// one statement of what the runtime accepts. The message names the knob, its value and range, then
/// its flag and what it is.
///
/// # Panics
/// If `name` is not an integer knob of the catalog: a caller's typo, caught by any test.
pub fn check_int(name: &str, value: u64) -> Result<(), String> {
    let knob = find(name).unwrap_or_else(|| panic!("{name} is not a knob of the catalog"));
    let Domain::Int { min, max, .. } = knob.domain else { panic!("{name} is not an integer knob") };
    if (min..=max).contains(&value) {
        return Ok(());
    }
    let range = if max == u64::MAX { format!("at least {min}") } else { format!("between {min} and {max}") };
    Err(format!("{name} is {value}: it must be {range}. {name} ({}): {}", knob.cli, knob.description))
}

/// One entry of `tomii knobs --json`: name, cli, type, default, domain, role, description,
/// search_hint, in that order.
impl Serialize for Knob {
    fn serialize<S: Serializer>(&self, out: S) -> Result<S::Ok, S::Error> {
        let mut knob = out.serialize_struct("Knob", 8)?;
        knob.serialize_field("name", self.name)?;
        knob.serialize_field("cli", self.cli)?;
        knob.serialize_field("type", self.kind.name())?;
        knob.serialize_field("default", &self.default)?;
        knob.serialize_field("domain", &self.domain)?;
        knob.serialize_field("role", self.role.name())?;
        knob.serialize_field("description", self.description)?;
        knob.serialize_field("search_hint", self.search_hint)?;
        knob.end()
    }
}

/// What `tomii knobs --json` prints: `{"version": 1, "knobs": [...]}`.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Listing {
    pub version: u32,
    pub knobs: &'static [Knob],
}

/// The whole catalog, ready to serialize.
pub const LISTING: Listing = Listing { version: FORMAT_VERSION, knobs: CATALOG };

/// The catalog as an aligned text table (one knob a line, the description last), what
/// `tomii knobs` prints.
pub fn to_table() -> String {
    let header = ["NAME", "CLI", "TYPE", "DEFAULT", "DOMAIN", "ROLE", "DESCRIPTION"].map(str::to_owned);
    let rows: Vec<[String; 7]> = CATALOG
        .iter()
        .map(|k| {
            [
                k.name.to_owned(),
                k.cli.to_owned(),
                k.kind.name().to_owned(),
                k.default.to_text(),
                k.domain.to_text(),
                k.role.name().to_owned(),
                k.description.to_owned(),
            ]
        })
        .collect();
    let mut widths = [0; 7];
    for row in std::iter::once(&header).chain(&rows) {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |row: &[String; 7]| {
        let cells: Vec<String> = row.iter().zip(widths).map(|(cell, width)| format!("{cell:<width$}")).collect();
        cells.join("  ").trim_end().to_owned() + "\n"
    };
    std::iter::once(&header).chain(&rows).map(line).collect()
}
