//! Tomii 1.2's spellings of `tomii run`, so that its users' scripts run unchanged. A 1.2 flag is
//! one of three things here: an alias of a knob's flag (the catalog's `flag.aliases`:
//! `--max-streams` is `--frames`), a hidden flag of its own with the meaning it had ([`OWN`]:
//! `--fifo`, `--inits`, ...), or a flag without effect, accepted with one warning line saying why
//! ([`WITHOUT_EFFECT`]). `tests/knobs.rs` checks the tables against the hidden flags,
//! `tests/v12_cli.rs` runs each flag; Python's `run_graph` reads the same tables through the
//! binding ([`spellings_json`], [`without_effect`]), so the two front ends cannot drift.
//!
//! Only the shape of those flags and what they turn into; the run itself never sees them.

use std::path::{Path, PathBuf};

use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches, value_parser};

/// The Tomii 1.2 flags of `tomii run` that are its own here (not a knob's alias), with their
/// meaning; [`LegacyArgs`] declares them.
pub const OWN: &[(&str, &str)] = &[
    ("--json", "GRAPH"),
    ("--fifo", "--scheduler fifo; given with --custom, --fifo wins (as in Tomii 1.2), with a warning"),
    ("--custom", "--scheduler NAME (without NAME: --scheduler priority, 1.2's priority scheduler)"),
    ("--output", "where the lines printed on stdout go (`stdout`: there)"),
    ("--inits", "prints the compiled graph and its initializations in Tomii 1.2's layout, then runs"),
    (
        "--slot-priority",
        "a network source's frames that find every slot busy wait for one (--on-slots-busy wait); \
         no effect on a graph without a network source",
    ),
];

/// What a Tomii 1.2 flag without effect takes on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Takes {
    /// Nothing: a bool flag.
    Nothing,
    /// An unsigned integer, as 1.2 parsed it.
    Number,
    /// A word.
    Word,
}

impl Takes {
    pub fn name(self) -> &'static str {
        match self {
            Takes::Nothing => "flag",
            Takes::Number => "int",
            Takes::Word => "str",
        }
    }
}

/// Refuses a value as Tomii 1.2 refused it, with its message.
pub type Check = fn(&str) -> Result<(), String>;

/// A Tomii 1.2 flag that means nothing in this runtime.
#[derive(Clone, Copy, Debug)]
pub struct Unused {
    /// The long flag, `--` included; Python's keyword is it without `--`, `-` made `_`.
    pub flag: &'static str,
    pub takes: Takes,
    /// Why it has no effect, and what this runtime does instead.
    pub why: &'static str,
    /// A value Tomii 1.2 refused is refused here too, with its message.
    pub check: Option<Check>,
}

const fn unused(flag: &'static str, takes: Takes, why: &'static str) -> Unused {
    Unused { flag, takes, why, check: None }
}

/// The Tomii 1.2 flags of `tomii run` that mean nothing here: each is accepted with one warning.
pub const WITHOUT_EFFECT: &[Unused] = &[
    unused("--system-threads", Takes::Number, "workers propagate dependencies themselves; there are no system threads"),
    unused("--coalesce-barriers", Takes::Nothing, "barriers are counted per instance, with nothing to coalesce"),
    unused(
        "--batching-size",
        Takes::Number,
        "completions are not batched on their way to a system thread; see --pop-batch for the scheduler's side",
    ),
    unused(
        "--batching-limit",
        Takes::Number,
        "there is no completion batching to limit (in Tomii 1.2 the flag was read and never used)",
    ),
    unused("--core-offset", Takes::Number, "workers are not placed on cores by offset; see --pin-workers"),
    unused("--use-rdtsc", Takes::Nothing, "kernels are always timed with the cycle counter where it is invariant"),
    unused(
        "--debug",
        Takes::Nothing,
        "this runtime has no debug log; its diagnostics are the graph's warnings, the report (--report) and the \
         trace (--trace)",
    ),
    unused(
        "--no-fanout-bulk",
        Takes::Nothing,
        "every instance is dispatched as soon as its predecessors complete, which is what the flag asked for",
    ),
    Unused {
        flag: "--batch-queue-capacity",
        takes: Takes::Number,
        why: "completions do not pass through a queue to a system thread; workers resolve them",
        check: Some(positive_capacity),
    },
    unused(
        "--spin-iterations",
        Takes::Number,
        "there are no system threads to spin; idle workers spin, then park (see the engine's README)",
    ),
    unused("--sched-flush-threshold", Takes::Number, "each ready task is handed to the scheduler as it becomes ready"),
    unused(
        "--recv-pool-size",
        Takes::Number,
        "a network source's packet buffers are sized from the graph's buffer_depth and the frames in flight",
    ),
    unused(
        "--spin-wait-spin-iters",
        Takes::Number,
        "a task starts only once the results it reads are stored, so no task spin-waits for one",
    ),
    unused(
        "--spin-wait-yield-iters",
        Takes::Number,
        "a task starts only once the results it reads are stored, so no task yields waiting for one",
    ),
    unused(
        "--spin-wait-park-ns",
        Takes::Number,
        "a task starts only once the results it reads are stored, so no task parks waiting for one",
    ),
    Unused {
        flag: "--resolution-strategy",
        takes: Takes::Word,
        why: "workers resolve dependencies themselves; the scheduler (--scheduler) decides what runs next",
        check: Some(known_strategy),
    },
];

