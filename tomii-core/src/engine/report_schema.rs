//! The JSON Schema (draft 2020-12) of the run report (`--report FILE`, `run_graph(...).report`);
//! `tomii schema --report` prints it. Must never drift from the `Serialize` types of `report.rs`,
//! `analysis.rs` and `advice.rs`: `tests/schema.rs` validates real reports (completed, failed,
//! interrupted, network) against it, and every object here lists all of its keys.

use serde_json::{Value as Json, json};

/// The JSON Schema of a run report.
pub fn report_schema() -> Json {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Tomii run report",
        "description": "What a run measured (tomii-core/src/engine/report.rs). Besides this runtime's keys it carries \
            Tomii 1.2's: summary, per_node's 1.2 fields, critical_path, resource_utilization, bottleneck_hints and \
            optimization_suggestions.",
        "type": "object",
        "required": [
            "tomii_version", "graph", "graph_dialect", "graph_warnings", "scheduler", "workers", "slots", "frames",
            "frames_abandoned", "frames_excluded", "tasks", "tasks_inlined", "tasks_kept", "inline_continuation", "pop_batch", "wall_time_s", "throughput_frames_per_s", "tasks_per_s",
            "latency_us", "source", "interrupted", "status", "error", "task_timing", "trace", "trace_records",
            "trace_lost", "trace_wait_s", "trace_released", "per_node", "per_worker", "summary", "critical_path",
            "resource_utilization", "bottleneck_hints", "optimization_suggestions"
        ],
        "additionalProperties": false,
        "properties": properties(),
        "$defs": defs()
    })
}

/// The report's own keys.
fn properties() -> Json {
    json!({
        "tomii_version": {"type": "string"},
        "graph": {"type": "string"},
        "scheduler": {"$ref": "#/$defs/scheduler"},
        "workers": {"$ref": "#/$defs/count", "minimum": 1},
        "slots": {"$ref": "#/$defs/count", "minimum": 1},
        "frames": {"$ref": "#/$defs/count", "description": "Frames completed."},
        "frames_abandoned": {"$ref": "#/$defs/count"},
        "frames_excluded": {"$ref": "#/$defs/count"},
        "graph_dialect": {"enum": ["tomii", "tomii-1.2"]},
        "graph_warnings": {"type": "array", "items": {"type": "string"}},
        "tasks": {"$ref": "#/$defs/count"},
        "tasks_inlined": {"$ref": "#/$defs/count"},
        "tasks_kept": {"$ref": "#/$defs/count", "description": "Tasks the scheduler kept for the worker whose completion made them ready (push_keep)."},
        "inline_continuation": {"type": "boolean"},
        "pop_batch": {"$ref": "#/$defs/count", "minimum": 1, "description": "The most tasks one pop could hand a worker: the run's pop_batch, or the scheduler's choice when the run left it unset."},
        "wall_time_s": {"$ref": "#/$defs/figure"},
        "throughput_frames_per_s": {"$ref": "#/$defs/figure", "description": "Frames over wall time."},
        "tasks_per_s": {"$ref": "#/$defs/figure"},
        "latency_us": {"$ref": "#/$defs/latency"},
        "source": {"type": "string", "description": "Where frames came from: counted, session, network, simulated."},
        "interrupted": {"type": "boolean"},
        "status": {"enum": ["completed", "interrupted", "failed"]},
        "error": {"type": ["string", "null"], "description": "Why the run failed (status failed)."},
        "workers_unreported": {"type": "array", "items": {"$ref": "#/$defs/count"}},
        "task_timing": {"type": "boolean"},
        "trace": {"type": "boolean"},
        "trace_records": {"$ref": "#/$defs/count"},
        "trace_lost": {"$ref": "#/$defs/count", "description": "Trace records lost: none (workers wait for the trace instead)."},
        "trace_wait_s": {"$ref": "#/$defs/figure", "description": "Seconds the workers waited, summed, for the host to take the trace: it could not keep up and set the run's pace."},
        "trace_released": {"$ref": "#/$defs/count"},
        "per_node": {
            "type": "array",
            "description": "Sorted by total_exec_us, largest first; graph order among equal times.",
            "items": {"$ref": "#/$defs/node"}
        },
        "per_worker": {"type": "array", "items": {"$ref": "#/$defs/worker"}},
        "summary": {"$ref": "#/$defs/summary"},
        "critical_path": {"$ref": "#/$defs/critical_path"},
        "resource_utilization": {
            "type": "object",
            "required": ["worker_busy_pct"],
            "additionalProperties": false,
            "properties": {
                "worker_busy_pct": {
                    "description": "Per worker, by worker index; null without task timing.",
                    "type": ["array", "null"],
                    "items": {"$ref": "#/$defs/figure"}
                }
            }
        },
        "bottleneck_hints": {"type": "array", "items": {"type": "string"}},
        "optimization_suggestions": {"type": "array", "items": {"$ref": "#/$defs/suggestion"}},
        "network": {
            "description": "The network source's section (sockets, packets, drops by cause).",
            "type": "object",
            "required": ["socket_type", "ports", "packets_received", "packets_accepted", "packets_dropped"]
        },
        "simulation": {
            "description": "A simulated run's section (tomii simulate, sim/README.md): its virtual workers, seed, \
                arrivals, overheads and the cost model of each node.",
            "type": "object",
            "required": ["virtual_workers", "seed", "cost_model", "virtual_time_s"],
            "properties": {
                "virtual_workers": {"$ref": "#/$defs/count"},
                "seed": {"$ref": "#/$defs/count"},
                "arrival_interval_ns": {"type": ["integer", "null"], "minimum": 0},
                "overhead_pop_ns": {"$ref": "#/$defs/count"},
                "overhead_task_ns": {"$ref": "#/$defs/count"},
                "cost_model": {"type": "object", "additionalProperties": {"type": "string"}},
                "virtual_time_s": {"$ref": "#/$defs/figure"},
                "trace_error": {"type": ["string", "null"]}
            }
        }
    })
}

