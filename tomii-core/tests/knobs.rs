//! The knob catalog (`tomii_core::knobs`) against everything it describes: the clap definition of
//! `tomii run` (every long flag, default and choice), the engine's `RunConfig` defaults and limits,
//! and what `tomii knobs` prints.
//!
//! Needs `cargo build --workspace` first (the engine-limit test loads the fifo scheduler and the
//! synthetic kernels).

mod common;

use std::collections::BTreeSet;

use clap::ArgAction;
use common::cli::{finish, tomii};
use common::{fifo_lib, graph_path, synthetic_lib};
use tomii_core::cli::legacy::{OWN, WITHOUT_EFFECT};
use tomii_core::engine::RunConfig;
use tomii_core::knobs::{self, CATALOG, Choice, Domain, Kind, Knob, Preset};
use tomii_core::network::NetworkOptions;

/// Long flags of `tomii run` that are not knobs, each with the reason.
const NOT_KNOBS: &[(&str, &str)] =
    &[("json", "the graph file (another spelling of GRAPH): the run's input, not an option")];

/// The `run` subcommand, built (so clap has filled in implied defaults such as a flag's `false`).
fn run_command() -> clap::Command {
    let mut command = tomii_core::cli::command();
    command.build();
    command.find_subcommand("run").expect("tomii has a run subcommand").clone()
}

/// Every Tomii 1.2 flag that is not a knob's alias: the flags of `cli::legacy::OWN` and
/// `cli::legacy::WITHOUT_EFFECT`.
fn tomii_1_2_flags() -> Vec<&'static str> {
    OWN.iter().map(|(flag, _)| *flag).chain(WITHOUT_EFFECT.iter().map(|unused| unused.flag)).collect()
}

/// The knob whose flag is `--long`.
fn knob_for(long: &str) -> Option<&'static Knob> {
    CATALOG.iter().find(|knob| knob.cli.strip_prefix("--") == Some(long))
}

fn texts<'a>(items: impl IntoIterator<Item = &'a std::ffi::OsStr>) -> Vec<String> {
    items.into_iter().map(|item| item.to_string_lossy().into_owned()).collect()
}

/// What clap's defaults must be for `knob`'s default. A bool knob's flag flips it from its
/// default, so the flag itself always defaults to `false`.
fn clap_default(knob: &Knob) -> Vec<String> {
    match knob.default {
        Preset::Unset | Preset::Empty => Vec::new(),
        Preset::Int(value) => vec![value.to_string()],
        Preset::Bool(_) => vec!["false".to_owned()],
        Preset::Text(value) => vec![value.to_owned()],
    }
}

/// Every disagreement between one clap argument and its knob.
fn compare(arg: &clap::Arg, knob: &Knob) -> Vec<String> {
    let mut problems = Vec::new();
    let name = knob.name;
    let clap_defaults = texts(arg.get_default_values().iter().map(|d| d.as_os_str()));
    if clap_defaults != clap_default(knob) {
        problems.push(format!("{name}: clap default {clap_defaults:?}, catalog {:?}", knob.default));
    }
    if let Preset::Bool(default) = knob.default
        && default != knob.cli.starts_with("--no-")
    {
        problems.push(format!("{name}: a bool knob defaulting to {default} must be spelled --no-X exactly when true"));
    }
    let action = match knob.kind {
        Kind::Bool => ArgAction::SetTrue,
        Kind::PathList | Kind::KeyValueList => ArgAction::Append,
        Kind::Int | Kind::String | Kind::Path => ArgAction::Set,
    };
    if std::mem::discriminant(arg.get_action()) != std::mem::discriminant(&action) {
        problems.push(format!("{name}: clap action {:?} does not fit type {}", arg.get_action(), knob.kind.name()));
    }
    let clap_choices: Vec<String> = arg.get_possible_values().iter().map(|v| v.get_name().to_owned()).collect();
    let catalog_choices: Vec<String> = match knob.domain {
        Domain::Choice(values) => values.iter().map(|v| (*v).to_owned()).collect(),
        // clap lists true/false as the possible values of a flag.
        _ if knob.kind == Kind::Bool => clap_choices.clone(),
        _ => Vec::new(),
    };
    if clap_choices != catalog_choices {
        problems.push(format!("{name}: clap choices {clap_choices:?}, catalog {catalog_choices:?}"));
    }
    problems
}

