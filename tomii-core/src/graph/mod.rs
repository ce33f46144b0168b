//! The graph model: parse a graph JSON text, validate it, and compile it once into flat
//! per-instance arrays for the engine. The format is described in `README.md` beside this file.
//!
//! Pipeline: `spec` (JSON shape) → `resolve` (names) → `compile` (instances, CSR) → `order`
//! (cycles, ranks); `schema` is the format as a JSON Schema (`tomii schema`). No input may make it
//! panic; every error is one line naming the source, the node, argument or field, and what to do.

mod compile;
mod compiled;
mod error;
mod literal;
mod order;
mod resolve;
mod schema;
mod select;
mod spec;
mod typed;

#[cfg(test)]
mod tests;

use std::path::Path;

pub use compiled::{
    ArgSource, CmpOp, CompiledGraph, CompiledNode, ComputedInit, Condition, NetworkConfig, PostNode, SocketType,
};
pub use error::GraphError;
pub use literal::{Literal, LiteralType};
pub use schema::schema;
pub use spec::NETWORK_INPUT;

/// Reads and compiles the graph file at `path`; errors name the file.
pub fn load_file(path: &Path) -> Result<CompiledGraph, GraphError> {
    let source = path.display().to_string();
    let bytes = std::fs::read(path)
        .map_err(|io_error| GraphError::Read { file: error::one_line(&source), source: io_error })?;
    let text = String::from_utf8(bytes).map_err(|e| GraphError::Syntax {
        file: error::one_line(&source),
        message: format!("the file is not UTF-8 text (invalid byte at offset {})", e.utf8_error().valid_up_to()),
    })?;
    parse_str(&source, &text)
}

/// Parses and compiles a graph JSON text; `source_name` (usually a file name) starts every error
/// message and becomes the graph's name when the JSON has none (its file stem).
pub fn parse_str(source_name: &str, text: &str) -> Result<CompiledGraph, GraphError> {
    let json: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| GraphError::Syntax { file: error::one_line(source_name), message: e.to_string() })?;
    let spec = spec::read(&json).map_err(|issue| issue.into_error(source_name))?;
    let resolved = resolve::resolve(spec).map_err(|issue| issue.into_error(source_name))?;
    let default_name = Path::new(source_name).file_stem().and_then(|stem| stem.to_str()).unwrap_or(source_name);
    compile::compile(resolved, source_name, default_name).map_err(|issue| issue.into_error(source_name))
}
