//! What the `tomii` command does: `tomii run GRAPH --dylib KERNELS.so ...` replays a graph and
//! reports; `tomii schedulers`, `tomii knobs` and `tomii schema` describe what a run accepts. The
//! binary (src/bin/tomii.rs) and the Python package's `tomii` command both call [`main`]; the
//! Python one adds its kernels through a [`KernelProvider`].
//!
//! Every failure is one line on stderr starting with `error:` and a non-zero exit status; the
//! command never shows a panic trace for bad input.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result, bail};
use clap::Parser;

use super::{Cli, Command, KnobsArgs, RunArgs, SchedulersArgs, SchemaArgs};
use crate::engine::{self, Progress, ProgressFn, Report, RunFailure};
use crate::graph::{self, CompiledGraph};
use crate::knobs::{self, Entry, Value};
use crate::launch::{self, Hooks, Launch, Outputs, SayFn};
use crate::plugin::{KernelLibrary, KernelSet, SchedulerPlugin, installed_schedulers, scheduler_search_path};

/// Kernels that an embedding program provides in-process, next to those of `--dylib` libraries.
pub trait KernelProvider {
    /// A library holding those of the `wanted` kernel names this provider knows (none when it
    /// knows none of them); the caller keeps whatever the library points into alive for the run.
    /// `beside` is the graph file's directory: kernels may live there (Python modules next to
    /// the graph).
    fn provide(&self, wanted: &[String], beside: &Path) -> Result<Option<KernelLibrary>>;
}

/// Runs the command line `args` (the program name first) and returns the exit status.
pub fn main(args: impl IntoIterator<Item = OsString>, provider: Option<&dyn KernelProvider>) -> u8 {
    super::crash::install();
    let cli = match Cli::try_parse_from(as_tomii_1_2_called(args.into_iter().collect())) {
        Ok(cli) => cli,
        Err(error) => return usage_error(error),
    };
    let result = match cli.command {
        Command::Run(args) => run(*args, provider),
        Command::Schedulers(args) => list_schedulers(&args),
        Command::Knobs(args) => list_knobs(&args),
        Command::Schema(args) => print_schema(&args),
        Command::Convert(args) => super::convert::convert(&args),
        Command::Send(args) => super::send::send(args),
        Command::Simulate(args) => super::simulate::simulate(&args),
        Command::Replay(args) => super::replay::replay(&args),
        Command::Sweep(_) => Err(anyhow::anyhow!(
            "`tomii sweep` is part of the Python package: `pip install .` from the repository, then run the \
             `tomii` command it installs (or `python -m tomii.experiments CONFIG`)"
        )),
        Command::Tune(_) => Err(anyhow::anyhow!(
            "`tomii tune` is part of the Python package: `pip install .` from the repository, then run the \
             `tomii` command it installs (or `python -m tomii.tune CONFIG`)"
        )),
        Command::New(_) | Command::Sdk(_) | Command::Build(_) | Command::Migrate(_) => Err(anyhow::anyhow!(
            "`tomii new`, `tomii sdk`, `tomii build` and `tomii migrate` are part of the Python package: `pip install .` from the repository, \
             then run the `tomii` command it installs"
        )),
    };
    match result {
        Ok(()) => 0,
        // The reader went away (`tomii schedulers | head`): nothing is left to say to it.
        Err(error) if is_broken_pipe(&error) => 0,
        Err(error) if error.is::<Reported>() => 1,
        Err(error) if error.is::<StoppedNow>() => 130,
        Err(error) => {
            eprintln!("error: {}", one_line(&error));
            1
        }
    }
}

