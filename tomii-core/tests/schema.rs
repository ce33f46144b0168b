//! The graph schema (`tomii schema`, `graph::schema()`) against the parser: every graph in the
//! repository that the parser accepts validates against it, every deliberately malformed fixture is
//! listed here and rejected by the parser, and each form of the format (README.md beside
//! `src/graph/spec/`) is accepted or rejected by both alike.
//!
//! The schema may accept what only the parser can reject (names, cycles, selections outside a
//! predecessor); the reverse, a graph the parser accepts but the schema rejects, is always a bug.

mod common;

use std::path::{Path, PathBuf};

use common::cli::{finish, tomii};
use serde_json::{Value as Json, json};
use tomii_core::graph::{self, GraphError};

/// What the schema says about a fixture the parser rejects.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Schema {
    /// The fault is one of shape: the schema rejects it too.
    Rejects,
    /// The fault is beyond a schema (names, cycles, selections): it validates.
    CannotTell,
}

/// Graph files that exist to be rejected by the parser (relative to the workspace root).
const MALFORMED: &[(&str, Schema)] = &[
    ("tomii-core/tests/graphs/cycle.json", Schema::CannotTell),
    ("tomii-core/tests/graphs/duplicate_node.json", Schema::CannotTell),
    ("tomii-core/tests/graphs/empty.json", Schema::Rejects),
    ("tomii-core/tests/graphs/factor_zero.json", Schema::Rejects),
    ("tomii-core/tests/graphs/malformed.json", Schema::Rejects),
    ("tomii-core/tests/graphs/offset_beyond_factor.json", Schema::CannotTell),
    ("tomii-core/tests/graphs/unknown_predecessor.json", Schema::CannotTell),
];

/// JSON files of the repository that are not graphs, each with what it is.
const NOT_GRAPHS: &[(&str, &str)] = &[];

/// Directories never searched for graphs: build output, run output (`out`, and the `results` of
/// experiments and the benchmark suite), hidden directories (`.git`, virtual environments).
const SKIPPED_DIRS: &[&str] = &["target", "out", "results", "node_modules", "__pycache__"];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tomii-core sits in the workspace").to_path_buf()
}

/// Every `*.json` file under `dir`, as paths relative to `root` with `/` separators, sorted.
fn json_files(root: &Path, dir: &Path, found: &mut Vec<String>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if path.is_dir() {
            if !name.starts_with('.') && !SKIPPED_DIRS.contains(&name) {
                json_files(root, &path, found);
            }
        } else if name.ends_with(".json") {
            let relative = path.strip_prefix(root).expect("under the root");
            found.push(relative.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/"));
        }
    }
    found.sort();
}

fn v12_validator() -> jsonschema::Validator {
    jsonschema::validator_for(&graph::schema_of(graph::Dialect::Tomii12))
        .unwrap_or_else(|e| panic!("the Tomii 1.2 graph schema does not compile: {e}"))
}

fn validator() -> jsonschema::Validator {
    jsonschema::validator_for(&graph::schema()).unwrap_or_else(|e| panic!("the graph schema does not compile: {e}"))
}

/// The schema's complaints about `json`, one line each; empty when it validates.
fn complaints(validator: &jsonschema::Validator, json: &Json) -> Vec<String> {
    validator.iter_errors(json).map(|error| format!("at {:?}: {error}", error.instance_path().to_string())).collect()
}

