//! The graph model: parse a graph JSON text, validate it, and compile it once into flat
//! per-instance arrays for the engine. The format is described in `README.md` beside this file.
//!
//! Pipeline: `spec` (JSON shape) → `resolve` (names) → `compile` (instances, CSR) → `order`
//! (cycles, ranks); `schema` is the format as a JSON Schema (`tomii schema`). A Tomii 1.2 file is
//! first rewritten in the current format by `v12` (`write` lays that out for `tomii convert`).
//! `typed_spec` reads the common current-format file without a JSON value tree, and hands
//! anything else to `spec` (README.md, "Two ways in"). No
//! input may make it panic; every error is one line naming the source, the node, argument or
//! field, and what to do.

mod compile;
mod compiled;
mod counts;
mod edges;
mod error;
mod inits;
mod literal;
mod names;
mod order;
mod resolve;
mod schema;
mod select;
mod spec;
mod strict;
mod typed;
mod typed_spec;
mod v12;
mod warnings;
mod write;

#[cfg(test)]
mod tests;

use std::path::Path;

pub use compiled::{
    ArgSource, CmpOp, CompiledGraph, CompiledNode, ComputedInit, Condition, NetworkConfig, PostNode, SocketType,
};
pub use edges::edges_text;
pub use error::GraphError;
pub use error::quote as quote_name;
pub use inits::{Evaluate, InitFailure, PendingInits, Precomputed, ShapeUse, ShapeValue};
pub use literal::{Literal, LiteralType};
pub use schema::schema;
pub use spec::NETWORK_INPUT;
pub use v12::Dialect;
pub use warnings::summarise as summarise_warnings;

/// The largest graph file read: a bigger one is refused before it is read.
pub const MAX_FILE_BYTES: u64 = 256 << 20;

/// The JSON Schema of graph files written in `dialect` ([`schema`] for the current format).
pub fn schema_of(dialect: Dialect) -> serde_json::Value {
    match dialect {
        Dialect::Tomii => schema(),
        Dialect::Tomii12 => v12::schema(),
    }
}

/// Reads and compiles the graph file at `path`; errors name the file. Only a regular file is read
/// (a FIFO would block, a device never end), and at most [`MAX_FILE_BYTES`] of it.
pub fn load_file(path: &Path) -> Result<CompiledGraph, GraphError> {
    parse_str(&path.display().to_string(), &read_file(path)?)
}

/// [`load_file`] for a run on `workers` workers, which a Tomii 1.2 factor of `"$workers"` is
/// ([`parse_str_for_run`]).
pub fn load_file_for_run(path: &Path, workers: u32) -> Result<CompiledGraph, GraphError> {
    parse_str_for_run(&path.display().to_string(), &read_file(path)?, workers)
}

/// The text of the graph file at `path`, read as [`load_file`] reads it (`files::read_input`).
pub fn read_file(path: &Path) -> Result<String, GraphError> {
    use crate::files::Unreadable;
    let source = path.display().to_string();
    let file = error::one_line(&source);
    let bytes = crate::files::read_input(path, MAX_FILE_BYTES).map_err(|error| match error {
        Unreadable::Io(source) => GraphError::Read { file: file.clone(), source },
        Unreadable::TooLarge { .. } => GraphError::TooLarge { file: file.clone(), message: error.to_string() },
        Unreadable::Special(_) => GraphError::Invalid { file: file.clone(), message: error.to_string() },
    })?;
    String::from_utf8(bytes).map_err(|e| GraphError::Syntax {
        file,
        message: format!("the file is not UTF-8 text (invalid byte at offset {})", e.utf8_error().valid_up_to()),
    })
}

/// Parses and compiles a graph JSON text of either dialect (README.md, "Tomii 1.2 graph files");
/// `source_name` (usually a file name) starts every error message and warning, and becomes the
/// graph's name when the JSON has none (its file stem).
pub fn parse_str(source_name: &str, text: &str) -> Result<CompiledGraph, GraphError> {
    parse_str_via(source_name, text, ParsePath::Auto)
}