/// Tomii 1.2's scripts call its binary `main` with the flags of a run and no subcommand
/// (`main --json G --dylib L ...`): a command line that starts with a flag, or a binary named
/// `main` (a link or copy of this one), is `tomii run`. `--help` and `--version` alone stay the
/// command's own.
fn as_tomii_1_2_called(mut args: Vec<OsString>) -> Vec<OsString> {
    let called_main = args.first().and_then(|name| Path::new(name).file_stem()).is_some_and(|stem| stem == "main");
    let first = args.get(1).and_then(|arg| arg.to_str()).unwrap_or_default();
    let own = matches!(first, "-h" | "--help" | "-V" | "--version");
    let flag_first = first.starts_with("--") && !own;
    if (called_main && first != "run" && !matches!(first, "-V" | "--version")) || flag_first {
        args.insert(1.min(args.len()), OsString::from("run"));
    }
    args
}

/// A failure already reported on stderr (with what the run kept): the exit status only.
#[derive(Debug, thiserror::Error)]
#[error("the run failed")]
struct Reported;

/// Writes one line to stdout; an error (a closed pipe, a full disk) is returned, not a panic.
pub(crate) fn say(line: impl std::fmt::Display) -> Result<()> {
    use std::io::Write;
    writeln!(std::io::stdout().lock(), "{line}").context("cannot write to stdout")
}

/// One line for stdout, or appended to `output` (Tomii 1.2's `--output FILE`).
fn say_to(output: Option<&Path>, line: impl std::fmt::Display) -> Result<()> {
    let Some(path) = output else { return say(line) };
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .and_then(|mut file| writeln!(file, "{line}"))
        .with_context(|| format!("{}: cannot write the output", path.display()))
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error
        .chain()
        .any(|cause| cause.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe))
}

/// `--help` and `--version` print as usual; a usage error becomes one `error:` line, exit 2.
fn usage_error(error: clap::Error) -> u8 {
    use clap::error::ErrorKind;
    if matches!(error.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = error.print();
        return 0;
    }
    // The message and what it lists (the missing arguments, say), up to the usage.
    let text = error.to_string();
    let said: Vec<&str> =
        text.lines().take_while(|line| !line.trim().is_empty() && !line.starts_with("Usage:")).map(str::trim).collect();
    let said = if said.is_empty() { "invalid arguments".to_owned() } else { said.join(" ") };
    eprintln!("error: {} (see tomii --help)", said.trim_start_matches("error: "));
    2
}

/// The longest error line printed; a longer one is cut, saying how much was left out.
const MAX_ERROR_LINE: usize = 2000;

/// The error and its causes on one line, each cause once (many errors already quote their cause),
/// at most [`MAX_ERROR_LINE`] bytes of it.
fn one_line(error: &anyhow::Error) -> String {
    let line = joined(error);
    if line.len() <= MAX_ERROR_LINE {
        return line;
    }
    let mut cut = MAX_ERROR_LINE;
    while !line.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… ({} more bytes)", &line[..cut], line.len() - cut)
}

fn joined(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain().map(|cause| cause.to_string()) {
        if !line.contains(&cause) {
            if !line.is_empty() {
                line.push_str(": ");
            }
            line.push_str(&cause);
        }
    }
    line.replace('\n', " ")
}

