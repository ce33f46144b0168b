//! Loads the fifo scheduler and the synthetic kernels, or every shipped scheduler, at run time from
//! the cargo target directory the running binary was built into (`target/<profile>/`, found from
//! `current_exe`).
//!
//! Never link them instead: bench/ is a leaf that depends on tomii-core only (scripts/check_deps.py).
//! A missing or unloadable library panics with what to build: there is nothing to measure without.

use std::path::{Path, PathBuf};

use tomii_core::engine::{self, RunConfig, RunOutcome};
use tomii_core::graph::CompiledGraph;
use tomii_core::plugin::{KernelSet, SchedulerPlugin, scheduler_file_name};

/// What to build when the libraries are missing or stale.
const BUILD_HINT: &str = "run `cargo build --release --workspace` first";

/// The kernels and the scheduler every benchmark runs with.
pub struct Plugins {
    /// `libtomii_synthetic.so`: `noop`, `spin`, …
    pub kernels: KernelSet,
    /// `libtomii_sched_fifo.so`.
    pub scheduler: SchedulerPlugin,
}

impl Plugins {
    /// Runs `graph` with these plugins; a failed run is a bug in the benchmark or the engine.
    pub fn run(&self, graph: &CompiledGraph, config: &RunConfig) -> RunOutcome {
        self.run_with(&self.scheduler, graph, config)
    }

    /// Runs `graph` with these kernels and `scheduler` instead of fifo; a failed run panics.
    pub fn run_with(&self, scheduler: &SchedulerPlugin, graph: &CompiledGraph, config: &RunConfig) -> RunOutcome {
        engine::run(graph, &self.kernels, scheduler, config)
            .unwrap_or_else(|e| panic!("running {} with {} ({config:?}) failed: {e}", graph.name, scheduler.name))
    }
}

/// Loads `libtomii_synthetic.so` and `libtomii_sched_fifo.so` from [`plugin_dir`].
pub fn plugins() -> Plugins {
    let dir = plugin_dir();
    let kernels = KernelSet::load(&[dir.join(synthetic_file())]).unwrap_or_else(|e| panic!("{e}; {BUILD_HINT}"));
    let scheduler =
        SchedulerPlugin::load(&dir.join(scheduler_file_name("fifo"))).unwrap_or_else(|e| panic!("{e}; {BUILD_HINT}"));
    Plugins { kernels, scheduler }
}

/// Every scheduler the workspace ships, the fifo baseline first.
pub const SHIPPED_SCHEDULERS: [&str; 8] =
    ["fifo", "c-fifo", "random", "priority", "critical-path", "locality", "work-stealing", "multi-slot-batch"];

/// Loads every scheduler of [`SHIPPED_SCHEDULERS`] from [`plugin_dir`], then any other built there
/// (by name), each with its name (`libtomii_sched_<name>.so`, `_` read as `-`). Panics naming the
/// scheduler when one is missing or does not load.
pub fn schedulers() -> Vec<(String, SchedulerPlugin)> {
    let dir = plugin_dir();
    let mut names: Vec<String> = SHIPPED_SCHEDULERS.iter().map(|name| name.to_string()).collect();
    let others: Vec<String> = built_schedulers(&dir).into_iter().filter(|name| !names.contains(name)).collect();
    names.extend(others);
    names
        .into_iter()
        .map(|name| {
            let path = dir.join(scheduler_file_name(&name));
            assert!(path.is_file(), "scheduler {name:?}: {} is missing; {BUILD_HINT}", path.display());
            let plugin =
                SchedulerPlugin::load(&path).unwrap_or_else(|e| panic!("scheduler {name:?}: {e}; {BUILD_HINT}"));
            (name, plugin)
        })
        .collect()
}

/// The schedulers built in `dir`, sorted, by the naming rule of `installed_schedulers`.
fn built_schedulers(dir: &Path) -> Vec<String> {
    let prefix = format!("{}tomii_sched_", std::env::consts::DLL_PREFIX);
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut names: Vec<String> = entries
        .flatten()
        .filter_map(|entry| {
            let file = entry.file_name().into_string().ok()?;
            let stem = file.strip_prefix(&prefix)?.strip_suffix(std::env::consts::DLL_SUFFIX)?;
            Some(stem.replace('_', "-"))
        })
        .collect();
    names.sort();
    names
}

/// The nearest directory above the running executable holding `libtomii_synthetic.so`: for
/// `target/release/deps/engine-…` and `target/release/engine_figures` alike, `target/release`.
pub fn plugin_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("cannot locate the running executable: {e}"));
    find_plugin_dir(&exe)
        .unwrap_or_else(|| panic!("no {} in any directory above {}: {BUILD_HINT}", synthetic_file(), exe.display()))
}

fn find_plugin_dir(exe: &Path) -> Option<PathBuf> {
    exe.ancestors().skip(1).find(|dir| dir.join(synthetic_file()).is_file()).map(Path::to_path_buf)
}

/// `libtomii_synthetic.so` on Linux: the kernels every benchmark runs.
pub fn synthetic_file() -> String {
    format!("{}tomii_synthetic{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_nearest_directory_with_the_kernels() {
        let root = tempfile::tempdir().unwrap();
        let deps = root.path().join("release/deps");
        std::fs::create_dir_all(&deps).unwrap();
        let exe = deps.join("engine-0123");
        assert_eq!(find_plugin_dir(&exe), None);
        std::fs::write(root.path().join(synthetic_file()), b"").unwrap();
        std::fs::write(root.path().join("release").join(synthetic_file()), b"").unwrap();
        assert_eq!(find_plugin_dir(&exe), Some(root.path().join("release")));
    }

    #[test]
    fn built_schedulers_are_named_from_their_files() {
        let dir = tempfile::tempdir().unwrap();
        for file in [scheduler_file_name("work-stealing"), scheduler_file_name("fifo"), synthetic_file()] {
            std::fs::write(dir.path().join(file), b"").unwrap();
        }
        assert_eq!(built_schedulers(dir.path()), ["fifo", "work-stealing"]);
        assert!(built_schedulers(&dir.path().join("absent")).is_empty());
    }
}