/// [`parse_str`] for a run on `workers` workers: a Tomii 1.2 file may give a node `"factor":
/// "$workers"`, which is then that many instances (with a warning); [`parse_str`] refuses it.
pub fn parse_str_for_run(source_name: &str, text: &str, workers: u32) -> Result<CompiledGraph, GraphError> {
    parse_with(source_name, text, ParsePath::Auto, Some(workers), None)
}

/// [`parse_str_for_run`] with the kernels at hand: a Tomii 1.2 count (a factor, `group_size`,
/// `group_by`, range end or network number) naming a computed initialization takes instance 0
/// of it, `evaluate` computing the initializations (in file order, once) before the graph
/// compiles; the graph keeps their values for its first run ([`CompiledGraph::precomputed`],
/// README.md, "Computed counts"). Without such a count, `evaluate` is not called.
pub fn parse_str_evaluating(
    source_name: &str,
    text: &str,
    workers: u32,
    evaluate: Evaluate<'_>,
) -> Result<CompiledGraph, GraphError> {
    parse_with(source_name, text, ParsePath::Auto, Some(workers), Some(evaluate))
}

/// Which way [`parse_str_via`] reads a graph (README.md, "Two ways in").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParsePath {
    /// As [`parse_str`]: the typed path, and the JSON-value path when that fails.
    Auto,
    /// The typed path alone.
    Typed,
    /// The JSON-value path alone.
    Value,
}

/// [`parse_str`] through one path; for the tests and benchmarks that compare the two. The typed
/// path alone fails with [`GraphError::Invalid`] saying only that it gave up.
pub fn parse_str_via(source_name: &str, text: &str, path: ParsePath) -> Result<CompiledGraph, GraphError> {
    parse_with(source_name, text, path, None, None)
}

/// `workers`: what a Tomii 1.2 factor of `"$workers"` becomes (the typed path reads the current
/// format only, where no factor depends on the workers).
fn parse_with(
    source_name: &str,
    text: &str,
    path: ParsePath,
    workers: Option<u32>,
    evaluate: Option<Evaluate<'_>>,
) -> Result<CompiledGraph, GraphError> {
    if path != ParsePath::Value
        && let Some(graph) = parse_typed(source_name, text)
    {
        return Ok(graph);
    }
    if path == ParsePath::Typed {
        let message = "the typed path gave up on it (a form it does not read, or an error)".to_owned();
        return Err(GraphError::Invalid { file: error::one_line(source_name), message });
    }
    let current = in_current_format(source_name, text, workers, evaluate)?;
    let mut graph = compile_json(source_name, &current.json)?;
    graph.dialect = current.dialect;
    graph.warnings = current.warnings;
    if let Some((values, shape)) = current.precomputed {
        let counts: Vec<u32> = graph.computed.iter().map(|init| init.count).collect();
        let made: Vec<u32> = values.iter().map(|v| v.len() as u32).collect();
        if counts != made {
            let message = format!(
                "internal: the initializations computed before compiling ({made:?} elements) differ from the \
                 compiled ones ({counts:?})"
            );
            return Err(GraphError::Invalid { file: error::one_line(source_name), message });
        }
        graph.precomputed = Precomputed::new(workers.unwrap_or(1), values, shape);
    }
    Ok(graph)
}

/// The typed path (README.md, "Two ways in"): a current-format file compiled without a JSON
/// value tree; `None` if it reads a form the path does not, or fails in any way.
fn parse_typed(source_name: &str, text: &str) -> Option<CompiledGraph> {
    let spec = typed_spec::read(text).ok()?;
    compile_spec(source_name, spec).ok()
}

/// A graph file rewritten in the current format ([`convert_str`]).
#[derive(Clone, Debug)]
pub struct Converted {
    /// The dialect the file was written in.
    pub dialect: Dialect,
    /// The graph in the current format: a Tomii 1.2 file rewritten, a current one unchanged.
    pub text: String,
    /// As [`CompiledGraph::warnings`].
    pub warnings: Vec<String>,
}

