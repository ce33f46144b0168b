//! Tomii's two ABIs and nothing else: the scheduler vtable with its task descriptor, and the kernel
//! registry with its tagged value. `abi` is the raw C view (source of the generated headers);
//! `scheduler` and `kernel` are the safe Rust layers with their export macros; `export` is the
//! run-time support of `#[tomii_export]` (plain functions as kernels). `scheduler` also
//! holds the safe building blocks schedulers share (worker-range classes, per-class heaps and,
//! behind the cargo feature `testing`, their unit-test harness); none of them enters the ABI.
//!
//! This crate depends on no other crate of the workspace but its own proc-macro half
//! (`macros/`, the `tomii-macros` crate), and never will.

pub mod abi;
mod errbuf;
pub mod export;
pub mod kernel;
pub mod scheduler;
pub mod stable;

pub use errbuf::{WORKER_PREFIX, catch_panic, catch_panic_marked, install_quiet_hook, panic_message, write_error};
pub use tomii_macros::tomii_export;

#[doc(hidden)]
pub mod __private {
    pub use abi_stable;
    pub use inventory;
}
