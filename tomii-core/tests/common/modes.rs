//! The two clocks a run can have: a real run (`engine::run`, kernels on worker threads) and a
//! simulated one (`sim::simulate`, costs drawn on virtual workers), behind one call, so that a
//! test body written once holds in both (tokio's `rt_common.rs` runs its bodies against every
//! runtime flavour the same way). Both go through the real loader and the same scheduler port.

use std::time::Duration;

use tomii_core::engine::{self, RunConfig, RunFailure, RunOutcome};
use tomii_core::graph::CompiledGraph;
use tomii_core::plugin::{KernelSet, SchedulerPlugin};
use tomii_core::sim::{self, CostSpec, Dist, SimConfig};

/// Where a run's tasks run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Kernels on the engine's worker threads.
    Real,
    /// No kernel: each task lasts a drawn cost on a virtual worker.
    Simulated,
}

impl Mode {
    /// Runs `graph` with `scheduler` (its path) and `config`, keeping what ran on a failure; fails
    /// the test after `timeout`.
    pub fn run(
        self,
        graph: &CompiledGraph,
        scheduler: &std::path::Path,
        config: &RunConfig,
        timeout: Duration,
    ) -> Result<RunOutcome, RunFailure> {
        let (graph, scheduler, config) = (graph.clone(), scheduler.to_owned(), config.clone());
        let what = format!("a {self:?} run of {} with {}", graph.name, scheduler.display());
        super::within_timeout(timeout, &what, move || {
            let plugin = SchedulerPlugin::load(&scheduler).unwrap_or_else(|e| panic!("{e}"));
            match self {
                Mode::Real => {
                    let kernels = KernelSet::load(&[super::synthetic_lib()]).unwrap_or_else(|e| panic!("{e}"));
                    engine::run_keeping_partial(&graph, &kernels, &plugin, &config)
                }
                Mode::Simulated => sim::simulate(&graph, &plugin, &config, &simulation()),
            }
        })
    }

    /// Whether kernels run, so that frames have outputs.
    pub fn runs_kernels(self) -> bool {
        self == Mode::Real
    }
}

/// The simulation's own settings in these tests: every task 1 to 5 µs, one seed.
pub fn simulation() -> SimConfig {
    let cost = CostSpec { default: Some(Dist::Uniform { lo_ns: 1_000, hi_ns: 5_000 }), ..CostSpec::default() };
    SimConfig { seed: 26, cost, ..SimConfig::default() }
}