fn run(args: RunArgs, provider: Option<&dyn KernelProvider>) -> Result<()> {
    // First of all: a Ctrl-C while the plugins load and the graph compiles stops the run before
    // its first frame, which then reports what it has (nothing) rather than dying by the signal.
    let interrupt = stop_on_interrupt(true)?;
    let graph_path = args.graph.path();
    let mut given = args.options;
    if let Some(name) = args.legacy.scheduler() {
        given.push(("scheduler".to_owned(), Value::Text(name.to_owned())));
    }
    if args.legacy.flags.slot_priority {
        given.push(("on_slots_busy".to_owned(), Value::Text("wait".to_owned())));
    }
    if let Some(error) = args.legacy.refused() {
        bail!("{error}");
    }
    let settings = launch::settings(Entry::Run, given).map_err(anyhow::Error::msg)?;
    let output = args.legacy.output().map(Path::to_owned);
    if let Some(path) = &output {
        crate::files::check_writable(path, "--output", Some(("the graph file", graph_path)))
            .map_err(anyhow::Error::msg)?;
        std::fs::File::create(path).with_context(|| format!("{}: cannot write the output here", path.display()))?;
    }
    // The kernels are loaded before the graph compiles: a count may name a computed
    // initialization, computed then, once, and handed to the run (graph README, "Computed counts").
    let mut kernels = settings.kernels(None)?;
    let beside = graph_dir(Some(graph_path));
    let input = {
        let kernels = &mut kernels;
        let mut evaluate = |pending: &graph::PendingInits<'_>, values: &mut Vec<Vec<tomii_types::kernel::Value>>| {
            let functions: Vec<String> = pending.computed.iter().map(|init| init.function.clone()).collect();
            add_provided(kernels, functions, &beside, provider).map_err(|error| graph::InitFailure {
                init: pending.computed.get(values.len()).map(|init| init.name.clone()).unwrap_or_default(),
                message: format!("{error:#}"),
            })?;
            engine::evaluator(kernels)(pending, values)
        };
        launch::graph_from_file_evaluating(graph_path, settings.run.workers, &mut evaluate)?
    };
    super::convert::warn(&input.graph.warnings, settings.verbose);
    if args.legacy.flags.inits {
        say_to(
            output.as_deref(),
            super::inits::listing(&input.graph, settings.run.workers).strip_suffix('\n').unwrap_or_default(),
        )?;
    }
    add_provided(&mut kernels, kernel_names(&input.graph), &beside, provider)?;
    if !settings.quiet {
        for warning in args.legacy.warnings(input.graph.network.is_some()) {
            eprintln!("warning: {warning}");
        }
    }
    let scheduler = settings.scheduler()?;
    let launch = Launch::new(input, settings)?;
    let quiet = launch.settings().quiet;
    let ending = Ending {
        frames: launch.settings().run.frames,
        outputs: launch.outputs(),
        output,
        max_runtime_s: launch.settings().max_runtime_s,
        timed_out: launch.timed_out(),
        quiet,
    };
    let hooks = Hooks {
        stop: Some(Arc::clone(&interrupt.stop)),
        stop_grace: Some(STOP_GRACE),
        stop_now: Some(Arc::clone(&interrupt.now)),
        progress: (!quiet && std::io::stderr().is_terminal()).then(progress_line),
        on_hang: Some(exit_when_stuck(Some(Arc::clone(&interrupt.now)), {
            let ending = ending.clone();
            move |result| ending.finish(result)
        })),
        on_listening: (!quiet)
            .then(|| -> SayFn { Arc::new(|source: &str| eprintln!("listening on {source} (Ctrl-C stops)")) }),
    };
    let progress = hooks.progress.is_some();
    let report = launch.settings().files.report.clone();
    let in_progress = super::crash::RunInProgress::start(&scheduler, &kernels, report.as_deref());
    let result = launch.run(&kernels, &scheduler, hooks);
    drop(in_progress);
    let stopped_now = interrupt.now();
    drop(interrupt);
    if progress {
        eprint!("\r\x1b[2K");
    }
    let ended = ending.finish(result);
    if !stopped_now {
        return ended;
    }
    // A second Ctrl-C: whatever the outcome (written, and said), the status is 130.
    if let Err(error) = ended.as_ref()
        && !error.is::<Reported>()
    {
        eprintln!("error: {}", one_line(error));
    }
    Err(StoppedNow.into())
}

