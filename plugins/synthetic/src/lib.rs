//! Synthetic kernels for tests and benchmarks. Their behaviour is exact and documented in README.md
//! so that tests can predict every result: `checksum` in particular must never change, since the
//! reference executors of the test suites recompute it.

#![deny(unsafe_code)]

use std::cell::RefCell;
use std::hint::black_box;
use std::time::{Duration, Instant};

use tomii_types::kernel::{Args, CallCtx, KernelError, Value, ValueRef};

/// Does nothing and returns nothing, whatever its arguments.
pub fn noop(_ctx: &CallCtx, _args: &Args) -> Result<Value, KernelError> {
    Ok(Value::none())
}

/// Busy-waits for `args[0]` microseconds (further arguments are ignored).
pub fn spin(_ctx: &CallCtx, args: &Args) -> Result<Value, KernelError> {
    let duration = Duration::from_micros(args.u64(0)?);
    let start = Instant::now();
    while start.elapsed() < duration {
        std::hint::spin_loop();
    }
    Ok(Value::none())
}

thread_local! {
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Writes one byte in every 64 of an `args[0]`-byte buffer kept per thread (grown on first use),
/// so each call touches that much memory without allocating.
pub fn touch(_ctx: &CallCtx, args: &Args) -> Result<Value, KernelError> {
    let bytes = usize::try_from(args.u64(0)?).map_err(|_| KernelError::from("touch: size too large"))?;
    SCRATCH.with(|scratch| {
        let mut buf = scratch.borrow_mut();
        if buf.len() < bytes {
            buf.resize(bytes, 0);
        }
        for byte in buf[..bytes].iter_mut().step_by(64) {
            *byte = byte.wrapping_add(1);
        }
        black_box(&buf[..bytes]);
    });
    Ok(Value::none())
}

/// FNV-1a 64-bit prime.
const PRIME: u64 = 0x0000_0100_0000_01b3;
/// FNV-1a 64-bit offset basis.
const BASIS: u64 = 0xcbf2_9ce4_8422_2325;

/// One step of the checksum: fold `word` into `hash`.
pub fn mix(hash: u64, word: u64) -> u64 {
    let h = (hash ^ word).wrapping_mul(PRIME);
    h ^ (h >> 29)
}

/// FNV-1a over bytes.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(BASIS, |h, &b| (h ^ u64::from(b)).wrapping_mul(PRIME))
}

/// The 64-bit word an argument contributes to a checksum.
fn word(value: &ValueRef<'_>) -> u64 {
    match *value {
        ValueRef::None => 0,
        ValueRef::Bool(b) => u64::from(b),
        ValueRef::Int(v) => v as u64,
        ValueRef::UInt(v) => v,
        ValueRef::I128(v) => mix(v as u64, (v >> 64) as u64),
        ValueRef::U128(v) => mix(v as u64, (v >> 64) as u64),
        ValueRef::F32(v) => u64::from(v.to_bits()),
        ValueRef::F64(v) => v.to_bits(),
        ValueRef::C32([re, im]) => mix(u64::from(re.to_bits()), u64::from(im.to_bits())),
        ValueRef::C64([re, im]) => mix(re.to_bits(), im.to_bits()),
        ValueRef::Char(c) => u64::from(c),
        ValueRef::Str(s) => fnv1a(s.as_bytes()),
        ValueRef::Bytes(b) | ValueRef::Array(_, b) => fnv1a(b),
        ValueRef::List(items) => items.iter().fold(BASIS, |h, item| mix(h, word(&item))),
        ValueRef::Object(type_id, _) => u64::from(type_id),
    }
}

/// A deterministic u64 of the call's identity and inputs:
/// `mix(mix(mix(fnv1a(node), instance), frame), w)` folded over the words `w` of the arguments in
/// order. A task that ran on another frame's data, or on the wrong inputs, gives another result.
pub fn checksum(ctx: &CallCtx, args: &Args) -> Result<Value, KernelError> {
    let seed = mix(mix(fnv1a(ctx.node().as_bytes()), u64::from(ctx.instance)), ctx.frame);
    Ok(Value::u64(args.iter().fold(seed, |h, arg| mix(h, word(&arg)))))
}

/// `checksum`, registered as variadic: the host passes the trailing results as one LIST, whose
/// word folds its items' words from the FNV basis.
pub fn checksum_list(ctx: &CallCtx, args: &Args) -> Result<Value, KernelError> {
    checksum(ctx, args)
}

/// `args[0] mod args[1]` as a u64 (unsigned integers; a zero divisor is an error). Handy as a
/// condition's function: with `$index` it selects every k-th instance.
pub fn modulo(_ctx: &CallCtx, args: &Args) -> Result<Value, KernelError> {
    let (value, divisor) = (args.u64(0)?, args.u64(1)?);
    value.checked_rem(divisor).map(Value::u64).ok_or_else(|| KernelError::from("modulo: the divisor is 0"))
}

/// Always fails, with `args[0]` as the message when it is a string.
pub fn fail(_ctx: &CallCtx, args: &Args) -> Result<Value, KernelError> {
    let message = args.str(0).unwrap_or("fail kernel called");
    Err(KernelError::from(message))
}

/// Always panics (the export shim must catch it and report an error status).
pub fn panic(_ctx: &CallCtx, _args: &Args) -> Result<Value, KernelError> {
    panic!("panic kernel called")
}

/// The product of its arguments (unsigned integers; none: 1) as a u64; fails on overflow. Handy
/// as a computed initialization giving a count (antennas × symbols).
pub fn product(_ctx: &CallCtx, args: &Args) -> Result<Value, KernelError> {
    let mut product: u64 = 1;
    for k in 0..args.len() {
        product = product.checked_mul(args.u64(k)?).ok_or_else(|| KernelError::from("product: overflow"))?;
    }
    Ok(Value::u64(product))
}

/// `args[1]` (a string) read as the type named by `args[0]`: "u64", "i64", "isize", "f64" or
/// "String". Makes a value of any of those types, e.g. to test what a count refuses.
pub fn typed(_ctx: &CallCtx, args: &Args) -> Result<Value, KernelError> {
    let (ty, text) = (args.str(0)?, args.str(1)?);
    let bad = || KernelError::from(format!("typed: {text:?} is not a {ty}"));
    Ok(match ty {
        "u64" => Value::u64(text.parse().map_err(|_| bad())?),
        "i64" => Value::i64(text.parse().map_err(|_| bad())?),
        "isize" => Value::int(tomii_types::abi::TOMII_TAG_ISIZE, text.parse::<i64>().map_err(|_| bad())? as u64),
        "f64" => Value::f64(text.parse().map_err(|_| bad())?),
        "String" => Value::string(text.to_owned()),
        other => return Err(KernelError::from(format!("typed: unknown type {other:?}"))),
    })
}

/// Appends one line, `"<node> <instance>"`, to the file `args[0]` (created if missing) and
/// returns `args[1]` (an unsigned integer) as a u64: a computed initialization with a side effect
/// that the tests count.
pub fn append(ctx: &CallCtx, args: &Args) -> Result<Value, KernelError> {
    use std::io::Write;
    let (path, value) = (args.str(0)?, args.u64(1)?);
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| KernelError::from(format!("append: {path}: {e}")))?;
    writeln!(file, "{} {}", ctx.node(), ctx.instance).map_err(|e| KernelError::from(format!("append: {path}: {e}")))?;
    Ok(Value::u64(value))
}

tomii_types::export_kernels!("synthetic"; noop, spin, touch, checksum, [variadic] checksum_list, modulo, fail, panic,
    product, typed, append);
