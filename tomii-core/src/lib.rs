//! The Tomii runtime: compiles a graph once, then replays it over many frames with schedulers and
//! kernels loaded as plugins at run time. Never depends on a scheduler or plugin crate.

pub mod cli;
pub mod engine;
pub mod graph;
pub mod knobs;
pub mod network;
pub mod plugin;