/// The directory of the graph file (kernels a provider finds may live there).
fn graph_dir(path: Option<&Path>) -> PathBuf {
    let path = path.unwrap_or(Path::new("."));
    path.parent().filter(|dir| !dir.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_owned()
}

/// Adds to `kernels` those of the `names` that `provider` knows and `kernels` do not hold.
fn add_provided(
    kernels: &mut KernelSet,
    names: Vec<String>,
    beside: &Path,
    provider: Option<&dyn KernelProvider>,
) -> Result<()> {
    let Some(provider) = provider else { return Ok(()) };
    let mut wanted: Vec<String> =
        names.into_iter().filter(|name| kernels.resolve(String::new, name).is_err()).collect();
    wanted.sort();
    wanted.dedup();
    if wanted.is_empty() {
        return Ok(());
    }
    if let Some(library) = provider.provide(&wanted, beside)? {
        kernels.add(library)?;
    }
    Ok(())
}

/// What the command does with a run's outcome: write the report and the trace's files, say how
/// the run went.
#[derive(Clone)]
struct Ending {
    /// The frames asked for (0: until Ctrl-C).
    frames: u64,
    /// The run's files, ended with its report.
    outputs: Arc<Outputs>,
    /// Where stdout's lines go instead (`--output`).
    output: Option<PathBuf>,
    /// `--max-runtime-s`, and whether it stopped the run.
    max_runtime_s: u64,
    timed_out: Arc<AtomicBool>,
    quiet: bool,
}

impl Ending {
    fn finish(&self, result: Result<engine::RunOutcome, RunFailure>) -> Result<()> {
        let outcome = match result {
            Ok(outcome) => outcome,
            Err(failure) if failure.partial.is_none() => {
                // Nothing ran: the files are ended all the same, so that they stay readable.
                let _ = self.outputs.finish(None);
                return Err(failure.error.into());
            }
            Err(failure) => {
                self.report_failure(&failure);
                return Err(Reported.into());
            }
        };
        let report = &outcome.report;
        let written = self.outputs.finish(Some(report));
        note_written(&written);
        written.result().map_err(anyhow::Error::msg)?;
        if !self.quiet {
            self.say(summary(report))?;
            if let Some(network) = report.source_section.get("network") {
                self.say(network_summary(network))?;
            }
        }
        if report.interrupted && self.timed_out.load(Ordering::Relaxed) {
            eprintln!(
                "stopped: --max-runtime-s {} reached after {} frame(s); the report and trace hold them",
                self.max_runtime_s,
                report.frames + report.frames_excluded
            );
        } else if report.interrupted {
            eprintln!(
                "interrupted: stopped after {} frame(s); the report and trace hold them (Ctrl-C again quits at once)",
                report.frames + report.frames_excluded
            );
        }
        if let Some(ejection) = &report.scheduler.ejected {
            eprintln!(
                "warning: scheduler {:?} was ejected after {} frame(s) ({}); the run finished on the host's FIFO",
                report.scheduler.name, ejection.frames_done, ejection.violation
            );
        }
        if !report.workers_unreported.is_empty() {
            let listed: Vec<String> = report.workers_unreported.iter().map(u32::to_string).collect();
            eprintln!(
                "warning: worker(s) {} stayed stuck in the scheduler; their tasks are not counted",
                listed.join(", ")
            );
        }
        if let Some(note) = trace_note(report).filter(|note| !self.quiet || note.starts_with("warning")) {
            eprintln!("{note}");
        }
        Ok(())
    }

    /// One line for stdout, or for the `--output` file.
    fn say(&self, line: impl std::fmt::Display) -> Result<()> {
        say_to(self.output.as_deref(), line)
    }

    /// Says why the run failed and how far it got, and writes what it did to the report, the
    /// timing file and the record (the trace streamed to its file as the run went).
    fn report_failure(&self, failure: &RunFailure) {
        eprintln!("error: {}", one_line(&anyhow::anyhow!("{}", failure.error)));
        let Some(partial) = &failure.partial else { return };
        let report = &partial.report;
        let written = self.outputs.finish(Some(report));
        note_written(&written);
        for error in &written.errors {
            eprintln!("error: {error}");
        }
        let planned = if self.frames > 0 { format!(" of {}", self.frames) } else { String::new() };
        let holds = match written.kept.as_slice() {
            [] => String::new(),
            [one] => format!("; {one} holds what ran"),
            [rest @ .., last] => format!("; {} and {last} hold what ran", rest.join(", ")),
        };
        let stuck = match report.workers_unreported.as_slice() {
            [] => String::new(),
            workers => {
                let listed: Vec<String> = workers.iter().map(u32::to_string).collect();
                format!(" (not counting stuck worker(s) {})", listed.join(", "))
            }
        };
        eprintln!(
            "the run stopped after {} frame(s){planned} and {} task(s){stuck} in {:.2} s{holds}",
            report.frames + report.frames_excluded,
            report.tasks,
            report.wall_time_s
        );
        if let Some(note) = trace_note(report) {
            eprintln!("{note}");
        }
    }
}

/// Tells the crash report that the run's report is written, once it is: a crash afterwards (a
/// plugin's corruption found at exit) says so.
fn note_written(written: &launch::Written) {
    if written.kept.iter().any(|kept| kept.starts_with("the report (")) {
        super::crash::report_written();
    }
}

/// Every kernel name the graph calls: nodes, their conditions, computed initializations, post-nodes,
/// the network source's kernels.
fn kernel_names(graph: &CompiledGraph) -> Vec<String> {
    let nodes = graph
        .nodes
        .iter()
        .filter(|n| !n.input)
        .flat_map(|n| [Some(&n.function), n.condition.as_ref().map(|c| &c.function)]);
    let others =
        graph.computed.iter().map(|i| Some(&i.function)).chain(graph.post.iter().map(|p| Some(&p.node.function)));
    let network = graph.network.iter().flat_map(|n| {
        [n.extract_packet_func.as_ref(), n.id_function.as_ref(), n.index_function.as_ref().map(|(f, _)| f)]
    });
    let mut names: Vec<String> = nodes.chain(others).chain(network).flatten().cloned().collect();
    names.sort();
    names.dedup();
    names
}

/// `tomii schedulers`: every scheduler found by name, loaded and checked, with its options.
fn list_schedulers(args: &SchedulersArgs) -> Result<()> {
    let mut listed = Vec::new();
    for (name, path) in installed_schedulers() {
        // One scheduler that cannot load, or whose options cannot be read, is listed with why;
        // it never hides the others.
        let loaded = SchedulerPlugin::load(&path).and_then(|plugin| Ok((plugin.knobs()?, plugin)));
        let entry = match loaded {
            Ok((options, plugin)) => serde_json::json!({
                "name": name,
                "path": plugin.path,
                "layout_checked": plugin.layout_checked,
                "flags": plugin.flags(),
                "options": options,
            }),
            Err(error) => serde_json::json!({ "name": name, "path": path, "error": error.to_string() }),
        };
        listed.push(entry);
    }
    if args.json {
        say(serde_json::to_string_pretty(&listed)?)?;
        return Ok(());
    }
    if listed.is_empty() {
        bail!("no scheduler found: looked in {}", search_path_text());
    }
    for entry in &listed {
        print_scheduler(entry)?;
    }
    Ok(())
}

/// `tomii knobs`: the knob catalog, as a table or as JSON.
fn list_knobs(args: &KnobsArgs) -> Result<()> {
    if args.json {
        say(serde_json::to_string_pretty(&knobs::LISTING)?)?;
    } else {
        say(knobs::to_table().trim_end())?;
    }
    Ok(())
}

/// `tomii schema`: the JSON Schema of the graph format, or with `--report` of the run report.
fn print_schema(args: &SchemaArgs) -> Result<()> {
    let schema = match (args.report, args.dialect.as_str()) {
        (true, _) => engine::report_schema(),
        (false, "tomii-1.2") => graph::schema_of(graph::Dialect::Tomii12),
        (false, _) => graph::schema(),
    };
    say(serde_json::to_string_pretty(&schema)?)?;
    Ok(())
}

fn search_path_text() -> String {
    scheduler_search_path().iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
}

fn print_scheduler(entry: &serde_json::Value) -> Result<()> {
    let text = |key: &str| entry[key].as_str().unwrap_or_default().to_owned();
    if let Some(error) = entry["error"].as_str() {
        return say(format!("{}  (cannot load: {error})", text("name")));
    }
    let check = if entry["layout_checked"].as_bool() == Some(true) { "full layout checked" } else { "C-level checks" };
    say(format!("{}  {}  ({check})", text("name"), text("path")))?;
    for option in entry["options"].as_array().into_iter().flatten() {
        let field = |key: &str| option[key].as_str().unwrap_or_default().to_owned();
        let domain = if field("domain").is_empty() { String::new() } else { format!(" in {}", field("domain")) };
        say(format!(
            "    --sched-opt {}=<{}{domain}>  (default {}): {}",
            field("name"),
            field("kind"),
            field("default"),
            field("description")
        ))?;
    }
    Ok(())
}

/// How long `tomii run` waits, once stopped (Ctrl-C, SIGTERM, `--max-runtime-s`) or failed, for
/// the frames in flight to complete: past it, the run ends without them, with its report, naming
/// the calls it waited for, and exits with status 1 (engine/README.md, "A run that cannot stop").
/// Below the 10 s a container runtime gives a stopped container before it kills it.
pub(super) const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// The flags SIGINT and SIGTERM set. The first signal sets `stop`: the run stops starting frames,
/// completes those in flight and reports. With `then_now`, the second sets `now`: the run ends at
/// once without the frames in flight, writes its report and the command exits with status 130;
/// a third exits at once (status 130, no report). Without it, the second exits at once. The
/// handlers last as long as this value: a command run inside a Python process (`tomii._tomii.
/// cli_main`) leaves Python's own handler to serve the next Ctrl-C.
pub(super) struct StopOnInterrupt {
    pub stop: Arc<AtomicBool>,
    pub now: Arc<AtomicBool>,
    handlers: Vec<signal_hook::SigId>,
}

pub(super) fn stop_on_interrupt(then_now: bool) -> Result<StopOnInterrupt> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let (stop, now) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
    let mut interrupt = StopOnInterrupt { stop: Arc::clone(&stop), now: Arc::clone(&now), handlers: Vec::new() };
    for signal in [SIGINT, SIGTERM] {
        let (stop, now) = (Arc::clone(&stop), Arc::clone(&now));
        let action = move || {
            if stop.load(Ordering::SeqCst) && (!then_now || now.load(Ordering::SeqCst)) {
                signal_hook::low_level::exit(130);
            }
            let flag = if stop.load(Ordering::SeqCst) { &now } else { &stop };
            flag.store(true, Ordering::SeqCst);
        };
        // SAFETY: the action only loads and stores atomics and calls `_exit`, all of which a
        // signal handler may do.
        let handler = unsafe { signal_hook::low_level::register(signal, action) }
            .context("cannot install the interrupt handler")?;
        interrupt.handlers.push(handler);
    }
    Ok(interrupt)
}

