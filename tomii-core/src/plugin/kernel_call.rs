//! The kernel port: every call of a kernel goes through a [`KernelCaller`], which builds the call
//! context, lends the kernel its error buffer and decodes the message, and marks the call for the
//! watchdog when the run limits kernels. Workers, initializations, post-nodes and the network
//! source all call kernels here and nowhere else.
//!
//! A call allocates nothing, takes no lock and formats nothing unless the kernel fails.

use std::ffi::{CStr, c_char};

use tomii_types::abi::{TOMII_NO_WORKER, TOMII_OK, TomiiCallCtx, TomiiErrorBuf, TomiiValue};
use tomii_types::kernel::Value;

use super::Kernel;
use super::watchdog::{Call, Mark};

/// Where a kernel call comes from, as its call context tells the kernel.
#[derive(Clone, Copy)]
pub(crate) struct CallSite {
    pub(crate) frame: u64,
    pub(crate) slot: u32,
    /// The instance's index within its node (`ctx.instance`).
    pub(crate) index: u32,
    /// The node's name, NUL-terminated, alive for the call.
    pub(crate) node: *const c_char,
}

/// What a kernel that never runs does: it fails. The kernel of an input node, whose values come
/// from the frame source; the engine never calls it.
pub(crate) const NEVER_CALLED: Kernel = Kernel { func: never_called, data: std::ptr::null_mut(), flags: 0 };

unsafe extern "C" fn never_called(
    _args: *const TomiiValue,
    _nargs: usize,
    _out: *mut TomiiValue,
    _ctx: *const TomiiCallCtx,
) -> i32 {
    1
}

/// What a kernel call returned: [`ok`](Self::ok), or a failure whose message
/// [`KernelCaller::failure`] reads.
#[derive(Clone, Copy, Debug)]
#[must_use]
pub(crate) struct Status(i32);

impl Status {
    #[inline(always)]
    pub(crate) fn ok(self) -> bool {
        self.0 == TOMII_OK
    }
}

/// One thread's caller of kernels: its error buffer and its mark, if it has one.
pub(crate) struct KernelCaller<'w> {
    /// The call context: its fixed part (size, worker, error buffer) set once, the rest per call.
    ctx: TomiiCallCtx,
    /// Where a failing kernel writes its message, NUL-terminated (`ctx.err` points at it; it is
    /// never resized, so the pointer holds wherever the caller moves).
    error: Vec<u8>,
    /// A worker's watchdog mark: with a kernel time limit (`RunConfig::kernel_timeout`) every
    /// call is marked on it, else only noted (`Mark::note_kernel`: which kernel a worker is in,
    /// for a run that cannot stop to say).
    watch: Option<Mark<'w>>,
    /// Whether the run limits kernels: calls are marked, not only noted.
    limited: bool,
}

impl<'w> KernelCaller<'w> {
    /// A caller for `worker`'s calls with a `capacity`-byte error buffer, marked on `watch` when
    /// `limited`, else noted there.
    pub(crate) fn new(worker: u32, capacity: usize, watch: Option<Mark<'w>>, limited: bool) -> Self {
        let mut error = vec![0; capacity.max(1)];
        let ctx = TomiiCallCtx {
            struct_size: size_of::<TomiiCallCtx>() as u32,
            worker,
            frame: 0,
            slot: 0,
            instance: 0,
            node: std::ptr::null(),
            err: TomiiErrorBuf { ptr: error.as_mut_ptr().cast(), cap: error.len() },
            data: std::ptr::null_mut(),
        };
        KernelCaller { ctx, error, watch, limited }
    }