/// Tomii 1.2 refused a batch queue of no capacity.
fn positive_capacity(value: &str) -> Result<(), String> {
    match value.parse::<u64>() {
        Ok(0) => Err("invalid config: batch_queue_capacity must be > 0 (got 0), as in Tomii 1.2; give at least 1 \
                      (--batch-queue-capacity has no effect here)"
            .to_owned()),
        Ok(_) => Ok(()),
        Err(_) => Err(format!("--batch-queue-capacity {value:?}: give an unsigned integer")),
    }
}

/// Tomii 1.2 knew one resolution strategy.
fn known_strategy(value: &str) -> Result<(), String> {
    match value {
        "multi-slot-batch" => Ok(()),
        other => Err(format!("Unknown resolution strategy '{other}'. Available: multi-slot-batch")),
    }
}

/// What `--slot-priority` does for a graph without a network source.
pub const SLOT_PRIORITY_WITHOUT_NETWORK: &str = "has no effect on a graph without a network source: each frame \
    starts as a slot frees (Tomii 1.2 ran frame 0 and then waited forever)";

/// The entry of `name` (a flag, or Python's keyword) in [`WITHOUT_EFFECT`].
pub fn find_unused(name: &str) -> Option<&'static Unused> {
    let flag = format!("--{}", name.trim_start_matches("--").replace('_', "-"));
    WITHOUT_EFFECT.iter().find(|unused| unused.flag == flag)
}

/// For a Tomii 1.2 flag (or Python keyword) without effect, given with `value` (`None` for a bool
/// flag): the warning it gets, or the error for a value Tomii 1.2 refused. `None` when `name` is
/// not such a flag.
pub fn without_effect(name: &str, value: Option<&str>) -> Option<Result<String, String>> {
    let unused = find_unused(name)?;
    if let (Some(check), Some(value)) = (unused.check, value)
        && let Err(error) = check(value)
    {
        return Some(Err(error));
    }
    Some(Ok(format!("{} (Tomii 1.2) has no effect here: {}", unused.flag, unused.why)))
}

/// The tables as JSON, for the Python front end: `renamed` (1.2 keyword → knob, from the
/// catalog's aliases), `own` (the keywords of [`OWN`] flags) and `without_effect` (keyword →
/// what it takes and why).
pub fn spellings_json() -> serde_json::Value {
    let keyword = |flag: &str| flag.trim_start_matches("--").replace('-', "_");
    let renamed: serde_json::Map<String, serde_json::Value> = crate::knobs::CATALOG
        .iter()
        .flat_map(|knob| knob.flag.aliases.iter().map(move |alias| (keyword(alias), knob.name.into())))
        .collect();
    let own: Vec<String> = OWN.iter().map(|(flag, _)| keyword(flag)).collect();
    let unused: serde_json::Map<String, serde_json::Value> = WITHOUT_EFFECT
        .iter()
        .map(|u| (keyword(u.flag), serde_json::json!({"takes": u.takes.name(), "why": u.why})))
        .collect();
    serde_json::json!({
        "renamed": renamed,
        "own": own,
        "without_effect": unused,
        "slot_priority_without_network": SLOT_PRIORITY_WITHOUT_NETWORK,
    })
}