/// What is wrong with one repository JSON file, if anything. The schema describes the current
/// format only: a Tomii 1.2 file (graph/README.md, "Tomii 1.2 graph files") must load, and its
/// `tomii convert` output validate.
fn check_file(validator: &jsonschema::Validator, root: &Path, relative: &str) -> Option<String> {
    let text = std::fs::read_to_string(root.join(relative)).unwrap_or_else(|e| panic!("{relative}: {e}"));
    if let Ok(graph::Dialect::Tomii12) = graph::dialect_of(relative, &text) {
        let as_written = complaints(&v12_validator(), &serde_json::from_str(&text).expect("a 1.2 file is JSON"));
        if !as_written.is_empty() {
            return Some(format!("{relative}: the Tomii 1.2 schema rejects it: {}", as_written.join("; ")));
        }
        let converted = match graph::convert_str(relative, &text, None) {
            Ok(converted) => converted,
            Err(error) => return Some(format!("{relative}: a Tomii 1.2 file the parser rejects ({error})")),
        };
        let json: Json = serde_json::from_str(&converted.text).expect("a conversion is JSON");
        let complaints = complaints(validator, &json);
        return (!complaints.is_empty())
            .then(|| format!("{relative}: its conversion does not validate: {}", complaints.join("; ")));
    }
    let parsed = graph::parse_str(relative, &text);
    let schema_says = serde_json::from_str::<Json>(&text).map(|json| complaints(validator, &json));
    let valid = matches!(&schema_says, Ok(complaints) if complaints.is_empty());
    match MALFORMED.iter().find(|(file, _)| *file == relative).map(|(_, verdict)| *verdict) {
        Some(_) if parsed.is_ok() => Some(format!("{relative}: listed as malformed, but the parser accepts it")),
        Some(Schema::Rejects) if valid => Some(format!("{relative}: the schema should reject it, but it validates")),
        Some(Schema::CannotTell) if !valid => {
            Some(format!("{relative}: the schema rejects it ({schema_says:?}); mark it Schema::Rejects"))
        }
        Some(_) => None,
        None => match (parsed, schema_says) {
            (Err(error), _) => {
                Some(format!("{relative}: the parser rejects it ({error}); fix it, or list it in MALFORMED"))
            }
            (Ok(_), Err(error)) => Some(format!("{relative}: the parser accepts text that is not JSON ({error})")),
            (Ok(_), Ok(complaints)) if !complaints.is_empty() => {
                Some(format!("{relative}: the parser accepts it, the schema does not: {}", complaints.join("; ")))
            }
            (Ok(_), Ok(_)) => None,
        },
    }
}

#[test]
fn the_schema_is_a_valid_draft_2020_12_schema() {
    let schema = graph::schema();
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    if let Err(error) = jsonschema::meta::validate(&schema) {
        panic!("the graph schema is not a valid JSON Schema: {error} at {}", error.instance_path());
    }
}

#[test]
fn the_tomii_1_2_schema_is_valid_and_refuses_the_current_formats_own_forms() {
    let schema = graph::schema_of(graph::Dialect::Tomii12);
    if let Err(error) = jsonschema::meta::validate(&schema) {
        panic!("the Tomii 1.2 graph schema is not a valid JSON Schema: {error} at {}", error.instance_path());
    }
    let v12 = v12_validator();
    let node = |arg: Json| json!({"nodes": [{"name": "a", "function": "f", "args": [arg]}]});
    let accepted = [
        node(json!({"type": "usize", "value": "200"})),
        node(json!({"type": "Complex64", "value": {"re": "0.5", "im": "-1"}})),
        node(json!({"type": "$ref", "value": "$index"})),
        node(json!({"type": "$worker"})),
        node(json!({"type": "$res", "predecessor": {"name": "b", "indexes": "0-3"}})),
        node(json!({"type": "u8", "value": "1", "condition": {"operation": "Eq", "value": "1", "value_type": "u8"}})),
        json!({"initializations": [{"name": "n", "args": [{"type": "usize", "value": "4"}]}],
               "nodes": [{"name": "a", "function": "f", "factor": "$workers", "group_size": "n"}]}),
    ];
    for graph in accepted {
        assert!(complaints(&v12, &graph).is_empty(), "{graph}: {:?}", complaints(&v12, &graph));
    }
    let refused = [
        node(json!({"type": "usize", "value": 200})),
        node(json!({"type": "$ref", "name": "n"})),
        node(json!({"type": "$index"})),
        node(json!({"type": "$res", "predecessor": {"name": "b", "index": "0-3"}})),
        json!({"initializations": [{"name": "n", "value": 4}], "nodes": [{"name": "a", "function": "f"}]}),
        json!({"name": "g", "nodes": [{"name": "a", "function": "f"}]}),
    ];
    for graph in refused {
        assert!(!complaints(&v12, &graph).is_empty(), "the Tomii 1.2 schema accepts {graph}");
    }
}

