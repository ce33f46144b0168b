//! Loading plugins at run time, and the ports every call into them goes through: scheduler
//! dylibs (`scheduler`), kernel libraries (`kernels`) and their calls (`kernel_call`), both
//! watched by `watchdog`.
//!
//! Every check of a plugin (PLUGIN_SCHEDULER_API.md) happens here, before any plugin code runs beyond its entry
//! symbol: version, table size, NULL callbacks and, for Rust schedulers, the full `abi_stable`
//! layout. Libraries are never unloaded: their code and static tables live for the process, and each
//! file is checked once per process (`checked`).

mod checked;
mod kernel_call;
mod kernels;
mod library;
mod scheduler;
mod watchdog;

pub use checked::FileId;
pub(crate) use kernel_call::{CallSite, KernelCaller, NEVER_CALLED};
pub use kernels::{Kernel, KernelLibrary, KernelSet};
pub(crate) use scheduler::SchedulerCaller;
pub use scheduler::{
    PopBuffer, SchedulerInstance, SchedulerKnob, SchedulerPlugin, SchedulerSetup, installed_schedulers,
    scheduler_file_name, scheduler_search_path,
};
pub(crate) use watchdog::Call;

use std::path::PathBuf;

/// A plugin could not be loaded or used. Each message is one line naming the file and what to do.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error("{path}: cannot load library: {reason}")]
    Open { path: PathBuf, reason: String },
    #[error("{path}: does not export `{symbol}`: {hint}")]
    MissingSymbol { path: PathBuf, symbol: &'static str, hint: &'static str },
    #[error("{path}: {what}")]
    Invalid { path: PathBuf, what: String },
    #[error(
        "{path}: built for {abi} ABI v{found}, but this runtime speaks v{expected}; rebuild the plugin against tomii-types {}",
        env!("CARGO_PKG_VERSION")
    )]
    Version { path: PathBuf, abi: &'static str, found: u32, expected: u32 },
    #[error(
        "{path}: the scheduler's type layout differs from this runtime's (rebuild it against this tomii-types): {detail}"
    )]
    Layout { path: PathBuf, detail: String },
    #[error("scheduler {name:?} not found: looked for {file} in {searched}; build it, or pass --scheduler-plugin PATH")]
    SchedulerNotFound { name: String, file: String, searched: String },
    #[error("scheduler {name:?} ({path}) failed to start: {message}")]
    Create { name: String, path: PathBuf, message: String },
    #[error("{user} uses kernel {}, which no kernel library provides ({searched}); {hint}", crate::graph::quote_name(.kernel))]
    KernelNotFound { user: String, kernel: String, searched: String, hint: String },
    #[error("kernel {kernel:?} is exported by both {first} and {second}; load only one of them")]
    DuplicateKernel { kernel: String, first: PathBuf, second: PathBuf },
}
