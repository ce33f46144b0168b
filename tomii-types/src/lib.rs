//! Tomii's two ABIs and nothing else: the scheduler vtable with its task descriptor, and the kernel
//! registry with its tagged value. `abi` is the raw C view (source of the generated headers);
//! `scheduler` and `kernel` are the safe Rust layers with their export macros. `scheduler` also
//! holds the safe building blocks schedulers share (worker-range classes, per-class heaps and,
//! behind the cargo feature `testing`, their unit-test harness); none of them enters the ABI.
//!
//! This crate depends on no other crate of the workspace, and never will.

pub mod abi;
mod errbuf;
pub mod kernel;
pub mod scheduler;
pub mod stable;

pub use errbuf::{WORKER_PREFIX, catch_panic, catch_panic_marked, install_quiet_hook, panic_message, write_error};

#[doc(hidden)]
pub mod __private {
    pub use abi_stable;
}