#[test]
fn every_graph_in_the_repository_validates() {
    let root = workspace_root();
    let validator = validator();
    let mut files = Vec::new();
    json_files(&root, &root, &mut files);
    let graphs: Vec<&String> = files.iter().filter(|file| !NOT_GRAPHS.iter().any(|(other, _)| other == file)).collect();
    let mut problems: Vec<String> = graphs.iter().filter_map(|file| check_file(&validator, &root, file)).collect();
    let listed = MALFORMED.iter().map(|(file, _)| *file).chain(NOT_GRAPHS.iter().map(|(file, _)| *file));
    for file in listed {
        if !files.iter().any(|found| found == file) {
            problems.push(format!("{file}: listed here but not in the repository; remove it from the list"));
        }
    }
    assert!(problems.is_empty(), "graphs not covered by the schema:\n{}", problems.join("\n"));
    for sample in ["examples/graphs/pipeline.json", "tomii-core/tests/graphs/diamond.json"] {
        assert!(
            files.iter().any(|file| file == sample),
            "{sample} not found under {}: is the walk broken?",
            root.display()
        );
    }
}

/// The example at the top of README.md, the format's own description.
#[test]
fn the_readme_example_validates_and_parses() {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/graph/README.md");
    let text = std::fs::read_to_string(&readme).unwrap_or_else(|e| panic!("{}: {e}", readme.display()));
    let start = text.find("```json\n").expect("README.md has a ```json example") + "```json\n".len();
    let example = &text[start..start + text[start..].find("```").expect("the example ends")];
    graph::parse_str("README example", example).unwrap_or_else(|e| panic!("the parser rejects the example: {e}"));
    let json: Json = serde_json::from_str(example).expect("the example is JSON");
    assert_eq!(complaints(&validator(), &json), Vec::<String>::new());
}

/// A one-node graph whose node has `fields` added (and `args`, when given).
fn node_graph(fields: Json) -> Json {
    let mut node = json!({"name": "a", "function": "noop"});
    node.as_object_mut().unwrap().extend(fields.as_object().expect("an object of fields").clone());
    json!({"initializations": [{"name": "num", "value": 4}, {"name": "k", "value": 1}],
           "nodes": [{"name": "up", "function": "noop", "factor": 4}, node]})
}

/// Node `a` with the single argument `arg`, reading from `up` (4 instances); `a` has one instance
/// unless `factor` says otherwise.
fn arg_graph(arg: Json) -> Json {
    node_graph(json!({"args": [arg]}))
}

fn parses(json: &Json) -> Result<(), GraphError> {
    graph::parse_str("case.json", &json.to_string()).map(drop)
}

#[test]
fn every_form_of_the_format_is_accepted_by_both() {
    let edge = |kind: &str, index: Json| json!({"type": kind, "predecessor": {"name": "up", "index": index}});
    let mut cases = vec![
        json!({"name": "g", "nodes": [{"name": "a", "function": "f"}]}),
        json!({"name": null, "initializations": null, "nodes": [{"name": "a", "function": "f", "args": null}]}),
        node_graph(json!({"factor": "num", "priority": "high", "use_workers": "0-1"})),
        node_graph(json!({"factor": 3, "priority": -7, "use_workers": 2})),
        node_graph(json!({"priority": "low", "use_workers": " 1 - 3 ", "factor": null})),
        arg_graph(json!(5)),
        arg_graph(json!(-5)),
        arg_graph(json!(1.5)),
        arg_graph(json!(true)),
        arg_graph(json!("text")),
        arg_graph(json!({"type": "$ref", "name": "num"})),
        arg_graph(edge("$res", Json::Null)),
        arg_graph(edge("$dep", json!(2))),
        arg_graph(edge("$barrier", json!("all"))),
        arg_graph(edge("$res", json!([0, 1, 3]))),
        arg_graph(edge("$res", json!("0-num"))),
        arg_graph(edge("$res", json!("k"))),
        arg_graph(edge("$res", json!("3"))),
        arg_graph(json!({"type": "$res", "predecessor": {"name": "up"}})),
        // Unsupported fields of the full format count as absent when empty.
        json!({"nodes": [{"name": "a", "function": "f", "loop": null, "loop_args": [], "condition": {},
                          "group_size": null}], "post_nodes": [], "network_config": null}),
    ];
    let typed = [
        ("i8", json!(-128)),
        ("i16", json!(32767)),
        ("i32", json!(-1)),
        ("i64", json!(i64::MIN)),
        ("isize", json!(-3)),
        ("u8", json!(255)),
        ("u16", json!(65535)),
        ("u32", json!(u32::MAX)),
        ("u64", json!(u64::MAX)),
        ("usize", json!(7)),
        ("i128", json!("-170141183460469231731687303715884105728")),
        ("i128", json!(-4)),
        ("u128", json!("340282366920938463463374607431768211455")),
        ("f32", json!(1.5)),
        ("f64", json!(2)),
        ("bool", json!(false)),
        ("char", json!("é")),
        ("String", json!("")),
        ("Complex32", json!([1.0, -0.5])),
        ("Complex64", json!([0, 1])),
        ("Vec<u8>", json!([1, 2, 3])),
        ("Vec<f64>", json!([])),
        ("Vec<Complex64>", json!([[1, 2], [3, 4]])),
        ("Vec<String>", json!(["a", "b"])),
        ("Vec<char>", json!(["x"])),
        ("Vec<u128>", json!(["1", 2])),
    ];
    cases.extend(typed.iter().map(|(ty, value)| arg_graph(json!({"type": ty, "value": value}))));
    cases.push(json!({"initializations": [{"name": "v", "value": {"type": "Vec<i16>", "value": [-1]}}],
                      "nodes": [{"name": "a", "function": "f", "args": [{"type": "$ref", "name": "v"}]}]}));
    let validator = validator();
    for case in &cases {
        if let Err(error) = parses(case) {
            panic!("the parser rejects {case}: {error}");
        }
        assert_eq!(complaints(&validator, case), Vec::<String>::new(), "the schema rejects {case}");
    }
}

