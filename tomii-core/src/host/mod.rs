//! The host core: the part of the host side of the scheduler ABI that does not depend on the
//! clock, written once and run under both (one host core, two clocks). The
//! real engine (`engine/`) runs it over its atomic slot table and worker threads, the simulator
//! (`sim/`) over a plain table and an event queue, so a contract check holds in both.
//!
//! | file | what |
//! |---|---|
//! | `handle.rs` | the task handle a scheduler is given: its encoding and decoding |
//! | `counters.rs` | a task's counter word: arrivals, readiness, claims; a frame's sink count |
//! | `claim.rs` | the verification of a popped task, and the violations with their messages |
//! | `config.rs` | the checks of a run's options against the graph |
//!
//! It must never read a clock, start a thread, take a lock, call a plugin or allocate on the
//! per-task path (`claim::verify`, the counters, the codec): those are the executors' own. What it
//! knows of a table it is given through [`Word`] and [`SlotView`].

mod claim;
mod config;
mod counters;
mod handle;

pub(crate) use claim::{Claim, Need, SlotView, Violation, verify};
pub(crate) use config::check_config;
pub(crate) use counters::{ClaimError, Counters, FIRST_GENERATION, Word, frame_complete, sinks};
pub use handle::MAX_SLOTS;
pub(crate) use handle::{TaskRef, decode_handle, encode_handle};