impl StopOnInterrupt {
    /// Whether a second signal asked to end at once: the command then exits with status 130.
    pub(super) fn now(&self) -> bool {
        self.now.load(Ordering::SeqCst)
    }
}

/// The command was asked to end at once (a second Ctrl-C) and did, having said why: status 130.
#[derive(Debug, thiserror::Error)]
#[error("stopped at once")]
struct StoppedNow;

impl Drop for StopOnInterrupt {
    fn drop(&mut self) {
        for handler in self.handlers.drain(..) {
            signal_hook::low_level::unregister(handler);
        }
    }
}

/// A call stuck in a plugin cannot be stopped, and the run cannot end while it is stuck: end the
/// command with `finish` (what it does with a run's outcome), given the outcome made without the
/// stuck worker, and exit; with status 130 if `now` says a second Ctrl-C ended the run.
pub(super) fn exit_when_stuck(
    now: Option<Arc<AtomicBool>>,
    finish: impl Fn(Result<engine::RunOutcome, RunFailure>) -> Result<()> + Send + Sync + 'static,
) -> engine::HangFn {
    engine::HangFn(Arc::new(move |result| {
        let status = match finish(result) {
            Ok(()) => 0,
            Err(error) if error.is::<Reported>() => 1,
            Err(error) => {
                eprintln!("error: {}", one_line(&error));
                1
            }
        };
        let stopped_now = now.as_ref().is_some_and(|now| now.load(Ordering::SeqCst));
        super::crash::exit_from_host(if stopped_now { 130 } else { status });
    }))
}

