//! Reading callgrind's output for the `instructions` binary: the instructions each thread of one
//! run executed, from the files `valgrind --tool=callgrind --separate-threads=yes` writes (one per
//! thread), and the instructions per task of a large run minus a small one, so that start-up
//! cancels.
//!
//! Reads each file's header and totals lines only, never its cost lines; knows nothing of the
//! engine, so the worker is found from the figures alone: of the threads the main thread started,
//! the one that grew most.

use std::collections::BTreeMap;
use std::path::Path;

/// The instructions one thread executed in one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadInstructions {
    /// callgrind's thread number (`thread:` in the file's header): 1 is the main thread.
    pub thread: u32,
    /// The `Ir` event of the file's `totals:` line (its `summary:` line when there is none).
    pub instructions: u64,
}

/// Parses one per-thread callgrind file; `name` is only for messages.
pub fn parse_thread_file(name: &str, text: &str) -> Result<ThreadInstructions, String> {
    let (mut thread, mut events, mut summary, mut totals) = (None, None, None, None);
    for line in text.lines() {
        if let Some((key, value)) = line.split_once(':') {
            match key {
                "thread" => thread = Some(value),
                "events" => events = Some(value),
                "summary" => summary = Some(value),
                "totals" => totals = Some(value),
                _ => {}
            }
        }
    }
    let missing =
        |what: &str| format!("{name}: no `{what}:` line (is this a callgrind file of --separate-threads=yes?)");
    let thread = thread.ok_or_else(|| missing("thread"))?.trim();
    let thread = thread.parse().map_err(|_| format!("{name}: thread {thread:?} is not a number"))?;
    let ir = events
        .ok_or_else(|| missing("events"))?
        .split_whitespace()
        .position(|event| event == "Ir")
        .ok_or_else(|| format!("{name}: callgrind did not count instructions (no Ir event)"))?;
    let counts = totals.or(summary).ok_or_else(|| missing("totals"))?;
    let instructions = match counts.split_whitespace().nth(ir) {
        Some(count) => count.parse().map_err(|_| format!("{name}: instruction count {count:?} is not a number"))?,
        None => 0, // callgrind leaves out trailing zero counts
    };
    Ok(ThreadInstructions { thread, instructions })
}

/// Every thread of one run: the non-empty files in `dir` (callgrind also leaves an empty file under
/// the bare `--callgrind-out-file` name), sorted by thread.
pub fn read_run(dir: &Path) -> Result<Vec<ThreadInstructions>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut threads = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        if !text.is_empty() {
            threads.push(parse_thread_file(&path.display().to_string(), &text)?);
        }
    }
    if threads.is_empty() {
        return Err(format!("{}: callgrind wrote no thread file", dir.display()));
    }
    threads.sort_by_key(|t| t.thread);
    Ok(threads)
}

/// callgrind's number for the process's first thread, which starts the run and waits for it.
pub const MAIN_THREAD: u32 = 1;

/// The worker's instructions per task of a large run minus a small one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PerTask {
    /// The worker: of the threads the main thread started, the one whose instructions grew most
    /// (threads matched by number).
    pub worker_thread: u32,
    /// The worker's growth ÷ the extra tasks.
    pub instructions: f64,
    /// Threads seen in either run, the main thread included.
    pub threads: usize,
}

