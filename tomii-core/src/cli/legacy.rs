//! Tomii 1.2's spellings of `tomii run`, so that its users' scripts run unchanged: the flags that
//! mean what they meant there (hidden, next to this runtime's own), and those that mean nothing
//! here, accepted with one warning line each. The table [`SPELLINGS`] lists every one of them;
//! `tests/knobs.rs` checks it against the hidden flags, `tests/v12_cli.rs` runs each.
//!
//! Only the shape of those flags and what they turn into; the run itself never sees them.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::Duration;

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

/// Where `--record` without a FILE writes, as Tomii 1.2 did: beside the timing file as
/// `NAME_sched.csv` (NAME: the timing file's name up to its first dot), else `scheduler_record.csv`.
pub fn default_record_path(timing: Option<&Path>) -> PathBuf {
    let Some(timing) = timing else { return PathBuf::from("scheduler_record.csv") };
    let name = timing.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let stem = name.split('.').next().unwrap_or_default();
    timing.with_file_name(format!("{stem}_sched.csv"))
}

/// Sets a run's stop flag once `limit` has passed (`--max-runtime-s`): the run then completes the
/// frames in flight and reports, as after Ctrl-C. Dropping it before cancels it.
pub struct StopTimer {
    fired: Arc<AtomicBool>,
    cancel: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl StopTimer {
    pub fn start(stop: Arc<AtomicBool>, limit: Duration) -> std::io::Result<StopTimer> {
        let fired = Arc::new(AtomicBool::new(false));
        let (cancel, cancelled) = channel::<()>();
        let thread = {
            let fired = Arc::clone(&fired);
            std::thread::Builder::new().name("tomii-max-runtime".into()).spawn(move || {
                if let Err(RecvTimeoutError::Timeout) = cancelled.recv_timeout(limit) {
                    fired.store(true, Ordering::Relaxed);
                    stop.store(true, Ordering::Relaxed);
                }
            })?
        };
        Ok(StopTimer { fired, cancel: Some(cancel), thread: Some(thread) })
    }

    /// A flag that tells whether the limit was reached (and the stop requested).
    pub fn fired(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.fired)
    }
}

impl Drop for StopTimer {
    fn drop(&mut self) {
        drop(self.cancel.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_record_goes_where_tomii_1_2_put_it() {
        assert_eq!(default_record_path(None), PathBuf::from("scheduler_record.csv"));
        assert_eq!(default_record_path(Some(Path::new("out/t.1.txt"))), PathBuf::from("out/t_sched.csv"));
    }

    #[test]
    fn a_cancelled_timer_never_stops_the_run() {
        let stop = Arc::new(AtomicBool::new(false));
        let timer = StopTimer::start(Arc::clone(&stop), Duration::from_secs(3600)).unwrap();
        let fired = timer.fired();
        drop(timer);
        assert!(!stop.load(Ordering::Relaxed) && !fired.load(Ordering::Relaxed));
        let timer = StopTimer::start(Arc::clone(&stop), Duration::from_millis(1)).unwrap();
        while !stop.load(Ordering::Relaxed) {
            std::thread::yield_now();
        }
        let fired = timer.fired();
        drop(timer); // joins the timer's thread: its stores are seen
        assert!(fired.load(Ordering::Relaxed));
    }
}