/// A progress line on stderr, rewritten in place (only when stderr is a terminal).
pub(super) fn progress_line() -> ProgressFn {
    ProgressFn(Arc::new(|p: Progress| {
        let rate = p.frames_done as f64 / p.elapsed.as_secs_f64().max(1e-9);
        let done = if p.frames > 0 {
            format!("frame {}/{} ({:.0}%)", p.frames_done, p.frames, 100.0 * p.frames_done as f64 / p.frames as f64)
        } else {
            format!("frame {} (Ctrl-C stops)", p.frames_done)
        };
        eprint!("\r\x1b[2K{done}, {:.1} s, {rate:.0} frames/s", p.elapsed.as_secs_f64());
    }))
}

/// One line on a network run's packets: received, accepted, dropped by cause, incomplete frames.
fn network_summary(network: &serde_json::Value) -> String {
    let count = |key: &str| network[key].as_u64().unwrap_or(0);
    let drops: Vec<String> = network["packets_dropped"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(cause, n)| n.as_u64().filter(|&n| n > 0).map(|n| format!("{n} {cause}")))
        .collect();
    let drops = if drops.is_empty() { "none dropped".to_owned() } else { format!("dropped {}", drops.join(", ")) };
    let error =
        network["first_source_error"].as_str().map(|e| format!("; first source error: {e}")).unwrap_or_default();
    let stray = match count("frames_stray") {
        0 => String::new(),
        n => format!(", {n} stray"),
    };
    format!(
        "packets: {} received, {} accepted, {drops}; frames: {} complete, {} incomplete, {} dropped, {} \
         failed{stray}{error}",
        count("packets_received"),
        count("packets_accepted"),
        count("frames_complete"),
        count("frames_incomplete"),
        count("frames_dropped"),
        count("frames_failed"),
    )
}