/// The worker's per-task figure of `large` minus `small`, which ran `extra_tasks` more tasks. A
/// thread present in one run only counts as 0 instructions in the other.
///
/// The main thread is never the worker, and its own count is no figure: its start-up calibrates
/// the clock for a fixed time, so under callgrind it varies by millions of instructions between
/// identical runs, while a worker's varies by a few dozen.
pub fn per_task(
    small: &[ThreadInstructions],
    large: &[ThreadInstructions],
    extra_tasks: u64,
) -> Result<PerTask, String> {
    if extra_tasks == 0 {
        return Err("the large run must run more tasks than the small one".into());
    }
    let mut growth: BTreeMap<u32, i128> = BTreeMap::new();
    for t in large {
        *growth.entry(t.thread).or_default() += i128::from(t.instructions);
    }
    for t in small {
        *growth.entry(t.thread).or_default() -= i128::from(t.instructions);
    }
    let (&worker_thread, &worker) = growth
        .iter()
        .filter(|&(&thread, _)| thread != MAIN_THREAD)
        .max_by_key(|&(&thread, &grew)| (grew, std::cmp::Reverse(thread)))
        .ok_or("no thread but the main one: the run started no worker")?;
    if worker <= 0 {
        return Err(format!("no worker executed more instructions in the large run (growth by thread: {growth:?})"));
    }
    Ok(PerTask { worker_thread, instructions: worker as f64 / extra_tasks as f64, threads: growth.len() })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\npid: 7168\n\
        cmd:  target/release/tomii run w1.json\npart: 1\nthread: 2\n\ndesc: I1 cache: \n\
        positions: line\nevents: Ir\nsummary: 128705\n\nob=(5) /usr/bin/tomii\nfn=(536) thread:x\n\
        0 4\n+3 5\n\ntotals: 128705\n";

    fn counts(pairs: &[(u32, u64)]) -> Vec<ThreadInstructions> {
        pairs.iter().map(|&(thread, instructions)| ThreadInstructions { thread, instructions }).collect()
    }

    #[test]
    fn reads_the_thread_and_its_totals() {
        assert_eq!(parse_thread_file("f", FILE), Ok(ThreadInstructions { thread: 2, instructions: 128_705 }));
    }

    #[test]
    fn totals_win_over_the_summary_and_ir_is_found_among_events() {
        let text = "thread: 3\nevents: Dr Ir Dw\nsummary: 1 2 3\ntotals: 10 20 30\n";
        assert_eq!(parse_thread_file("f", text), Ok(ThreadInstructions { thread: 3, instructions: 20 }));
        let text = "thread: 1\nevents: Ir\nsummary: 77\n";
        assert_eq!(parse_thread_file("f", text).unwrap().instructions, 77);
        let text = "thread: 1\nevents: Dr Ir\ntotals: 5\n";
        assert_eq!(parse_thread_file("f", text).unwrap().instructions, 0);
    }

    #[test]
    fn a_file_without_threads_or_instructions_is_refused_by_name() {
        let err = parse_thread_file("out-01", "events: Ir\ntotals: 5\n").unwrap_err();
        assert!(err.starts_with("out-01: no `thread:` line"), "{err}");
        assert!(parse_thread_file("f", "thread: 1\nevents: Dr\ntotals: 5\n").unwrap_err().contains("no Ir"));
        assert!(parse_thread_file("f", "thread: 1\nevents: Ir\n").unwrap_err().contains("`totals:`"));
        assert!(parse_thread_file("f", "thread: one\nevents: Ir\ntotals: 5\n").is_err());
    }

    #[test]
    fn the_worker_is_the_started_thread_that_grew_most() {
        // The main thread's count moves by more than the worker's growth: it is never the worker.
        let small = counts(&[(1, 9_000_000), (2, 1_000_000), (3, 5_000)]);
        let large = counts(&[(1, 15_000_000), (2, 3_000_000), (3, 6_000)]);
        let figures = per_task(&small, &large, 2_000).unwrap();
        assert_eq!(figures, PerTask { worker_thread: 2, instructions: 1_000.0, threads: 3 });
    }

    #[test]
    fn a_thread_of_one_run_only_counts_as_zero_in_the_other() {
        let small = counts(&[(1, 100), (2, 100)]);
        let large = counts(&[(1, 100), (2, 150), (3, 500)]);
        assert_eq!(per_task(&small, &large, 4).unwrap(), PerTask { worker_thread: 3, instructions: 125.0, threads: 3 });
    }

    #[test]
    fn no_worker_no_growth_or_no_extra_tasks_is_an_error() {
        let same = counts(&[(1, 100), (2, 100)]);
        assert!(per_task(&same, &same, 10).unwrap_err().contains("no worker"));
        assert!(per_task(&same, &counts(&[(1, 100), (2, 200)]), 0).is_err());
        let main_only = per_task(&counts(&[(1, 100)]), &counts(&[(1, 900)]), 10);
        assert!(main_only.unwrap_err().contains("started no worker"));
    }

    #[test]
    fn a_run_is_every_non_empty_file_of_its_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("callgrind.out"), "").unwrap();
        std::fs::write(dir.path().join("callgrind.out-02"), FILE).unwrap();
        std::fs::write(dir.path().join("callgrind.out-01"), FILE.replace("thread: 2", "thread: 1")).unwrap();
        let threads = read_run(dir.path()).unwrap();
        assert_eq!(threads.iter().map(|t| t.thread).collect::<Vec<_>>(), [1, 2]);
        assert!(read_run(&dir.path().join("absent")).is_err());
        let empty = tempfile::tempdir().unwrap();
        assert!(read_run(empty.path()).unwrap_err().contains("no thread file"));
    }
}