/// Rewrites a graph JSON text in the current format with exactly its meaning (`tomii convert`);
/// the result is compiled first, so a graph that would not load is an error here too. `workers` is
/// what a factor of `"$workers"` becomes (none: such a factor is an error).
pub fn convert_str(source_name: &str, text: &str, workers: Option<u32>) -> Result<Converted, GraphError> {
    convert_with(source_name, text, workers, None)
}

/// [`convert_str`] with the kernels at hand: a count naming a computed initialization is written
/// as the value `evaluate` computes (as [`parse_str_evaluating`] takes it).
pub fn convert_str_evaluating(
    source_name: &str,
    text: &str,
    workers: Option<u32>,
    evaluate: Evaluate<'_>,
) -> Result<Converted, GraphError> {
    convert_with(source_name, text, workers, Some(evaluate))
}

fn convert_with(
    source_name: &str,
    text: &str,
    workers: Option<u32>,
    evaluate: Option<Evaluate<'_>>,
) -> Result<Converted, GraphError> {
    let current = in_current_format(source_name, text, workers, evaluate)?;
    compile_json(source_name, &current.json)?;
    let text = match current.dialect {
        Dialect::Tomii => text.to_owned(),
        Dialect::Tomii12 => write::pretty(&current.json),
    };
    Ok(Converted { dialect: current.dialect, text, warnings: current.warnings })
}

/// The dialect of a graph JSON text; an error if it mixes the two.
pub fn dialect_of(source_name: &str, text: &str) -> Result<Dialect, GraphError> {
    let json = strict::parse(text)
        .map_err(|e| GraphError::Syntax { file: error::one_line(source_name), message: e.to_string() })?;
    v12::detect(&json).map_err(|issue| issue.into_error(source_name))
}

/// The file's JSON in the current format, its dialect and the warnings of a translation.
struct InCurrentFormat {
    json: serde_json::Value,
    dialect: Dialect,
    warnings: Vec<String>,
    precomputed: Option<counts::Evaluated>,
}

fn in_current_format(
    source_name: &str,
    text: &str,
    workers: Option<u32>,
    evaluate: Option<Evaluate<'_>>,
) -> Result<InCurrentFormat, GraphError> {
    let json = strict::parse(text)
        .map_err(|e| GraphError::Syntax { file: error::one_line(source_name), message: e.to_string() })?;
    let dialect = v12::detect(&json).map_err(|issue| issue.into_error(source_name))?;
    if dialect == Dialect::Tomii {
        let (rewritten, precomputed) =
            counts::in_current(&json, workers, evaluate, source_name).map_err(|issue| issue.into_error(source_name))?;
        let json = rewritten.unwrap_or(json);
        return Ok(InCurrentFormat { json, dialect, warnings: Vec::new(), precomputed });
    }
    let translation =
        v12::translate(&json, workers, evaluate, source_name).map_err(|issue| issue.into_error(source_name))?;
    let file = error::one_line(source_name);
    let warnings = translation.warnings.into_iter().map(|w| format!("{file}: {w}")).collect();
    Ok(InCurrentFormat { json: translation.json, dialect, warnings, precomputed: translation.precomputed })
}

/// Compiles a graph in the current format.
fn compile_json(source_name: &str, json: &serde_json::Value) -> Result<CompiledGraph, GraphError> {
    compile_spec(source_name, spec::read(json).map_err(|issue| issue.into_error(source_name))?)
}

/// Compiles a graph read by either path.
fn compile_spec(source_name: &str, spec: spec::GraphSpec) -> Result<CompiledGraph, GraphError> {
    let resolved = resolve::resolve(spec).map_err(|issue| issue.into_error(source_name))?;
    let default_name = Path::new(source_name).file_stem().and_then(|stem| stem.to_str()).unwrap_or(source_name);
    compile::compile(resolved, source_name, default_name).map_err(|issue| issue.into_error(source_name))
}
