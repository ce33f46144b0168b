//! Unit tests of the graph module: compiled arrays checked exactly (`compiled.rs`), literals and
//! their kernel values (`literals.rs`), and one test per error message (`errors.rs`).
//!
//! Tests build graphs with `serde_json::json!` and go through the public `parse_str`; they assert
//! behaviour only, never timing.

mod compiled;
mod errors;
mod literals;
mod v12;

use serde_json::Value as Json;

use super::{CompiledGraph, parse_str};

/// Compiles `graph`, failing the test with the error message if it does not compile.
fn compile(graph: Json) -> CompiledGraph {
    parse_str("graph.json", &graph.to_string()).unwrap_or_else(|e| panic!("unexpected error: {e}"))
}

/// The one-line error message of a graph that must not compile.
fn error(graph: Json) -> String {
    error_text(&graph.to_string())
}

fn error_text(text: &str) -> String {
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
