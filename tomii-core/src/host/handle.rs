//! The task handle: the opaque 64-bit name a scheduler is given for a task, and hands back when
//! it pops it. The host encodes it from where the task lives (its slot, its instance, the low bits
//! of the slot's generation) and decodes what a scheduler returns; nothing else is in it. It must
//! never be trusted: `claim::verify` checks every decoded handle against the table.

/// Bits of a handle holding the instance index.
const INSTANCE_BITS: u32 = 32;
/// Bits of a handle holding the slot index.
const SLOT_BITS: u32 = 24;
/// The most slots a run may have.
pub const MAX_SLOTS: u32 = 1 << SLOT_BITS;

/// Where a handle points, once decoded (not yet checked against a table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TaskRef {
    pub(crate) slot: u32,
    pub(crate) instance: u32,
    /// The low 8 bits of the generation the handle was issued for.
    pub(crate) tag: u32,
}

/// Encodes a task handle: generation tag (8 bits), slot (24 bits), instance (32 bits).
#[inline(always)]
pub(crate) fn encode_handle(slot: u32, instance: u32, generation: u32) -> u64 {
    (u64::from(generation & 0xFF) << (INSTANCE_BITS + SLOT_BITS))
        | (u64::from(slot) << INSTANCE_BITS)
        | u64::from(instance)
}

/// Decodes a handle without checking it against a table.
#[inline(always)]
pub(crate) fn decode_handle(handle: u64) -> TaskRef {
    TaskRef {
        slot: ((handle >> INSTANCE_BITS) & u64::from(MAX_SLOTS - 1)) as u32,
        instance: handle as u32,
        tag: (handle >> (INSTANCE_BITS + SLOT_BITS)) as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_round_trip() {
        let handle = encode_handle(MAX_SLOTS - 1, u32::MAX, 0x1234);
        assert_eq!(decode_handle(handle), TaskRef { slot: MAX_SLOTS - 1, instance: u32::MAX, tag: 0x34 });
    }
}