#[test]
fn cli_and_catalog_agree() {
    let run = run_command();
    let mut problems = Vec::new();
    let mut flags = BTreeSet::new();
    for arg in run.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        flags.insert(format!("--{long}"));
        if matches!(long, "help" | "version") || NOT_KNOBS.iter().any(|(flag, _)| *flag == long) {
            continue;
        }
        if arg.is_hide_set() {
            // A Tomii 1.2 spelling, listed with what it is here.
            if !tomii_1_2_flags().iter().any(|flag| flag.strip_prefix("--") == Some(long)) {
                problems.push(format!(
                    "--{long} is hidden but in neither cli::legacy::OWN nor WITHOUT_EFFECT; list it there"
                ));
            }
            continue;
        }
        match knob_for(long) {
            Some(knob) => problems.extend(compare(arg, knob)),
            None => problems.push(format!("--{long} has no entry in knobs::CATALOG; add one")),
        }
    }
    for knob in CATALOG {
        if !flags.contains(knob.cli) {
            problems.push(format!("knob {} names {}, which `tomii run` does not have", knob.name, knob.cli));
        }
    }
    assert!(problems.is_empty(), "the CLI and the knob catalog disagree:\n{}", problems.join("\n"));
}

/// Every Tomii 1.2 flag of the legacy tables is a flag of `tomii run` (hidden, or a hidden alias)
/// or the graph's `--json`; none is a knob's own flag or one of its aliases (those are the
/// catalog's, listed once there).
#[test]
fn every_tomii_1_2_spelling_is_a_hidden_flag_or_alias() {
    let run = run_command();
    for flag in tomii_1_2_flags() {
        let long = flag.strip_prefix("--").expect("a long flag");
        let arg = run.get_arguments().find(|arg| {
            arg.get_long() == Some(long) || arg.get_all_aliases().into_iter().flatten().any(|alias| alias == long)
        });
        let arg = arg.unwrap_or_else(|| panic!("{flag} is a Tomii 1.2 flag but `tomii run` does not take it"));
        let hidden = arg.is_hide_set() || arg.get_long() != Some(long) || long == "json";
        assert!(hidden, "{flag} is a knob's own flag, not a Tomii 1.2 spelling");
        assert!(knob_for(long).is_none(), "{flag} is in both the catalog and the legacy tables");
        let aliased = CATALOG.iter().any(|knob| knob.flag.aliases.contains(&long));
        assert!(!aliased, "{flag} is both a knob's alias and in the legacy tables");
    }
}

#[test]
fn names_are_unique_and_follow_the_flags() {
    let mut names = BTreeSet::new();
    for knob in CATALOG {
        assert!(names.insert(knob.name), "knob {} is listed twice", knob.name);
        let flag = knob.name.replace('_', "-");
        let expected = if knob.default == Preset::Bool(true) { format!("--no-{flag}") } else { format!("--{flag}") };
        assert_eq!(knob.cli, expected, "knob {}: its flag should be {expected}", knob.name);
        assert!(!knob.description.is_empty() && !knob.search_hint.is_empty(), "knob {} needs both texts", knob.name);
    }
}

#[test]
fn defaults_lie_in_their_domains() {
    for knob in CATALOG {
        let fits = match (knob.kind, knob.default, knob.domain) {
            (Kind::Int, Preset::Int(value), Domain::Int { min, max, .. }) => (min..=max).contains(&value),
            // A filter that is off until given (record_stream).
            (Kind::Int, Preset::Unset, Domain::Int { .. }) => true,
            (Kind::Bool, Preset::Bool(_), Domain::Bool) => true,
            (Kind::String, Preset::Text(value), Domain::Choice(values)) => values.contains(&value),
            (Kind::String, Preset::Text(_), Domain::Scheduler) => true,
            (Kind::Path, Preset::Unset, Domain::Path) => true,
            (Kind::PathList, Preset::Empty, Domain::Path) => true,
            (Kind::KeyValueList, Preset::Empty, Domain::SchedulerOptions) => true,
            _ => false,
        };
        assert!(
            fits,
            "knob {}: default {:?} does not fit type {:?} and domain {:?}",
            knob.name, knob.default, knob.kind, knob.domain
        );
    }
}