    /// A caller outside any worker's task (an initialization, a post-node, a network source's
    /// decoding), unwatched.
    pub(crate) fn outside_run(capacity: usize) -> KernelCaller<'static> {
        KernelCaller::new(TOMII_NO_WORKER, capacity, None, false)
    }

    /// Calls `kernel` with `args`, borrowed, from `site`, its result into `out`, which the caller
    /// set to NONE: owned by the caller when the status is ok, else for
    /// [`failure`](Self::failure) to release. `subject` names the call to the watchdog
    /// (`slot << 32 | instance`).
    #[inline(always)]
    pub(crate) fn call(
        &mut self,
        kernel: Kernel,
        args: &[TomiiValue],
        site: CallSite,
        subject: u64,
        out: &mut TomiiValue,
    ) -> Status {
        self.error[0] = 0;
        let ctx = &mut self.ctx;
        (ctx.frame, ctx.slot, ctx.instance, ctx.node, ctx.data) =
            (site.frame, site.slot, site.index, site.node, kernel.data);
        let ctx = &self.ctx;
        // SAFETY (both calls): `args` are valid values borrowed for the call; `out`, `ctx`, the
        // error buffer `ctx.err` points at (this caller's, never resized) and the node name (the
        // caller's promise, `CallSite::node`) are live until it returns.
        Status(match self.watch {
            Some(mark) if self.limited => mark
                .watch_subject(Call::Kernel, subject, || unsafe { (kernel.func)(args.as_ptr(), args.len(), out, ctx) }),
            Some(mark) => mark.note_kernel(subject, || unsafe { (kernel.func)(args.as_ptr(), args.len(), out, ctx) }),
            None => unsafe { (kernel.func)(args.as_ptr(), args.len(), out, ctx) },
        })
    }

    /// [`call`](Self::call) with an owned result, or the kernel's message.
    pub(crate) fn call_owned(&mut self, kernel: Kernel, args: &[TomiiValue], site: CallSite) -> Result<Value, String> {
        let mut out = TomiiValue::NONE;
        let status = self.call(kernel, args, site, 0, &mut out);
        if !status.ok() {
            return Err(self.failure(out, status));
        }
        // SAFETY: the kernel handed over ownership of its result.
        Ok(unsafe { Value::from_raw(out) })
    }

    /// A call outside any frame from `node` (instance `index`, frame `frame`, slot 0), with an owned
    /// result: an initialization, a post-node or a network source's function.
    pub(crate) fn call_from(
        &mut self,
        kernel: Kernel,
        args: &[TomiiValue],
        node: &CStr,
        index: u32,
        frame: u64,
    ) -> Result<Value, String> {
        self.call_owned(kernel, args, CallSite { frame, slot: 0, index, node: node.as_ptr() })
    }

    /// The message of the call that returned `status`, a failure; what the kernel left in `out`
    /// is released.
    #[cold]
    #[inline(never)]
    pub(crate) fn failure(&self, out: TomiiValue, status: Status) -> String {
        let Status(status) = status;
        // SAFETY: per the ABI a failing kernel leaves `out` NONE or releasable.
        drop(unsafe { Value::from_raw(out) });
        let end = self.error.iter().position(|&b| b == 0).unwrap_or(self.error.len());
        let text = String::from_utf8_lossy(&self.error[..end]).into_owned();
        if text.is_empty() { format!("returned status {status} without a message") } else { text }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    unsafe extern "C" fn fails_with_message(
        _args: *const TomiiValue,
        _nargs: usize,
        _out: *mut TomiiValue,
        ctx: *const TomiiCallCtx,
    ) -> i32 {
        // SAFETY: the host's context and its error buffer are live for the call.
        unsafe {
            let err = (*ctx).err;
            let text = b"bad input\0";
            std::ptr::copy_nonoverlapping(text.as_ptr(), err.ptr.cast::<u8>(), text.len().min(err.cap));
        }
        7
    }

    #[test]
    fn a_failing_kernel_gives_its_message_or_its_status() {
        let name = c"node";
        let mut caller = KernelCaller::outside_run(64);
        let kernel = Kernel { func: fails_with_message, data: std::ptr::null_mut(), flags: 0 };
        assert_eq!(caller.call_from(kernel, &[], name, 0, 0).err().as_deref(), Some("bad input"));
        let silent = caller.call_from(NEVER_CALLED, &[], name, 0, 0).err();
        assert_eq!(silent.as_deref(), Some("returned status 1 without a message"), "the buffer is cleared first");
    }
}