/// What the trace cost the run, when it matters: records lost (a warning: the trace and every file
/// made from it miss them), or the workers' wait for a trace that could not keep up with them (a
/// note, past 1 % of their time: every record was kept, at the price of the run's pace).
pub(super) fn trace_note(report: &Report) -> Option<String> {
    if report.trace_lost > 0 {
        return Some(format!(
            "warning: the trace lost {} record(s), made after the host had left the run; the trace and the files made \
             from it (timing, record, decisions) miss them",
            report.trace_lost
        ));
    }
    let worker_s = report.wall_time_s * f64::from(report.workers);
    (report.trace_wait_s > 0.01 * worker_s).then(|| {
        format!(
            "note: the trace could not keep up: the workers waited {:.2} s for it ({:.0}% of their time); every \
             record was kept, and the run went at the trace's pace",
            report.trace_wait_s,
            100.0 * report.trace_wait_s / worker_s
        )
    })
}

pub(super) fn summary(report: &Report) -> String {
    let l = &report.latency_us;
    format!(
        "{} on {}: {} frames ({} tasks) in {:.3} s: {:.0} frames/s, {:.0} tasks/s; frame latency p50 {:.1} µs, p95 {:.1} µs, p99 {:.1} µs",
        report.scheduler.name,
        if report.graph.is_empty() { "graph" } else { &report.graph },
        report.frames,
        report.tasks,
        report.wall_time_s,
        report.throughput_frames_per_s,
        report.tasks_per_s,
        l.p50,
        l.p95,
        l.p99
    ) + &match report.frames_excluded {
        0 => String::new(),
        n => format!("; {n} warm-up frame(s) left out"),
    }
}