/// The schema's `$defs`, one function each (a single `json!` would exceed the macro recursion limit).
fn defs() -> Json {
    let mut defs = serde_json::Map::new();
    defs.insert("count".into(), count_def());
    defs.insert("figure".into(), figure_def());
    defs.insert("maybe_figure".into(), maybe_figure_def());
    defs.insert("latency".into(), latency_def());
    defs.insert("scheduler".into(), scheduler_def());
    defs.insert("node".into(), node_def());
    defs.insert("worker".into(), worker_def());
    defs.insert("summary".into(), summary_def());
    defs.insert("critical_path".into(), critical_path_def());
    defs.insert("suggestion".into(), suggestion_def());
    Json::Object(defs)
}

fn count_def() -> Json {
    json!({"type": "integer", "minimum": 0})
}

fn figure_def() -> Json {
    json!({"type": "number", "minimum": 0})
}

fn maybe_figure_def() -> Json {
    json!({"type": ["number", "null"], "minimum": 0})
}

fn latency_def() -> Json {
    json!({
        "type": "object",
        "required": ["mean", "p50", "p95", "p99", "min", "max", "stdev"],
        "additionalProperties": false,
        "properties": {
            "mean": {"$ref": "#/$defs/figure"}, "p50": {"$ref": "#/$defs/figure"},
            "p95": {"$ref": "#/$defs/figure"}, "p99": {"$ref": "#/$defs/figure"},
            "min": {"$ref": "#/$defs/figure"}, "max": {"$ref": "#/$defs/figure"},
            "stdev": {"$ref": "#/$defs/figure"}
        }
    })
}

fn scheduler_def() -> Json {
    json!({
        "type": "object",
        "required": ["name", "path", "layout_checked", "stats", "ejected"],
        "additionalProperties": false,
        "properties": {
            "name": {"type": "string"},
            "path": {"type": "string"},
            "layout_checked": {"type": "boolean"},
            "stats": {"description": "What the scheduler's stats hook reported, JSON or text."},
            "ejected": {
                "oneOf": [
                    {"type": "null"},
                    {
                        "type": "object",
                        "required": ["violation", "frames_done", "requeued_tasks"],
                        "additionalProperties": false,
                        "properties": {
                            "violation": {"type": "string"},
                            "frames_done": {"$ref": "#/$defs/count"},
                            "requeued_tasks": {"$ref": "#/$defs/count"}
                        }
                    }
                ]
            }
        }
    })
}

