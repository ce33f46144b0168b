//! Calls one resolved kernel of `libtomii_synthetic.so` through the kernel ABI, as the engine's
//! workers do (the registry's function pointer, a `TomiiCallCtx` carrying the entry's `data`,
//! borrowed argument values, the result taken back), and does the same work as plain Rust, for the
//! `kernel_call` benchmarks: the ABI's overhead as a ratio.
//!
//! It only measures: a kernel that returns an error status panics. Nothing in a call allocates.

use std::ffi::CStr;

use tomii_core::plugin::{Kernel, KernelSet};
use tomii_types::abi::{TOMII_OK, TomiiCallCtx, TomiiErrorBuf, TomiiValue};
use tomii_types::kernel::{Value, ValueRef};

/// The node name every call passes (`ctx.node`).
pub const NODE: &CStr = c"bench";
/// The instance and frame every call passes: they seed `checksum`.
pub const INSTANCE: u32 = 3;
pub const FRAME: u64 = 7;
/// The two `u64` arguments of [`CallCase::ChecksumU64s`].
pub const WORDS: [u64; 2] = [0x0123_4567_89ab_cdef, 42];
/// The length of the bytes argument of [`CallCase::ChecksumBytes`]: 1 KiB.
pub const BYTES_LEN: usize = 1024;

/// What one benchmark calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallCase {
    /// `noop` with no arguments: the call alone.
    Noop,
    /// `checksum` of two `u64` arguments ([`WORDS`]).
    ChecksumU64s,
    /// `checksum` of one bytes argument of [`BYTES_LEN`] bytes.
    ChecksumBytes,
}

impl CallCase {
    pub const ALL: [CallCase; 3] = [CallCase::Noop, CallCase::ChecksumU64s, CallCase::ChecksumBytes];

    /// The benchmark's name.
    pub fn name(self) -> &'static str {
        match self {
            CallCase::Noop => "noop_0_args",
            CallCase::ChecksumU64s => "checksum_2_u64",
            CallCase::ChecksumBytes => "checksum_1KiB_bytes",
        }
    }

    fn kernel(self) -> &'static str {
        match self {
            CallCase::Noop => "noop",
            CallCase::ChecksumU64s | CallCase::ChecksumBytes => "checksum",
        }
    }

    fn args(self) -> Vec<Value> {
        match self {
            CallCase::Noop => Vec::new(),
            CallCase::ChecksumU64s => WORDS.iter().map(|&w| Value::u64(w)).collect(),
            CallCase::ChecksumBytes => vec![Value::bytes(bytes())],
        }
    }
}

/// The bytes argument: 0, 1, …, 255, 0, 1, … ([`BYTES_LEN`] of them).
pub fn bytes() -> Vec<u8> {
    (0..BYTES_LEN).map(|i| i as u8).collect()
}

/// One kernel resolved from a [`KernelSet`] and its arguments, ready to be called repeatedly.
pub struct AbiCall {
    case: CallCase,
    kernel: Kernel,
    /// Owns the argument buffers that `args` borrows.
    _owned: Vec<Value>,
    args: Vec<TomiiValue>,
    error: [u8; 256],
}

impl AbiCall {
    /// Resolves `case`'s kernel in `kernels` (the public API the engine uses); panics when missing.
    pub fn new(kernels: &KernelSet, case: CallCase) -> Self {
        let kernel = kernels
            .resolve(|| format!("benchmark kernel_call/{}", case.name()), case.kernel())
            .unwrap_or_else(|e| panic!("{e}"));
        let owned = case.args();
        let args = owned.iter().map(|value| *value.as_raw()).collect();
        AbiCall { case, kernel, _owned: owned, args, error: [0; 256] }
    }

    /// One call, as the engine's worker makes it: a fresh context, `out` pre-set to NONE, the
    /// status checked, the result owned (and released) here. Returns a `u64` result, else 0.
    #[inline]
    pub fn call(&mut self) -> u64 {
        let ctx = TomiiCallCtx {
            struct_size: size_of::<TomiiCallCtx>() as u32,
            worker: 0,
            frame: FRAME,
            slot: 0,
            instance: INSTANCE,
            node: NODE.as_ptr(),
            err: TomiiErrorBuf { ptr: self.error.as_mut_ptr().cast(), cap: self.error.len() },
            data: self.kernel.data,
        };
        let mut out = TomiiValue::NONE;
        // SAFETY: `args` are valid values borrowed from `_owned`, which outlives the call; `out`,
        // `ctx`, the node name and the error buffer are live for the call.
        let status = unsafe { (self.kernel.func)(self.args.as_ptr(), self.args.len(), &mut out, &ctx) };
        // SAFETY: the kernel handed over `out` (NONE or releasable, even on failure); nobody else owns it.
        let out = unsafe { Value::from_raw(out) };
        if status != TOMII_OK {
            self.fail(status);
        }
        match out.view() {
            ValueRef::UInt(v) => v,
            _ => 0,
        }
    }

    #[cold]
    fn fail(&self, status: i32) -> ! {
        let end = self.error.iter().position(|&b| b == 0).unwrap_or(self.error.len());
        let message = String::from_utf8_lossy(&self.error[..end]);
        panic!("kernel {:?} ({}) returned status {status}: {message}", self.case.kernel(), self.case.name())
    }
}

/// The same work as the synthetic kernels, in plain Rust (plugins/synthetic/README.md defines
/// `checksum` exactly): what a call costs without the ABI.
pub mod inline {
    use super::{FRAME, INSTANCE};

    const PRIME: u64 = 0x0000_0100_0000_01b3;
    const BASIS: u64 = 0xcbf2_9ce4_8422_2325;

    /// `noop`: nothing.
    #[inline(always)]
    pub fn noop() -> u64 {
        0
    }

    /// `checksum` of `node`'s call ([`INSTANCE`], [`FRAME`]) with `u64` arguments `words`.
    #[inline(always)]
    pub fn checksum_words(node: &str, words: &[u64]) -> u64 {
        words.iter().fold(seed(node), |h, &w| mix(h, w))
    }

    /// `checksum` of `node`'s call ([`INSTANCE`], [`FRAME`]) with one bytes argument.
    #[inline(always)]
    pub fn checksum_bytes(node: &str, bytes: &[u8]) -> u64 {
        mix(seed(node), fnv1a(bytes))
    }

    #[inline(always)]
    fn seed(node: &str) -> u64 {
        mix(mix(fnv1a(node.as_bytes()), u64::from(INSTANCE)), FRAME)
    }

    #[inline(always)]
    fn mix(hash: u64, word: u64) -> u64 {
        let h = (hash ^ word).wrapping_mul(PRIME);
        h ^ (h >> 29)
    }

    #[inline(always)]
    fn fnv1a(bytes: &[u8]) -> u64 {
        bytes.iter().fold(BASIS, |h, &b| (h ^ u64::from(b)).wrapping_mul(PRIME))
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn fnv1a_is_the_standard_hash() {
            assert_eq!(fnv1a(b""), BASIS);
            assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        }

        #[test]
        fn checksum_folds_the_words_after_the_seed() {
            let seed = mix(mix(fnv1a(b"n"), 3), 7);
            assert_eq!(checksum_words("n", &[]), seed);
            assert_eq!(checksum_words("n", &[1, 2]), mix(mix(seed, 1), 2));
            assert_eq!(checksum_bytes("n", b"xy"), mix(seed, fnv1a(b"xy")));
        }
    }
}
