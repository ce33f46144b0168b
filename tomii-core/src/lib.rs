//! The Tomii runtime: compiles a graph once, then replays it over many frames with schedulers and
//! kernels loaded as plugins at run time. Never depends on a scheduler or plugin crate.

// The report schema (engine/report_schema.rs) is one `json!` literal deeper than the default limit.
#![recursion_limit = "256"]

pub mod cli;
pub mod engine;
pub mod files;
pub mod graph;
mod host;
pub mod knobs;
pub mod launch;
pub mod network;
pub mod plugin;
pub mod replay;
pub mod sim;