/// Exhaustive on purpose: a new `RunConfig` field fails to compile here until it has a knob (or
/// is marked library-only below), and every default must be the catalog's.
#[test]
fn run_config_defaults_are_the_catalog_defaults() {
    let RunConfig {
        workers,
        slots,
        frames,
        pop_batch,
        inline_continuation,
        trace,
        trace_file,
        trace_taps: _,  // library-only: the CLI's --timing and --record write their files through them
        record_taps: _, // library-only: the CLI's --record writes its file through it
        warmup_frames,
        task_timing,
        collect_outputs: _, // library-only: tests keep the sink outputs of every frame
        stall_timeout,
        scheduler_options,
        on_fault,
        idle_spin,
        progress: _,   // the CLI's progress line, shown unless `quiet` (or stderr is not a terminal)
        stop: _,       // library-only: the CLI's is set by Ctrl-C
        stop_grace: _, // library-only: the CLI's is 5 s (STOP_GRACE), the library's none
        stop_now: _,   // library-only: the CLI's is set by a second Ctrl-C
        network,
        scheduler_call_timeout,
        kernel_timeout,
        pin_workers,
        on_hang: _,          // library-only: the CLI's exits after reporting a stuck call
        wake_all_on_push: _, // library-only: `tomii replay` sets it for the replay scheduler
    } = RunConfig::default();
    let default = |name: &str| knobs::find(name).unwrap_or_else(|| panic!("no knob {name}")).default;
    let NetworkOptions {
        receiver_threads,
        socket_recv_buf_bytes,
        dispatch,
        on_slots_busy,
        frame_timeout,
        frame_window,
        idle_timeout,
    } = network;
    assert_eq!(default("receiver_threads"), Preset::Int(receiver_threads.into()));
    assert_eq!(default("socket_recv_buf_bytes"), Preset::Int(socket_recv_buf_bytes));
    assert_eq!(default("network_dispatch"), Preset::Text(dispatch.word()));
    assert_eq!(default("on_slots_busy"), Preset::Text(on_slots_busy.word()));
    assert_eq!(default("frame_timeout_ms"), Preset::Int(frame_timeout.as_millis() as u64));
    assert_eq!(default("frame_window"), Preset::Int(frame_window.into()));
    assert_eq!(default("network_idle_timeout_ms"), Preset::Int(idle_timeout.map_or(0, |t| t.as_millis() as u64)));
    assert_eq!(default("workers"), Preset::Int(workers.into()));
    assert_eq!(default("slots"), Preset::Int(slots.into()));
    assert_eq!(default("frames"), Preset::Int(frames));
    assert_eq!(default("warmup_frames"), Preset::Int(warmup_frames));
    assert_eq!(default("pop_batch"), Preset::Int(pop_batch.into()));
    assert_eq!(default("inline_continuation"), Preset::Bool(inline_continuation));
    assert!(!trace, "RunConfig records a trace by default, but the trace knob is unset by default");
    assert!(trace_file.is_none(), "RunConfig writes a trace file by default, but the trace knob is unset by default");
    assert_eq!(default("trace"), Preset::Unset);
    assert_eq!(default("task_timing"), Preset::Bool(task_timing));
    assert_eq!(default("stall_timeout_ms"), Preset::Int(stall_timeout.as_millis() as u64));
    assert_eq!(default("scheduler_call_timeout_ms"), Preset::Int(scheduler_call_timeout.as_millis() as u64));
    assert_eq!(default("kernel_timeout_ms"), Preset::Int(kernel_timeout.map_or(0, |t| t.as_millis() as u64)));
    assert!(scheduler_options.is_empty(), "RunConfig has default scheduler options: {scheduler_options:?}");
    assert_eq!(default("sched_opt"), Preset::Empty);
    assert_eq!(default("on_scheduler_fault"), Preset::Text(on_fault.word()));
    assert_eq!(default("idle_spin"), Preset::Text(idle_spin.word()));
    assert_eq!(default("pin_workers"), Preset::Bool(pin_workers));
    assert!(knobs::find("quiet").is_some());
}

