//! `tomii convert OLD.json [-o NEW.json]`: a Tomii 1.2 graph file rewritten in the current format
//! with exactly its meaning, and the loading of a graph file for `tomii run`, which says on stderr
//! what a 1.2 file's warnings say (graph/README.md, "Tomii 1.2 graph files").
//!
//! Never writes over the file it reads.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;

use super::app::say;
use crate::graph::{self, CompiledGraph, Dialect};

#[derive(Args)]
pub struct ConvertArgs {
    /// The graph file, as Tomii 1.2 wrote it.
    #[arg(value_name = "OLD.json")]
    pub graph: PathBuf,
    /// Write the current format here (default: stdout).
    #[arg(long, short, value_name = "NEW.json")]
    pub output: Option<PathBuf>,
    /// The worker count a Tomii 1.2 factor of "$workers" becomes.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub workers: Option<u32>,
    /// Print every warning, one line per node, instead of one line per kind with a count.
    #[arg(long)]
    pub verbose: bool,
    /// A kernel library (repeatable): a count naming a computed initialization is written as the
    /// value its kernel computes here (without one, such a count is an error saying so).
    #[arg(long = "dylib", value_name = "LIB")]
    pub dylibs: Vec<PathBuf>,
    /// Write the compiled edges instead: per instance, the predecessor instances it waits for and
    /// the results it reads, in order (a graph of either format).
    #[arg(long)]
    pub edges: bool,
}

/// Loads and compiles the graph file at `path` for a run on `workers` workers, printing its
/// warnings as `warning: ...` lines.
pub fn load(path: &Path, workers: u32) -> Result<CompiledGraph> {
    let graph = graph::load_file_for_run(path, workers)?;
    warn(&graph.warnings, false);
    Ok(graph)
}

/// `tomii convert`.
pub fn convert(args: &ConvertArgs) -> Result<()> {
    let source = args.graph.display().to_string();
    let text = graph::read_file(&args.graph)?;
    // The kernels compute what a count names (before the graph compiles), when given.
    let kernels = match args.dylibs.is_empty() {
        true => None,
        false => Some(crate::plugin::KernelSet::load(&args.dylibs)?),
    };
    let converted = match &kernels {
        None => graph::convert_str(&source, &text, args.workers)?,
        Some(kernels) => {
            graph::convert_str_evaluating(&source, &text, args.workers, &mut crate::engine::evaluator(kernels))?
        }
    };
    if let Some(output) = &args.output {
        // Checked as every output is, once there is something to write and before anything is said.
        crate::files::check_writable(output, "--output", Some(("the graph file", &args.graph)))
            .map_err(anyhow::Error::msg)?;
    }
    warn(&converted.warnings, args.verbose);
    if args.edges {
        let workers = args.workers.unwrap_or(1);
        let compiled = match &kernels {
            None => graph::parse_str_for_run(&source, &text, workers)?,
            Some(kernels) => {
                graph::parse_str_evaluating(&source, &text, workers, &mut crate::engine::evaluator(kernels))?
            }
        };
        let text = graph::edges_text(&compiled);
        return match &args.output {
            None => say(text.trim_end()),
            Some(output) => std::fs::write(output, text)
                .with_context(|| format!("{}: cannot write the compiled edges", output.display())),
        };
    }
    if converted.dialect == Dialect::Tomii {
        eprintln!("note: {source} is in the current format already; it is written unchanged");
    }
    let Some(output) = &args.output else {
        return say(converted.text.trim_end());
    };
    std::fs::write(output, &converted.text)
        .with_context(|| format!("{}: cannot write the converted graph", output.display()))
}

/// Prints a graph's warnings: one line per kind with a count, or every line when `verbose`.
pub(super) fn warn(warnings: &[String], verbose: bool) {
    let summary;
    let lines = match verbose {
        true => warnings,
        false => {
            summary = graph::summarise_warnings(warnings);
            &summary
        }
    };
    for warning in lines {
        eprintln!("warning: {warning}");
    }
}
