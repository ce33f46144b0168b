//! What a network source counts: packets received, accepted and dropped (each drop with its
//! cause), and frames complete, incomplete, dropped and failed. Written by the receivers, read
//! for the report; counting must never take a lock.
//!
//! Every count is Relaxed: they are statistics read after the receivers stopped.

use std::sync::atomic::{AtomicU64, Ordering};

/// Why a packet was dropped (the report counts each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cause {
    /// Not `packet_length` bytes.
    WrongLength,
    /// Its frame id is more than `frame_window` beyond the newest seen (a stray, or the first of
    /// a jump the next packet confirms), or it was a stray's packet (`Counts::stray`).
    OutsideWindow,
    /// Its frame's reception was already over: timed out, failed, given up, or older than the
    /// window.
    Late,
    /// Its frame found every slot busy (with `on_slots_busy = drop`).
    SlotsBusy,
    /// Its frame already had a packet of this index.
    Duplicate,
    /// Its index is not below `frame_packets`.
    BadIndex,
    /// A source kernel (extract, id or index function) failed on it.
    SourceError,
    /// Every packet buffer was in use.
    NoBuffer,
}

impl Cause {
    pub(crate) const ALL: [Cause; 8] = [
        Cause::WrongLength,
        Cause::OutsideWindow,
        Cause::Late,
        Cause::SlotsBusy,
        Cause::Duplicate,
        Cause::BadIndex,
        Cause::SourceError,
        Cause::NoBuffer,
    ];

    /// Its key in the report.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Cause::WrongLength => "wrong_length",
            Cause::OutsideWindow => "outside_window",
            Cause::Late => "late",
            Cause::SlotsBusy => "slots_busy",
            Cause::Duplicate => "duplicate",
            Cause::BadIndex => "bad_index",
            Cause::SourceError => "source_error",
            Cause::NoBuffer => "no_buffer",
        }
    }
}

/// Packet and frame counts of a network source, written by the receivers.
#[derive(Default)]
pub(crate) struct Counts {
    /// Packets read from the sockets.
    pub received: AtomicU64,
    /// Packets given to a frame.
    pub accepted: AtomicU64,
    dropped: [AtomicU64; Cause::ALL.len()],
    /// Frames whose every packet arrived.
    pub complete: AtomicU64,
    /// Frames abandoned with packets missing: timed out, or open when the run stopped.
    pub incomplete: AtomicU64,
    /// Frames dropped at their first packet (or, collecting, at their last) because every slot
    /// was busy.
    pub dropped_frames: AtomicU64,
    /// Frames abandoned because a source kernel failed on one of their packets.
    pub failed: AtomicU64,
    /// Frames of a lone first packet far from the others, given up when the window started again
    /// nearer them: not among the run's frames (their packets count as `outside_window`).
    pub stray: AtomicU64,
    /// Packets that never arrived, of the frames given up on (an id skipped and never seen
    /// counts as a frame whose every packet is missing).
    pub missing: AtomicU64,
    /// TCP connections accepted.
    pub connections: AtomicU64,
}

impl Counts {
    pub(crate) fn drop_packet(&self, cause: Cause) {
        self.dropped[cause as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn drop_packets(&self, cause: Cause, count: u64) {
        self.dropped[cause as usize].fetch_add(count, Ordering::Relaxed);
    }

    pub(crate) fn dropped(&self, cause: Cause) -> u64 {
        self.dropped[cause as usize].load(Ordering::Relaxed)
    }
}