#[test]
fn shape_errors_are_rejected_by_both() {
    let edge = |predecessor: Json| json!({"type": "$res", "predecessor": predecessor});
    let cases = [
        json!([]),
        json!({}),
        json!({"nodes": []}),
        json!({"nodes": null}),
        json!({"nodes": [], "extra": 1}),
        json!({"name": 3, "nodes": [{"name": "a", "function": "f"}]}),
        json!({"nodes": [{"name": "a"}]}),
        json!({"nodes": [{"name": "", "function": "f"}]}),
        json!({"nodes": [{"function": "f"}]}),
        json!({"nodes": [{"name": "a", "function": "f", "colour": "red"}]}),
        json!({"nodes": [{"name": "a", "function": "f"}], "initializations": [{"name": "x"}]}),
        json!({"nodes": [{"name": "a", "function": "f"}], "initializations": [{"name": "x", "value": null}]}),
        json!({"nodes": [{"name": "a", "function": "f"}], "initializations": [{"name": "x", "value": [1]}]}),
        json!({"nodes": [{"name": "a", "function": "f"}], "initializations": [{"name": "x", "value": 1, "y": 2}]}),
        node_graph(json!({"factor": 0})),
        node_graph(json!({"factor": -2})),
        node_graph(json!({"factor": 1.5})),
        node_graph(json!({"priority": "urgent"})),
        node_graph(json!({"priority": 3_000_000_000u64})),
        node_graph(json!({"use_workers": "a-b"})),
        node_graph(json!({"use_workers": -1})),
        node_graph(json!({"args": {}})),
        arg_graph(json!(null)),
        arg_graph(json!([1, 2])),
        arg_graph(json!({"value": 1})),
        arg_graph(json!({"type": "u8", "value": 300})),
        arg_graph(json!({"type": "u8", "value": -1})),
        arg_graph(json!({"type": "u8"})),
        arg_graph(json!({"type": "u8", "value": 1, "unit": "ms"})),
        arg_graph(json!({"type": "u9", "value": 1})),
        arg_graph(json!({"type": "Vec<Vec<u8>>", "value": [[1]]})),
        arg_graph(json!({"type": "Vec<u8>", "value": 1})),
        arg_graph(json!({"type": "char", "value": "ab"})),
        arg_graph(json!({"type": "bool", "value": 1})),
        arg_graph(json!({"type": "Complex32", "value": [1]})),
        arg_graph(json!({"type": "u128", "value": "12x"})),
        arg_graph(json!({"type": "$ref"})),
        arg_graph(json!({"type": "$ref", "name": "num", "extra": 1})),
        arg_graph(json!({"type": "$res"})),
        arg_graph(edge(json!({}))),
        arg_graph(edge(json!({"name": "up", "index": []}))),
        arg_graph(edge(json!({"name": "up", "index": [1.5]}))),
        arg_graph(edge(json!({"name": "up", "index": true}))),
        arg_graph(edge(json!({"name": "up", "indexes": "0"}))),
        arg_graph(json!({"type": "$res", "predecessor": {"name": "up"}, "extra": 1})),
    ];
    let validator = validator();
    for case in &cases {
        assert!(parses(case).is_err(), "the parser accepts {case}");
        assert!(!validator.is_valid(case), "the schema accepts {case}, which the parser rejects");
    }
}

