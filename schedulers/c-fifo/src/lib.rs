//! `c-fifo`: exports the FIFO scheduler of `c_fifo.c` under the entry symbol the loader looks up.
//!
//! The scheduler is all C (see README.md). This file exists because a cdylib built by rustc exports
//! only the Rust items marked `#[unsafe(no_mangle)]`, never the symbols of the C objects linked into
//! it, so the C table is re-exported by this one-line shim. It must never hold any policy, and it
//! has no `abi_stable` root module: the loader checks a C scheduler at the C level only.

#![deny(unsafe_code)]

use tomii_types::abi::TomiiSchedulerVtable;

// SAFETY: `c_fifo.c` defines `const TomiiSchedulerVtable *tomii_c_fifo_vtable(void)` with exactly
// this signature; it takes nothing and returns a pointer to a static table, so calling it is safe.
#[allow(unsafe_code)]
unsafe extern "C" {
    /// The static table of `c_fifo.c`, valid for the life of the process.
    safe fn tomii_c_fifo_vtable() -> *const TomiiSchedulerVtable;
}

/// The entry symbol: `const TomiiSchedulerVtable *tomii_scheduler_v1(void)`.
#[allow(unsafe_code)] // an exported symbol needs `#[unsafe(no_mangle)]`
#[unsafe(no_mangle)]
pub extern "C" fn tomii_scheduler_v1() -> *const TomiiSchedulerVtable {
    tomii_c_fifo_vtable()
}
