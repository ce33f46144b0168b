//! The raw `#[repr(C)]` ABIs, exactly as C sees them (the headers in `include/tomii/` are generated
//! from `common.rs`, `sched.rs` and `kernel.rs`). Safe wrappers live in `crate::scheduler` and
//! `crate::kernel`; nothing here allocates or dereferences.

pub mod common;
pub mod kernel;
pub mod sched;

pub use common::*;
pub use kernel::*;
pub use sched::*;

/// Name of the scheduler entry symbol, NUL-terminated.
pub const SCHEDULER_ENTRY_SYMBOL: &[u8] = b"tomii_scheduler_v1\0";
/// Name of the kernel registry entry symbol, NUL-terminated.
pub const KERNELS_ENTRY_SYMBOL: &[u8] = b"tomii_kernels_v1\0";

// SAFETY: the exported tables are immutable after construction and their pointers refer to static,
// immutable data (names, function code, entry arrays), so sharing them between threads is sound.
unsafe impl Sync for TomiiSchedulerVtable {}
// SAFETY: as above: a registry points at a static entry array and static names.
unsafe impl Sync for TomiiKernelRegistry {}
// SAFETY: as above: an entry holds a static name, a function pointer and a `data` pointer that the
// host only hands back to the kernel, which must accept calls from any thread.
unsafe impl Sync for TomiiKernelEntry {}
// SAFETY: as above: a knob description holds static strings only.
unsafe impl Sync for TomiiKnobDesc {}

impl TomiiValue {
    /// The value with no payload.
    pub const NONE: TomiiValue = TomiiValue { tag: TOMII_TAG_NONE, elem: 0, payload: TomiiPayload { u: 0 } };
}

impl TomiiKeepGate {
    /// No gate: what the host passes to `keep_gate`, and what a worker without one is left with.
    pub const NONE: TomiiKeepGate = TomiiKeepGate { queued: std::ptr::null(), taken: std::ptr::null() };
}

impl std::fmt::Debug for TomiiValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TomiiValue").field("tag", &self.tag).field("elem", &self.elem).finish_non_exhaustive()
    }
}
