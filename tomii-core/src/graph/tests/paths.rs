//! The typed path against the JSON-value path (README.md, "Two ways in"): every graph file of the
//! repository reads the same both ways, the typed path reads the current format's files, and it
//! gives up on every form of Tomii 1.2 and every invalid file, which the JSON-value path then reads
//! or reports as before.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::{Json, both_paths, parse_str_via};
use crate::graph::{Dialect, ParsePath};

/// Where the repository keeps graph files, relative to its root.
const GRAPH_DIRS: [&str; 6] =
    ["examples", "experiments", "tests", "tomii-core/tests/graphs", "plugins", "python/tomii/_templates"];

/// Every `.json` file under the directories of [`GRAPH_DIRS`], sorted.
fn graph_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tomii-core is in the repository").to_owned();
    let mut files = Vec::new();
    let mut dirs: Vec<PathBuf> = GRAPH_DIRS.iter().map(|dir| root.join(dir)).collect();
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for path in entries.flatten().map(|entry| entry.path()) {
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|ext| ext == "json") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Whether a graph uses a form only the JSON-value path reads: a condition, a computed
/// initialization or a `network_config`.
fn beyond_typed_path(graph: &Json) -> bool {
    let has = |list: &str, field: &str| {
        graph[list].as_array().is_some_and(|items| items.iter().any(|item| !item[field].is_null()))
    };
    !graph["network_config"].is_null()
        || has("nodes", "condition")
        || has("initializations", "function")
        || has("initializations", "func")
}

#[test]
fn every_graph_file_of_the_repository_reads_the_same_both_ways() {
    let files = graph_files();
    assert!(files.len() >= 30, "found only {} graph files: {files:?}", files.len());
    let (mut typed, mut current) = (0, 0);
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let source = file.display().to_string();
        let read_typed = both_paths(&source, &text);
        typed += usize::from(read_typed);
        let Ok(graph) = parse_str_via(&source, &text, ParsePath::Value) else { continue };
        let json: Json = serde_json::from_str(&text).expect("a graph that compiles is JSON");
        if graph.dialect == Dialect::Tomii && !beyond_typed_path(&json) {
            current += 1;
            assert!(read_typed, "{source}: a current-format file the typed path did not read");
        }
        if graph.dialect == Dialect::Tomii12 {
            assert!(!read_typed, "{source}: a Tomii 1.2 file the typed path read");
        }
    }
    assert!(current >= 10 && typed >= current, "typed path: {typed} files, of {current} it must read");
}

#[test]
fn the_typed_path_reads_every_form_it_knows() {
    let graph = json!({
        "name": "forms",
        "initializations": [{"name": "n", "value": 4}, {"name": "w", "value": {"type": "Vec<f64>", "value": [1, 2.5]}}],
        "inputs": [{"name": "samples", "factor": "n"}],
        "nodes": [
            {"name": "a", "function": "f", "factor": "n", "priority": "high", "use_workers": "0-1",
             "args": [7, -2, 1.5, true, "text", {"type": "u8", "value": 7}, {"type": "String", "value": "s"},
                      {"type": "u128", "value": "340282366920938463463374607431768211455"},
                      {"type": "$ref", "name": "w"}, {"type": "$index"}, {"type": "$workers"},
                      {"type": "$res", "predecessor": {"name": "samples", "index": 0}}]},
            {"name": "b", "function": "f", "factor": 2, "group_size": 2, "priority": -3, "use_workers": 1,
             "loop": {"name": "l", "factor": "n"}, "loop_args": [{"type": "$index"}],
             "args": [{"type": "$dep", "predecessor": {"name": "a", "index": "0-n", "wrap": true}},
                      {"type": "$barrier", "predecessor": {"name": "a"}},
                      {"type": "$res", "predecessor": {"name": "a", "group_by": 2}},
                      {"type": "$res", "predecessor": {"name": "a", "index": [0, 1]}}]}
        ],
        "post_nodes": [{"name": "p", "function": "f", "args": [{"type": "$res", "predecessor": {"name": "b", "index": "all"}}]}]
    });
    let text = graph.to_string();
    assert!(both_paths("forms.json", &text), "the typed path gave up on {text}");
}