/// The Tomii 1.2 flags of `tomii run` that are not aliases of a knob's flag.
#[derive(Clone, Debug, Default)]
pub struct LegacyArgs {
    pub flags: OwnArgs,
    /// The flags without effect that were given, with their value (none for a bool flag).
    pub unused: Vec<(&'static Unused, Option<String>)>,
}

/// The flags of [`OWN`] but `--json` (which is the graph's).
#[derive(Args, Clone, Debug, Default)]
pub struct OwnArgs {
    /// Tomii 1.2: the fifo scheduler (`--scheduler fifo`); it wins over `--custom`.
    #[arg(long, hide = true, conflicts_with_all = ["scheduler", "scheduler_plugin"])]
    pub fifo: bool,
    /// Tomii 1.2: a named scheduler (`--scheduler NAME`); bare, its priority scheduler.
    #[arg(
        long,
        hide = true,
        value_name = "NAME",
        num_args = 0..=1,
        default_missing_value = "priority",
        conflicts_with_all = ["scheduler", "scheduler_plugin"]
    )]
    pub custom: Option<String>,
    /// Tomii 1.2: write what the command prints on stdout to FILE (`stdout`: print it).
    #[arg(long, hide = true, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Tomii 1.2: print the compiled graph and its initializations, then run.
    #[arg(long, hide = true)]
    pub inits: bool,
    /// Tomii 1.2: a network source's frames wait for a busy slot (`--on-slots-busy wait`).
    #[arg(long, hide = true, conflicts_with = "on_slots_busy")]
    pub slot_priority: bool,
}

impl LegacyArgs {
    /// `command` with the hidden flags of [`OWN`] and [`WITHOUT_EFFECT`].
    pub fn augment(command: Command) -> Command {
        WITHOUT_EFFECT.iter().fold(OwnArgs::augment_args(command), |command, unused| {
            let arg =
                Arg::new(unused.flag.trim_start_matches("--")).long(unused.flag.trim_start_matches("--")).hide(true);
            command.arg(match unused.takes {
                Takes::Nothing => arg.action(ArgAction::SetTrue),
                Takes::Number => arg.value_name("N").value_parser(value_parser!(u64)),
                Takes::Word => arg.value_name("WORD"),
            })
        })
    }

    pub fn from_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let unused = WITHOUT_EFFECT
            .iter()
            .filter_map(|unused| {
                let id = unused.flag.trim_start_matches("--");
                match unused.takes {
                    Takes::Nothing => matches.get_flag(id).then_some((unused, None)),
                    Takes::Number => matches.get_one::<u64>(id).map(|n| (unused, Some(n.to_string()))),
                    Takes::Word => matches.get_one::<String>(id).map(|w| (unused, Some(w.clone()))),
                }
            })
            .collect();
        Ok(LegacyArgs { flags: OwnArgs::from_arg_matches(matches)?, unused })
    }

    /// The scheduler `--fifo` or `--custom` names, if either was given (`--fifo` wins).
    pub fn scheduler(&self) -> Option<&str> {
        if self.flags.fifo { Some("fifo") } else { self.flags.custom.as_deref() }
    }

    /// Where `--output` sends stdout's lines (`None`: to stdout).
    pub fn output(&self) -> Option<&Path> {
        self.flags.output.as_deref().filter(|path| *path != Path::new("stdout"))
    }

    /// A value Tomii 1.2 refused, as the error it gave.
    pub fn refused(&self) -> Option<String> {
        self.unused.iter().find_map(|(unused, value)| without_effect(unused.flag, value.as_deref())?.err())
    }

    /// One warning per flag given that has no effect here, and for `--fifo` with `--custom`.
    pub fn warnings(&self, network: bool) -> Vec<String> {
        let mut warnings = Vec::new();
        if let (true, Some(custom)) = (self.flags.fifo, &self.flags.custom) {
            warnings.push(format!(
                "--fifo and --custom {custom} (Tomii 1.2) both name a scheduler: --fifo wins, as it did in Tomii 1.2"
            ));
        }
        if self.flags.slot_priority && !network {
            warnings.push(format!("--slot-priority (Tomii 1.2) {SLOT_PRIORITY_WITHOUT_NETWORK}"));
        }
        let unused = self.unused.iter().filter_map(|(unused, value)| without_effect(unused.flag, value.as_deref()));
        warnings.extend(unused.filter_map(Result::ok));
        warnings
    }
}