fn node_def() -> Json {
    json!({
        "type": "object",
        "required": [
            "node", "name", "function", "count", "skipped", "total_us", "mean_us", "max_us", "factor",
            "invocations", "mean_exec_us", "p99_exec_us", "total_exec_us", "pct_of_total", "on_critical_path"
        ],
        "additionalProperties": false,
        "properties": {
            "node": {"$ref": "#/$defs/count", "description": "The node's id, as trace records name it."},
            "name": {"type": "string"},
            "function": {"type": "string"},
            "count": {"$ref": "#/$defs/count"},
            "skipped": {"$ref": "#/$defs/count"},
            "total_us": {"$ref": "#/$defs/maybe_figure"},
            "mean_us": {"$ref": "#/$defs/maybe_figure"},
            "max_us": {"$ref": "#/$defs/maybe_figure"},
            "factor": {"type": "integer", "minimum": 1},
            "invocations": {"$ref": "#/$defs/count"},
            "mean_exec_us": {"$ref": "#/$defs/maybe_figure"},
            "p99_exec_us": {"$ref": "#/$defs/maybe_figure"},
            "total_exec_us": {"$ref": "#/$defs/maybe_figure"},
            "pct_of_total": {"type": ["number", "null"], "minimum": 0, "maximum": 100.000001},
            "on_critical_path": {"type": "boolean"}
        }
    })
}

fn worker_def() -> Json {
    json!({
        "type": "object",
        "required": ["worker", "tasks", "busy_s", "busy_fraction"],
        "additionalProperties": false,
        "properties": {
            "worker": {"$ref": "#/$defs/count"},
            "tasks": {"$ref": "#/$defs/count"},
            "busy_s": {"$ref": "#/$defs/maybe_figure"},
            "busy_fraction": {"$ref": "#/$defs/maybe_figure"}
        }
    })
}

fn summary_def() -> Json {
    json!({
        "type": "object",
        "required": [
            "total_streams", "avg_latency_us", "p50_latency_us", "p99_latency_us", "throughput_frames_per_sec",
            "throughput_streams_per_sec", "total_tasks_per_stream", "scheduling_overhead_diagnostic"
        ],
        "additionalProperties": false,
        "properties": {
            "total_streams": {"$ref": "#/$defs/count"},
            "avg_latency_us": {"$ref": "#/$defs/figure"},
            "p50_latency_us": {"$ref": "#/$defs/figure"},
            "p99_latency_us": {"$ref": "#/$defs/figure"},
            "throughput_frames_per_sec": {"$ref": "#/$defs/figure"},
            "throughput_streams_per_sec": {"$ref": "#/$defs/figure"},
            "total_tasks_per_stream": {"$ref": "#/$defs/count"},
            "scheduling_overhead_diagnostic": {
                "type": "object",
                "required": ["critical_path_exec_us", "overhead_us", "overhead_pct", "interpretation"],
                "additionalProperties": false,
                "properties": {
                    "critical_path_exec_us": {"$ref": "#/$defs/maybe_figure"},
                    "overhead_us": {"type": ["number", "null"]},
                    "overhead_pct": {"type": ["number", "null"]},
                    "interpretation": {"type": "string"}
                }
            }
        }
    })
}

fn critical_path_def() -> Json {
    json!({
        "type": "object",
        "required": ["length_nodes", "max_node_factor", "estimated_latency_us", "nodes_sample"],
        "additionalProperties": false,
        "properties": {
            "length_nodes": {"$ref": "#/$defs/count"},
            "max_node_factor": {"$ref": "#/$defs/count"},
            "estimated_latency_us": {"$ref": "#/$defs/maybe_figure"},
            "nodes_sample": {"type": "array", "items": {"type": "string"}, "maxItems": 10}
        }
    })
}

fn suggestion_def() -> Json {
    json!({
        "type": "object",
        "required": [
            "priority", "category", "description", "action", "knob", "suggested_value",
            "estimated_speedup", "confidence", "rule"
        ],
        "additionalProperties": false,
        "properties": {
            "priority": {"enum": ["high", "medium", "low"]},
            "category": {"enum": ["parallelism", "pipelining", "scheduling_overhead", "granularity"]},
            "description": {"type": "string"},
            "action": {"type": "string"},
            "knob": {
                "type": "string",
                "description": "A runtime knob of `tomii knobs --json`, or NODE.group_size of knob_space."
            },
            "suggested_value": {"type": ["integer", "boolean", "string"]},
            "estimated_speedup": {"type": "number", "minimum": 1},
            "confidence": {"enum": ["medium", "low"]},
            "rule": {"type": "string"}
        }
    })
}
