//! Unit tests of the graph module: compiled arrays checked exactly (`compiled.rs`), literals and
//! their kernel values (`literals.rs`), one test per error message (`errors.rs`), and the typed
//! and JSON-value paths against each other (`paths.rs`).
//!
//! Tests build graphs with `serde_json::json!` and go through the public `parse_str`; they assert
//! behaviour only, never timing. Every graph they compile or refuse is also read through both
//! paths alone, which must agree (`both_paths`).

mod compiled;
mod errors;
mod literals;
mod paths;
mod v12;

use serde_json::Value as Json;

use super::{CompiledGraph, GraphError, ParsePath, parse_str, parse_str_via};

/// Compiles `graph`, failing the test with the error message if it does not compile.
fn compile(graph: Json) -> CompiledGraph {
    let text = graph.to_string();
    both_paths("graph.json", &text);
    parse_str("graph.json", &text).unwrap_or_else(|e| panic!("unexpected error: {e}"))
}

/// The one-line error message of a graph that must not compile.
fn error(graph: Json) -> String {
    error_text(&graph.to_string())
}

fn error_text(text: &str) -> String {
    both_paths("graph.json", text);
    match parse_str("graph.json", text) {
        Ok(_) => panic!("expected an error for {text}"),
        Err(e) => {
            let message = e.to_string();
            assert!(!message.contains('\n'), "message has several lines: {message}");
            assert!(message.starts_with("graph.json: "), "message does not start with the source: {message}");
            message
        }
    }
}

/// Asserts that `message` contains every part.
#[track_caller]
fn assert_mentions(message: &str, parts: &[&str]) {
    for part in parts {
        assert!(message.contains(part), "message {message:?} does not mention {part:?}");
    }
}

/// A graph of the given nodes and no initializations.
fn nodes(nodes: Json) -> Json {
    serde_json::json!({ "nodes": nodes })
}

/// Reads `text` through `parse_str` and through the JSON-value path alone, which must give the same
/// graph or the same error; the typed path alone, where it reads the file, the same graph. Returns
/// whether the typed path read it.
#[track_caller]
fn both_paths(source: &str, text: &str) -> bool {
    let shown = |result: &Result<CompiledGraph, GraphError>| match result {
        Ok(graph) => format!("{graph:?}"),
        Err(error) => format!("error: {error}"),
    };
    let value = parse_str_via(source, text, ParsePath::Value);
    let auto = parse_str(source, text);
    assert_eq!(shown(&auto), shown(&value), "parse_str and the JSON-value path differ on {source}: {text}");
    match parse_str_via(source, text, ParsePath::Typed) {
        Ok(typed) => {
            assert_eq!(Ok(&typed), value.as_ref().map_err(|e| e.to_string()), "the paths differ on {source}: {text}");
            true
        }
        Err(_) => false,
    }
}
