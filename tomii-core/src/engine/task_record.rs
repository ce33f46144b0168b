//! The trace record as a run exports it: [`TaskRecord`], one task execution with its times in
//! nanoseconds since the run started, and [`TaskRecord::FIELDS`], its field list (name, type,
//! unit), declared once, with the struct, by one macro. Every export of the trace is a view of
//! this record: the CSV file (`csv_trace.rs`), the NumPy array of Python's `RunResult.trace` (the
//! records' bytes, its dtype read from `FIELDS`), the Chrome trace, Tomii 1.2's timing file and
//! scheduler record, and the decisions file.
//!
//! Workers record [`TraceRecord`]s, in clock ticks; those become `TaskRecord`s once, on the host
//! thread, as the trace streams in (`TraceSink`) or when a run's trace is handed over. Nothing
//! here runs on a worker.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::RunOutcome;
use super::clock::Clock;
use super::trace::TraceRecord;

/// A field's type in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldType {
    U32,
    U64,
}

impl FieldType {
    /// Its bytes.
    pub const fn size(self) -> usize {
        match self {
            FieldType::U32 => 4,
            FieldType::U64 => 8,
        }
    }

    /// Its NumPy type string, in this machine's byte order (the records' bytes are native).
    pub const fn numpy(self) -> &'static str {
        match (self, cfg!(target_endian = "little")) {
            (FieldType::U32, true) => "<u4",
            (FieldType::U64, true) => "<u8",
            (FieldType::U32, false) => ">u4",
            (FieldType::U64, false) => ">u8",
        }
    }
}

/// The [`FieldType`] of a Rust type a record's field may have.
trait HasFieldType {
    const TYPE: FieldType;
}

impl HasFieldType for u32 {
    const TYPE: FieldType = FieldType::U32;
}

impl HasFieldType for u64 {
    const TYPE: FieldType = FieldType::U64;
}

/// One field of [`TaskRecord`]: its name, type, unit (None: a count or an index) and offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    pub name: &'static str,
    pub ty: FieldType,
    pub unit: Option<&'static str>,
    pub offset: usize,
}

/// Declares [`TaskRecord`] and its [`TaskRecord::FIELDS`] from one list of fields.
macro_rules! task_record {
    ($($(#[doc = $doc:literal])+ $name:ident: $ty:ident, unit $unit:expr;)+) => {
        /// One task execution, as a run exports it. `#[repr(C)]`, without padding: its bytes are
        /// what Python's `RunResult.trace` holds, field by field as [`TaskRecord::FIELDS`] says.
        #[repr(C)]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, IntoBytes, FromBytes, Immutable, KnownLayout)]
        pub struct TaskRecord {
            $($(#[doc = $doc])+ pub $name: $ty,)+
        }

        impl TaskRecord {
            /// The fields, in their order in memory.
            pub const FIELDS: &'static [Field] = &[$(Field {
                name: stringify!($name),
                ty: <$ty as HasFieldType>::TYPE,
                unit: $unit,
                offset: std::mem::offset_of!(TaskRecord, $name),
            }),+];
        }
    };
}

task_record! {
    /// The frame the task belongs to.
    frame: u64, unit None;
    /// When it became ready.
    ready_ns: u64, unit Some("ns");
    /// When a worker started it.
    start_ns: u64, unit Some("ns");
    /// When it ended.
    end_ns: u64, unit Some("ns");
    /// Its node: the node's index in the graph.
    node: u32, unit None;
    /// Its instance: the instance's index in the node.
    instance: u32, unit None;
    /// The slot its frame ran in.
    slot: u32, unit None;
    /// The worker that ran it.
    worker: u32, unit None;
}

impl TaskRecord {
    /// The bytes of one record.
    pub const SIZE: usize = std::mem::size_of::<TaskRecord>();

    /// A worker's record, its times read with the run's clock.
    #[inline]
    pub fn of(record: &TraceRecord, clock: &Clock) -> Self {
        TaskRecord {
            frame: record.frame,
            ready_ns: clock.ns_since_start(record.ready),
            start_ns: clock.ns_since_start(record.start),
            end_ns: clock.ns_since_start(record.end),
            node: record.node,
            instance: record.instance,
            slot: record.slot,
            worker: record.worker,
        }
    }

    /// Records as their bytes (what Python reads with the dtype of [`TaskRecord::FIELDS`]).
    pub fn as_bytes(records: &[TaskRecord]) -> &[u8] {
        records.as_bytes()
    }

    /// Records from their bytes, aligned or not; None unless `bytes` is whole records.
    pub fn from_bytes(bytes: &[u8]) -> Option<Vec<TaskRecord>> {
        if !bytes.len().is_multiple_of(Self::SIZE) {
            return None;
        }
        bytes.chunks_exact(Self::SIZE).map(|record| TaskRecord::read_from_bytes(record).ok()).collect()
    }
}

impl RunOutcome {
    /// The run's trace as it is exported: every task execution, sorted by start time.
    pub fn task_records(&self) -> Vec<TaskRecord> {
        self.trace.iter().map(|record| TaskRecord::of(record, &self.clock)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_field_list_covers_the_record_in_order() {
        let mut next = 0;
        for field in TaskRecord::FIELDS {
            assert_eq!(field.offset, next, "{} is not where the list puts it", field.name);
            next += field.ty.size();
        }
        assert_eq!(next, TaskRecord::SIZE);
    }

    #[test]
    fn records_come_back_from_their_bytes() {
        let records = [
            TaskRecord { frame: 7, ready_ns: 1, start_ns: 2, end_ns: 3, node: 4, instance: 5, slot: 6, worker: 8 },
            TaskRecord { frame: u64::MAX, worker: u32::MAX, ..TaskRecord::default() },
        ];
        let bytes = TaskRecord::as_bytes(&records);
        assert_eq!(bytes.len(), 2 * TaskRecord::SIZE);
        assert_eq!(TaskRecord::from_bytes(bytes).as_deref(), Some(&records[..]));
        // Unaligned bytes read as well.
        let shifted = [&[0u8][..], bytes].concat();
        assert_eq!(TaskRecord::from_bytes(&shifted[1..]).as_deref(), Some(&records[..]));
        assert_eq!(TaskRecord::from_bytes(&bytes[1..]), None);
    }
}
