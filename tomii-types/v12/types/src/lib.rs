//! The Tomii 1.2 plugin surface, over this runtime's kernel ABI: a 1.2 plugin crate, as its author
//! left it, builds against this crate (under the dependency name `tomii-types`) and against
//! `tomii12-macro` (as `tomii-macro`), and its library loads like any kernel library.
//!
//! `CmTypes` and its helpers are 1.2's; `Complex32`/`Complex64` are re-exported as 1.2 did.
//! A 1.2 object (anything `#[tomii_export]` returns that is not a primitive or a string) crosses
//! the ABI as one OBJECT value holding a `CmTypes` ([`object`]): consumers borrow it, never copy it.
//! The library's registry symbol is exported from here ([`registry`]), so the crate needs no
//! registration line. This crate never exports 1.2's `tomii_abi_version`: the loader reads that
//! symbol as the mark of a library built against 1.2's own crates.
//!
//! Depends on no crate of ours but `tomii-types`.

mod call;
mod object;
mod registry;
mod value;

pub use num_complex::{Complex32, Complex64};
pub use value::{AnyHeldData, C32, C64, CmTypes, RawMutGuard};

pub use object::{TOMII12_OBJECT_TYPE_ID, from_value, into_value};

/// What `#[tomii_export]` expands to calls; not for hand-written code.
#[doc(hidden)]
pub mod __rt {
    pub use crate::call::{Args12, Borrowed, BorrowedMut, FromF64, Signature12, call};
    pub use crate::object::{into_value, object_value};
    pub use sdk::abi::{TomiiCallCtx, TomiiValue};
    pub use sdk::export::{IntoValue, Registration};
    pub use sdk::kernel::{KernelError, Value};
}

#[doc(hidden)]
pub mod __private {
    pub use sdk::__private::inventory;
}