/// Loops, conditions and computed initializations: the schema and the parser both accept them.
#[test]
fn loops_conditions_and_computed_initializations_validate_and_parse() {
    let cases = [
        json!({"nodes": [{"name": "a", "function": "f"}],
               "initializations": [{"name": "n", "value": 8},
                                   {"name": "plan", "function": "fft_planner", "args": [{"type": "$ref", "name": "n"}]}]}),
        json!({"nodes": [{"name": "a", "function": "f"}], "initializations": [{"name": "p", "func": "mk", "factor": 2}]}),
        json!({"nodes": [{"name": "a", "function": "f"}], "post_nodes": [{"name": "b", "function": "g"}]}),
        json!({"nodes": [{"name": "a", "function": "f", "factor": 4, "group_size": 4}]}),
        node_graph(json!({"loop": {"name": "iter", "factor": "num"}})),
        node_graph(json!({"loop": {"name": "iter", "factor": 2}, "loop_args": [{"type": "$ref", "name": "num"}]})),
        node_graph(json!({"condition": {"operation": "Eq", "value": 1, "value_type": "usize", "function": "check",
                                        "args": [{"type": "$index"}]}})),
        node_graph(json!({"condition": {"operation": "Le", "value": 2.5, "func": "check"}})),
    ];
    let validator = validator();
    for case in &cases {
        assert_eq!(complaints(&validator, case), Vec::<String>::new(), "the schema rejects {case}");
        assert!(parses(case).is_ok(), "the parser rejects {case}: {:?}", parses(case));
    }
}

/// A network source validates and parses, its numbers given by initializations or inline; the
/// schema and the parser both reject `$network` as an argument type.
#[test]
fn network_sources_validate_and_parse() {
    let reads_packets = json!([{"name": "a", "function": "f",
                                "args": [{"type": "$res", "predecessor": {"name": "$network", "index": "all"}}]}]);
    let cases = [
        json!({"initializations": [{"name": "n", "value": 4}, {"name": "host", "value": "127.0.0.1"}],
               "nodes": reads_packets,
               "network_config": {"socket_type": "udp", "num_sockets": 4, "packet_length": 64, "frame_packets": "n",
                                  "address": "host", "start_port": 9000, "extract_packet_func": "x",
                                  "id_function": "id", "index_function": {"function": "ix", "args": [1]}}}),
        json!({"nodes": reads_packets,
               "network_config": {"socket_type": "tcp", "packet_length": 16, "stream_packets": 2, "start_port": 0}}),
    ];
    let validator = validator();
    for case in &cases {
        assert_eq!(complaints(&validator, case), Vec::<String>::new(), "the schema rejects {case}");
        assert!(parses(case).is_ok(), "the parser rejects {case}: {:?}", parses(case));
    }
    let as_type = arg_graph(json!({"type": "$network", "socket": 0}));
    assert!(!complaints(&validator, &as_type).is_empty(), "the schema accepts {as_type}");
    assert!(matches!(parses(&as_type), Err(GraphError::Invalid { .. })), "{:?}", parses(&as_type));
}

#[test]
fn tomii_schema_prints_the_schema() {
    let run = finish({
        let mut command = tomii();
        command.arg("schema");
        command
    });
    assert!(run.status.success(), "tomii schema failed:\n{}", run.stderr);
    let printed: Json = serde_json::from_str(&run.stdout).expect("tomii schema prints JSON");
    assert_eq!(printed, graph::schema());
}

#[test]
fn tomii_schema_dialect_prints_the_tomii_1_2_schema() {
    let run = finish({
        let mut command = tomii();
        command.args(["schema", "--dialect", "tomii-1.2"]);
        command
    });
    assert!(run.status.success(), "tomii schema --dialect tomii-1.2 failed:\n{}", run.stderr);
    let printed: Json = serde_json::from_str(&run.stdout).expect("tomii schema prints JSON");
    assert_eq!(printed, graph::schema_of(graph::Dialect::Tomii12));
}