/// A run refuses the value just past each bound of every integer knob, naming the knob and the
/// catalog's range, so the catalog's domains are the limits the runtime enforces (the network
/// options too, on a graph without a network source). A knob added to the catalog with a bound
/// the engine does not check fails here.
#[test]
fn every_int_domain_is_enforced_by_a_run() {
    let diamond = graph_path("diamond.json");
    let mut refused = 0;
    for knob in CATALOG {
        let Domain::Int { min, max, .. } = knob.domain else { continue };
        let outside = [min.checked_sub(1), (max < u64::MAX).then(|| max + 1)];
        for value in outside.into_iter().flatten() {
            let run = finish({
                let mut command = tomii();
                command.arg("run").arg(&diamond).arg("--dylib").arg(synthetic_lib());
                command.arg("--scheduler-plugin").arg(fifo_lib()).arg("--quiet");
                command.arg(knob.cli).arg(value.to_string());
                command
            });
            let range = if max == u64::MAX { format!("at least {min}") } else { format!("between {min} and {max}") };
            let expected = format!("{} is {value}: it must be {range}", knob.name);
            assert!(!run.status.success(), "{} {value} was accepted", knob.cli);
            assert!(run.stderr.contains(&expected), "{} {value}: {:?} does not say {expected:?}", knob.cli, run.stderr);
            refused += 1;
        }
    }
    assert!(refused >= 10, "only {refused} out-of-domain values were tried");
}

#[test]
fn knobs_json_lists_every_knob_with_every_field() {
    let run = finish({
        let mut command = tomii();
        command.args(["knobs", "--json"]);
        command
    });
    assert!(run.status.success(), "tomii knobs --json failed:\n{}", run.stderr);
    let listing: serde_json::Value = serde_json::from_str(&run.stdout).expect("tomii knobs --json prints JSON");
    assert_eq!(listing["version"], 1);
    let entries = listing["knobs"].as_array().expect("a knobs list");
    assert_eq!(entries.len(), CATALOG.len());
    let mut names = BTreeSet::new();
    for (entry, knob) in entries.iter().zip(CATALOG) {
        let fields: BTreeSet<&str> = entry.as_object().expect("an object").keys().map(String::as_str).collect();
        let expected =
            BTreeSet::from(["name", "cli", "type", "default", "domain", "role", "description", "search_hint"]);
        assert_eq!(fields, expected, "fields of {entry}");
        for text in ["name", "cli", "type", "role", "description", "search_hint"] {
            assert!(entry[text].as_str().is_some_and(|t| !t.is_empty()), "{text} of {entry} is not a non-empty string");
        }
        assert!(entry["domain"]["kind"].is_string(), "domain of {entry} has no kind");
        assert!(names.insert(entry["name"].as_str().unwrap().to_owned()), "{} twice", entry["name"]);
        assert_eq!(entry["name"], knob.name);
    }
    let workers = entries.iter().find(|entry| entry["name"] == "workers").expect("a workers knob");
    assert_eq!(workers["default"], 1);
    assert_eq!(workers["domain"]["kind"], "int");
    assert!(
        workers["domain"]["min"].is_u64()
            && workers["domain"]["max"].is_u64()
            && workers["domain"]["scale"].is_string()
    );
    let fault = entries.iter().find(|entry| entry["name"] == "on_scheduler_fault").expect("on_scheduler_fault");
    assert_eq!(fault["domain"]["values"], serde_json::json!(["stop", "fallback"]));
}

#[test]
fn knobs_text_is_an_aligned_table() {
    let run = finish({
        let mut command = tomii();
        command.arg("knobs");
        command
    });
    assert!(run.status.success(), "tomii knobs failed:\n{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), CATALOG.len() + 1, "a header and one line per knob:\n{}", run.stdout);
    let header = lines[0];
    assert!(header.starts_with("NAME"), "header: {header}");
    for column in ["CLI", "DEFAULT", "ROLE", "DESCRIPTION"] {
        let at = header.find(column).unwrap_or_else(|| panic!("no {column} column: {header}"));
        for line in &lines[1..] {
            let before = line.chars().take(at).collect::<String>();
            let cell_start = line.chars().nth(at);
            assert!(
                before.ends_with("  ") && cell_start.is_some_and(|c| c != ' '),
                "column {column} is not aligned in {line:?}"
            );
        }
    }
    for knob in CATALOG {
        assert!(lines.iter().any(|line| line.starts_with(&format!("{} ", knob.name))), "no line for {}", knob.name);
    }
}
