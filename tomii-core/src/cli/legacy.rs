//! Tomii 1.2's spellings of `tomii run`, so that its users' scripts run unchanged: the flags that
//! mean what they meant there (hidden, next to this runtime's own), and those that mean nothing
//! here, accepted with one warning line each. The table [`SPELLINGS`] lists every one of them;
//! `tests/knobs.rs` checks it against the hidden flags, `tests/v12_cli.rs` runs each.
//!
//! Only the shape of those flags and what they turn into; the run itself never sees them.

use std::path::{Path, PathBuf};

use clap::Args;

/// What a Tomii 1.2 flag of `tomii run` is here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Meaning {
    /// Another spelling of this runtime's flag (an alias, or a hidden flag that sets it).
    Same(&'static str),
    /// Accepted and ignored, with a warning giving the reason.
    NoEffect(&'static str),
}

/// Every Tomii 1.2 spelling `tomii run` takes besides its own flags, with what it is here.
pub const SPELLINGS: &[(&str, Meaning)] = &[
    ("--json", Meaning::Same("GRAPH")),
    ("--max-frames", Meaning::Same("--frames")),
    ("--max-streams", Meaning::Same("--frames")),
    ("--fifo", Meaning::Same("--scheduler fifo")),
    ("--custom", Meaning::Same("--scheduler NAME (without NAME: --scheduler priority, 1.2's priority scheduler)")),
    ("--exclude-streams", Meaning::Same("--warmup-frames")),
    ("--max-runtime", Meaning::Same("--max-runtime-s")),
    ("--output", Meaning::Same("where the lines printed on stdout go (`stdout`: there)")),
    ("--system-threads", Meaning::NoEffect("workers propagate dependencies themselves; there are no system threads")),
    ("--coalesce-barriers", Meaning::NoEffect("barriers are counted per instance, with nothing to coalesce")),
    (
        "--batching-size",
        Meaning::NoEffect(
            "completions are not batched on their way to a system thread; see --pop-batch for the scheduler's side",
        ),
    ),
    ("--core-offset", Meaning::NoEffect("workers are not pinned to cores")),
    ("--use-rdtsc", Meaning::NoEffect("kernels are always timed with the cycle counter where it is invariant")),
];

/// The Tomii 1.2 flags of `tomii run` that are not aliases of its own (see [`SPELLINGS`]).
#[derive(Args, Clone, Debug, Default)]
pub struct LegacyArgs {
    /// Tomii 1.2: the fifo scheduler (`--scheduler fifo`).
    #[arg(long, hide = true, conflicts_with_all = ["custom", "scheduler", "scheduler_plugin"])]
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
    #[arg(long, hide = true, value_name = "N")]
    pub system_threads: Option<String>,
    #[arg(long, hide = true)]
    pub coalesce_barriers: bool,
    #[arg(long, hide = true, value_name = "N")]
    pub batching_size: Option<String>,
    #[arg(long, hide = true, value_name = "N")]
    pub core_offset: Option<String>,
    #[arg(long, hide = true)]
    pub use_rdtsc: bool,
}

impl LegacyArgs {
    /// The scheduler `--fifo` or `--custom` names, if either was given.
    pub fn scheduler(&self) -> Option<&str> {
        if self.fifo { Some("fifo") } else { self.custom.as_deref() }
    }

    /// Where `--output` sends stdout's lines (`None`: to stdout).
    pub fn output(&self) -> Option<&Path> {
        self.output.as_deref().filter(|path| *path != Path::new("stdout"))
    }

    /// One warning per flag given that has no effect here.
    pub fn warnings(&self) -> Vec<String> {
        let given = [
            ("--system-threads", self.system_threads.is_some()),
            ("--coalesce-barriers", self.coalesce_barriers),
            ("--batching-size", self.batching_size.is_some()),
            ("--core-offset", self.core_offset.is_some()),
            ("--use-rdtsc", self.use_rdtsc),
        ];
        given.into_iter().filter(|(_, on)| *on).map(|(flag, _)| no_effect(flag)).collect()
    }
}

/// The warning for a Tomii 1.2 flag that means nothing here.
fn no_effect(flag: &str) -> String {
    let why = SPELLINGS.iter().find_map(|(name, meaning)| match meaning {
        Meaning::NoEffect(why) if *name == flag => Some(*why),
        _ => None,
    });
    format!("{flag} (Tomii 1.2) has no effect here: {}", why.unwrap_or("it has no use in this runtime"))
}