#[test]
fn tomii_1_2_forms_and_invalid_files_leave_the_typed_path() {
    let edge = |pred: Json| json!({"type": "$res", "predecessor": pred});
    let two = |arg: Json| {
        json!({"nodes": [{"name": "a", "function": "f", "factor": 2},
                                           {"name": "b", "function": "f", "args": [arg]}]})
    };
    let cases = [
        // Tomii 1.2's forms: each file is read as 1.2 (or refused as a mix) by the JSON-value path.
        json!({"initializations": [{"name": "n", "args": [{"type": "usize", "value": "2"}]}],
               "nodes": [{"name": "a", "function": "f", "factor": "n"}]}),
        two(json!({"type": "u8", "value": "7"})),
        two(json!({"type": "Complex<f64>", "value": {"re": 1, "im": 2}})),
        two(json!({"type": "$ref", "value": "n"})),
        two(json!({"type": "$factor"})),
        two(json!({"type": "$worker"})),
        two(json!({"type": "u8", "value": "7", "condition": {"operation": "Eq"}})),
        two(edge(json!({"name": "a", "indexes": "0-1"}))),
        two(edge(json!({"name": "a", "group_by": "g"}))),
        json!({"nodes": [{"name": "a", "function": "f", "factor": 2, "group_size": "g"}]}),
        // A mix of both dialects.
        json!({"initializations": [{"name": "n", "value": 2}],
               "nodes": [{"name": "a", "function": "f", "args": [{"type": "$ref", "value": "n"}]}]}),
        // Invalid files of the current format.
        json!({"nodes": []}),
        json!({"nodes": [{"name": "", "function": "f"}]}),
        json!({"nodes": [{"name": "a", "function": "f", "factor": 0}]}),
        json!({"nodes": [{"name": "a", "function": "f", "colour": "red"}]}),
        two(edge(json!({"name": "a", "index": []}))),
        two(edge(json!({"name": "nowhere"}))),
        two(json!({"type": "$res"})),
        two(json!({"type": "$moon"})),
        two(json!(null)),
        two(json!([1, 2])),
    ];
    for case in cases {
        assert!(!both_paths("case.json", &case.to_string()), "the typed path read {case}");
    }
    // Repeated keys at every level: the JSON-value path names the key.
    let repeated = [
        r#"{"nodes": [{"name": "a", "name": "b", "function": "f"}]}"#,
        r#"{"nodes": [{"name": "a", "function": "f", "args": [{"type": "u8", "type": "u16", "value": 1}]}]}"#,
        r#"{"nodes": [{"name": "a", "function": "f"}, {"name": "b", "function": "f",
            "args": [{"type": "$res", "predecessor": {"name": "a", "index": 0, "index": 1}}]}]}"#,
        r#"{"nodes": [{"name": "a", "function": "f", "loop": {"name": "l", "factor": 2, "factor": 3}}]}"#,
        r#"{"initializations": [{"name": "n", "value": {"type": "u8", "value": 1, "value": 2}}],
            "nodes": [{"name": "a", "function": "f"}]}"#,
    ];
    for text in repeated {
        assert!(!both_paths("case.json", text), "the typed path read {text}");
        let error = parse_str_via("case.json", text, ParsePath::Auto).unwrap_err().to_string();
        assert!(error.contains("appears twice"), "{error}");
    }
}

/// Names with escapes are owned where the others are borrowed from the text (`Cow`), and every
/// form of number and white space means what it means on the JSON-value path.
#[test]
fn the_typed_path_reads_escapes_numbers_and_white_space() {
    let node = |name: &str, more: &str| format!(r#"{{"nodes": [{{"name": {name}, "function": "f"{more}}}]}}"#);
    let two = |arg: &str| {
        format!(
            r#"{{"nodes": [{{"name": "a", "function": "f", "factor": 2}}, {{"name": "b", "function": "f", "args": [{arg}]}}]}}"#
        )
    };
    let deep = format!(r#", "loop": {{"name": {}{}, "factor": 2}}"#, "[".repeat(126), "]".repeat(126));
    let read = [
        // Escapes and other characters in names and strings.
        node(r#""a\"b""#, ""),
        node(r#""\u00e9\n""#, ""),
        node(r#""é€😀 long name of more than eight bytes""#, ""),
        two(r#""text with \\ and \" inside""#),
        two(r#"{"type": "$res", "predecessor": {"name": "\u0061"}}"#),
        // Numbers of every form.
        two("-0"),
        two("1e2"),
        two("-1.5E-3"),
        two("18446744073709551615"),
        two("18446744073709551616"),
        two("-9223372036854775808"),
        two(r#"{"type": "$res", "predecessor": {"name": "a", "index": -1, "wrap": true}}"#),
        // White space of every kind, and none.
        "\r\n\t {\"nodes\":[{\"name\":\"a\",\"function\":\"f\",\"factor\":2}] }\n".to_owned(),
        node(r#""a""#, r#", "factor": null, "args": null, "priority": null"#),
    ];
    for text in &read {
        assert!(both_paths("case.json", text), "the typed path gave up on {text}");
    }
    let refused = [
        format!("{} x", node(r#""a""#, "")),
        node(r#""a""#, r#", "factor": 01"#),
        node(r#""a""#, r#", "factor": 1.0"#),
        node("\"tab\there\"", ""),
        node(r#""a""#, r#", "args": [1,]"#),
        node(r#""a""#, r#",, "factor": 1"#),
        node(r#""a""#, &deep),
        two("nul"),
        two("truex"),
        two(r#""\x""#),
    ];
    for text in &refused {
        assert!(!both_paths("case.json", text), "the typed path read {text}");
    }
}
