//! The packet buffers: one allocation made when the run starts, handed out buffer by buffer, so
//! that receiving a packet allocates nothing. A buffer becomes the `$network` instance's value
//! (a BYTES value whose release gives the buffer back), or is given back at once when the packet
//! is dropped or decoded into another value.

use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::sync::Arc;

use crossbeam_queue::ArrayQueue;
use tomii_types::abi::{TOMII_TAG_BYTES, TomiiBuffer, TomiiPayload, TomiiValue};
use tomii_types::kernel::Value;

/// 16 bytes, 16-aligned: buffers start on this alignment, so a payload after the 16-byte header
/// is aligned for any element type.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Chunk([u8; 16]);

pub(crate) struct PacketPool {
    memory: Box<[UnsafeCell<Chunk>]>,
    /// Chunks per buffer.
    stride: usize,
    free: ArrayQueue<u32>,
}

// SAFETY: a buffer is written only by the thread that took it from `free`, and read only after it
// was handed over (through the door's queue, a release-acquire pair) or given back.
unsafe impl Sync for PacketPool {}
// SAFETY: as above; the memory is plain bytes.
unsafe impl Send for PacketPool {}

impl PacketPool {
    /// `count` buffers of at least `bytes` bytes each.
    pub(crate) fn new(count: u32, bytes: usize) -> Arc<Self> {
        let stride = bytes.div_ceil(size_of::<Chunk>()).max(1);
        let free = ArrayQueue::new(count.max(1) as usize);
        for index in 0..count {
            let _ = free.push(index);
        }
        let memory = (0..count as usize * stride).map(|_| UnsafeCell::new(Chunk([0; 16]))).collect();
        Arc::new(PacketPool { memory, stride, free })
    }

    /// Bytes of each buffer.
    pub(crate) fn buffer_len(&self) -> usize {
        self.stride * size_of::<Chunk>()
    }

    /// A free buffer, if any.
    pub(crate) fn take(&self) -> Option<u32> {
        self.free.pop()
    }

    /// Gives back a buffer taken and not turned into a value.
    pub(crate) fn give_back(&self, index: u32) {
        let _ = self.free.push(index);
    }

    /// Buffers in all.
    pub(crate) fn capacity(&self) -> usize {
        self.free.capacity()
    }

    /// Buffers not handed out.
    #[cfg(test)]
    pub(crate) fn available(&self) -> usize {
        self.free.len()
    }

    /// The first byte of buffer `index`, from the pointer to the whole allocation (so the
    /// buffer's bytes are within its provenance).
    fn start(&self, index: u32) -> *mut u8 {
        let base = UnsafeCell::raw_get(self.memory.as_ptr()).cast::<u8>();
        // SAFETY: `index` is below the buffer count, so the offset is inside `memory`.
        unsafe { base.add(index as usize * self.stride * size_of::<Chunk>()) }
    }

    /// The buffer `index`, to write a packet into.
    ///
    /// # Safety
    /// The caller took `index` from the pool and has not turned it into a value or given it back,
    /// and holds no other reference to it.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn buffer(&self, index: u32) -> &mut [u8] {
        // SAFETY: the buffer is `buffer_len` bytes inside `memory`, owned by the caller.
        unsafe { std::slice::from_raw_parts_mut(self.start(index), self.buffer_len()) }
    }

    /// The first `len` bytes of buffer `index` as an owned BYTES value; dropping the value gives the
    /// buffer back.
    ///
    /// # Safety
    /// As for [`buffer`](Self::buffer); the caller hands its ownership of the buffer to the value.
    pub(crate) unsafe fn into_value(self: &Arc<Self>, index: u32, len: usize) -> Value {
        debug_assert!(len <= self.buffer_len());
        let buffer = TomiiBuffer {
            data: self.start(index).cast(),
            len,
            ctx: Arc::into_raw(Arc::clone(self)) as *mut c_void,
            release: Some(release_packet),
        };
        let raw = TomiiValue { tag: TOMII_TAG_BYTES, elem: 0, payload: TomiiPayload { buf: buffer } };
        // SAFETY: a valid BYTES value owning its buffer until `release_packet`.
        unsafe { Value::from_raw(raw) }
    }
}

/// Gives a packet buffer back to its pool (the value's release function).
unsafe extern "C" fn release_packet(data: *mut c_void, _len: usize, ctx: *mut c_void) {
    // SAFETY: `ctx` is the pool reference `into_value` leaked for this value; taken back once.
    let pool = unsafe { Arc::from_raw(ctx as *const PacketPool) };
    let offset = (data as usize - pool.start(0) as usize) / pool.buffer_len();
    pool.give_back(offset as u32);
}

#[cfg(test)]
mod tests {
    use super::*;
    use tomii_types::kernel::ValueRef;

    #[test]
    fn a_buffer_turned_into_a_value_comes_back_when_the_value_is_dropped() {
        let pool = PacketPool::new(2, 40);
        assert_eq!(pool.buffer_len(), 48);
        let index = pool.take().unwrap();
        // SAFETY: taken above.
        unsafe { pool.buffer(index)[..3].copy_from_slice(b"abc") };
        // SAFETY: taken above, handed to the value.
        let value = unsafe { pool.into_value(index, 3) };
        assert_eq!(pool.available(), 1);
        assert!(matches!(value.view(), ValueRef::Bytes(b"abc")));
        assert_eq!(value.view_ptr_align(), 0);
        drop(value);
        assert_eq!(pool.available(), 2);
        assert_eq!(Arc::strong_count(&pool), 1);
    }

    trait Align {
        fn view_ptr_align(&self) -> usize;
    }

    impl Align for Value {
        fn view_ptr_align(&self) -> usize {
            match self.view() {
                ValueRef::Bytes(bytes) => bytes.as_ptr() as usize % 16,
                _ => usize::MAX,
            }
        }
    }
}
