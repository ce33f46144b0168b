//! `#[tomii_export]` and `kernel_library!` end to end: kernels are called through the registry this
//! test binary exports, as the host calls them, with values built by the safe layer. Checks every
//! supported parameter and result type, opaque objects, variadic lists, the context, renamed
//! kernels, and the messages of wrong arguments, errors and panics.

use std::ffi::{CStr, CString};

use tomii_types::abi::*;
use tomii_types::kernel::{Args, CallCtx, Value, ValueRef};
use tomii_types::tomii_export;

#[tomii_export]
fn add(a: u64, b: u64) -> u64 {
    a + b
}

#[allow(clippy::too_many_arguments)]
#[tomii_export]
fn echo(
    small: u8,
    signed: i16,
    wide: i128,
    real: f32,
    double: f64,
    flag: bool,
    letter: char,
    text: &str,
    owned: String,
    doubles: &[f64],
    ints: Vec<i32>,
    c32: [f32; 2],
    c64: [f64; 2],
) -> String {
    format!(
        "{small} {signed} {wide} {real} {double} {flag} {letter} {text} {owned} {doubles:?} {ints:?} {c32:?} {c64:?}"
    )
}

#[tomii_export]
fn negative() -> i8 {
    -3
}

#[tomii_export]
fn huge() -> u128 {
    u128::MAX - 1
}

#[tomii_export]
fn spectrum(n: usize) -> Vec<[f64; 2]> {
    (0..n).map(|k| [k as f64, -(k as f64)]).collect()
}

#[tomii_export]
fn nothing() {}

#[tomii_export]
fn maybe(present: bool) -> Option<char> {
    present.then_some('x')
}

/// An opaque object: made by one kernel, read by another.
struct Plan {
    len: usize,
}

/// Another object type, to check that type ids tell them apart.
struct Other;

#[tomii_export]
fn make_plan(len: usize) -> Plan {
    Plan { len }
}

#[tomii_export]
fn make_other() -> Other {
    Other
}

#[tomii_export]
fn plan_len(plan: &Plan) -> usize {
    plan.len
}

#[tomii_export(variadic)]
fn scaled_sum(scale: f64, parts: &[&[f64]]) -> f64 {
    scale * parts.iter().flat_map(|part| part.iter()).sum::<f64>()
}

#[tomii_export(variadic, name = "count_items")]
fn count(items: Args) -> usize {
    items.len()
}

#[tomii_export(variadic)]
fn first_kinds(items: &[ValueRef]) -> String {
    items.iter().map(|item| format!("{item:?}")).collect::<Vec<_>>().join(",")
}

#[tomii_export]
fn whoami(ctx: &CallCtx, suffix: &str) -> String {
    format!("{}:{}:{}:{suffix}", ctx.node(), ctx.instance, ctx.frame)
}

#[tomii_export]
fn r#type() -> bool {
    true
}

#[tomii_export]
fn checked_div(a: i64, b: i64) -> Result<i64, String> {
    a.checked_div(b).ok_or_else(|| format!("cannot divide {a} by zero"))
}

#[tomii_export]
fn boom() -> u32 {
    panic!("boom at the boundary")
}

tomii_types::kernel_library!("export-test");

/// Calls kernel `name` as the host would, with node name "node", instance 2 and frame 7.
fn call(name: &str, args: Vec<Value>) -> Result<Value, (i32, String)> {
    // SAFETY: the registry is static; its entries are `count` valid entries.
    let registry = unsafe { &*tomii_kernels_v1() };
    let entries = unsafe { std::slice::from_raw_parts(registry.entries, registry.count) };
    let entry = entries
        .iter()
        .find(|entry| unsafe { CStr::from_ptr(entry.name) }.to_str() == Ok(name))
        .unwrap_or_else(|| panic!("kernel {name} is not in the registry"));
    let raw: Vec<TomiiValue> = args.iter().map(|value| *value.as_raw()).collect();
    // For a variadic kernel, the trailing arguments are already one LIST value (as the host sends).
    let mut message = [0u8; 256];
    let node = CString::new("node").unwrap();
    // SAFETY: all-zero is a valid TomiiCallCtx (pointers NULL, integers 0); the fields the kernel
    // reads are set below.
    let mut ctx: TomiiCallCtx = unsafe { std::mem::zeroed() };
    ctx.struct_size = size_of::<TomiiCallCtx>() as u32;
    ctx.instance = 2;
    ctx.frame = 7;
    ctx.node = node.as_ptr();
    ctx.err = TomiiErrorBuf { ptr: message.as_mut_ptr().cast(), cap: message.len() };
    let mut out = TomiiValue::NONE;
    let func = entry.func.expect("registered kernels have a function");
    // SAFETY: pointers valid for the call; `out` then belongs to us.
    let status = unsafe { func(raw.as_ptr(), raw.len(), &mut out, &ctx) };
    drop(args);
    if status == TOMII_OK {
        // SAFETY: the kernel wrote an owned value.
        Ok(unsafe { Value::from_raw(out) })
    } else {
        let text = CStr::from_bytes_until_nul(&message).unwrap().to_str().unwrap().to_owned();
        Err((status, text))
    }
}

fn text(value: &Value) -> &str {
    match value.view() {
        ValueRef::Str(text) => text,
        other => panic!("expected a string, got {other:?}"),
    }
}

fn error(name: &str, args: Vec<Value>) -> String {
    match call(name, args) {
        Ok(value) => panic!("{name} succeeded with {value:?}"),
        Err((status, message)) => {
            assert_eq!(status, TOMII_ERR, "{message}");
            message
        }
    }
}

#[test]
fn the_registry_lists_every_kernel_by_name_with_its_flags() {
    // SAFETY: static registry.
    let registry = unsafe { &*tomii_kernels_v1() };
    assert_eq!(unsafe { CStr::from_ptr(registry.library) }.to_str(), Ok("export-test"));
    assert_eq!(registry.abi_major, TOMII_KERNEL_ABI_MAJOR);
    assert_eq!(registry.entry_size as usize, size_of::<TomiiKernelEntry>());
    let entries = unsafe { std::slice::from_raw_parts(registry.entries, registry.count) };
    let names: Vec<(&str, u32)> =
        entries.iter().map(|e| (unsafe { CStr::from_ptr(e.name) }.to_str().unwrap(), e.flags)).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "entries are sorted by name");
    assert!(names.contains(&("add", 0)));
    assert!(names.contains(&("count_items", TOMII_KERNEL_VARIADIC)));
    assert!(names.contains(&("scaled_sum", TOMII_KERNEL_VARIADIC)));
    assert!(names.contains(&("type", 0)), "raw identifiers lose their r#");
    assert!(!names.iter().any(|(name, _)| *name == "count"), "a renamed kernel has only its new name");
    assert!(std::ptr::eq(tomii_kernels_v1(), registry), "the registry is built once");
}

#[test]
fn every_parameter_type_converts() {
    let args = vec![
        Value::usize(200),
        Value::i64(-300),
        Value::wide(TOMII_TAG_I128, (-5i128) as u128),
        Value::f64(1.5),
        Value::usize(2),
        Value::bool(true),
        Value::char('λ'),
        Value::string("borrowed".into()),
        Value::string("owned".into()),
        Value::array(vec![0.5f64, 0.25]),
        Value::array(vec![-1i32, 2]),
        Value::c32(1.0, -1.0),
        Value::c32(0.5, 2.0),
    ];
    let echoed = call("echo", args).unwrap();
    assert_eq!(text(&echoed), "200 -300 -5 1.5 2 true λ borrowed owned [0.5, 0.25] [-1, 2] [1.0, -1.0] [0.5, 2.0]");
}

#[test]
fn every_result_type_converts() {
    assert_eq!(call("add", vec![Value::u64(2), Value::usize(3)]).unwrap().view(), ValueRef::UInt(5));
    assert_eq!(call("negative", vec![]).unwrap().view(), ValueRef::Int(-3));
    assert_eq!(call("huge", vec![]).unwrap().view(), ValueRef::U128(u128::MAX - 1));
    assert_eq!(call("nothing", vec![]).unwrap().view(), ValueRef::None);
    assert_eq!(call("maybe", vec![Value::bool(true)]).unwrap().view(), ValueRef::Char('x'));
    assert_eq!(call("maybe", vec![Value::bool(false)]).unwrap().view(), ValueRef::None);
    assert_eq!(call("type", vec![]).unwrap().view(), ValueRef::Bool(true));
    let spectrum = call("spectrum", vec![Value::usize(3)]).unwrap();
    let ValueRef::Array(tag, bytes) = spectrum.view() else { panic!("expected an array, got {spectrum:?}") };
    assert_eq!((tag, bytes.len()), (TOMII_TAG_C64, 3 * 16));
}

#[test]
fn objects_pass_between_kernels_and_their_type_is_checked() {
    let plan = call("make_plan", vec![Value::usize(64)]).unwrap();
    let ValueRef::Object(id, _) = plan.view() else { panic!("expected an object, got {plan:?}") };
    assert_eq!(id, tomii_types::export::object_type_id::<Plan>());
    // The host lends the object: copy its raw value into the arguments without giving it away.
    // SAFETY: `plan` outlives the call and keeps ownership; the copy is never released.
    let borrowed = unsafe { Value::from_raw(borrowed_copy(&plan)) };
    assert_eq!(call("plan_len", vec![borrowed]).unwrap().view(), ValueRef::UInt(64));

    let other = call("make_other", vec![]).unwrap();
    // SAFETY: as above.
    let wrong = unsafe { Value::from_raw(borrowed_copy(&other)) };
    let message = error("plan_len", vec![wrong]);
    assert!(message.starts_with("kernel plan_len, argument 0 (plan): expected an object of type "), "{message}");
    assert!(message.contains("Plan (type id 0x"), "{message}");
    assert!(message.contains("found an object of type id 0x"), "{message}");
}

/// A copy of `value`'s raw form with no release function: a borrow, as the host passes arguments.
fn borrowed_copy(value: &Value) -> TomiiValue {
    let mut raw = *value.as_raw();
    // Objects hold a buffer; without `release`, dropping the copy frees nothing.
    raw.payload.buf.release = None;
    raw
}

#[test]
fn variadic_kernels_take_the_trailing_list() {
    let parts = Value::list(vec![Value::array(vec![1.0f64, 2.0]), Value::array(vec![3.0f64])]);
    assert_eq!(call("scaled_sum", vec![Value::f64(2.0), parts]).unwrap().view(), ValueRef::F64(12.0));
    let items = Value::list(vec![Value::u64(1), Value::string("x".into())]);
    assert_eq!(call("count_items", vec![items]).unwrap().view(), ValueRef::UInt(2));
    let kinds = call("first_kinds", vec![Value::list(vec![Value::bool(true), Value::u64(4)])]).unwrap();
    assert_eq!(text(&kinds), "Bool(true),UInt(4)");

    let bad = Value::list(vec![Value::array(vec![1.0f64]), Value::u64(9)]);
    let message = error("scaled_sum", vec![Value::f64(1.0), bad]);
    assert_eq!(
        message,
        "kernel scaled_sum, argument 1 (parts), item 1: expected an array of f64, found an unsigned integer (9)"
    );
    let message = error("scaled_sum", vec![Value::f64(1.0), Value::u64(3)]);
    assert_eq!(message, "kernel scaled_sum, argument 1 (parts): expected a list, found an unsigned integer (3)");
}

#[test]
fn the_context_reaches_a_kernel_that_asks_for_it() {
    assert_eq!(text(&call("whoami", vec![Value::string("s".into())]).unwrap()), "node:2:7:s");
}

#[test]
fn wrong_arguments_name_the_kernel_the_argument_and_both_types() {
    assert_eq!(error("add", vec![Value::u64(1)]), "kernel add takes 2 argument(s) (a, b), got 1");
    assert_eq!(
        error("add", vec![Value::u64(1), Value::string("two".into())]),
        "kernel add, argument 1 (b): expected a u64, found a string (\"two\")"
    );
    let args = vec![
        Value::u64(300),
        Value::i64(0),
        Value::i64(0),
        Value::f64(0.0),
        Value::f64(0.0),
        Value::bool(false),
        Value::char('a'),
        Value::string(String::new()),
        Value::string(String::new()),
        Value::array(Vec::<f64>::new()),
        Value::array(Vec::<i32>::new()),
        Value::c32(0.0, 0.0),
        Value::c64(0.0, 0.0),
    ];
    assert_eq!(error("echo", args), "kernel echo, argument 0 (small): expected a u8, found an unsigned integer (300)");
    assert_eq!(
        error("scaled_sum", vec![Value::f64(1.0)]),
        "kernel scaled_sum takes 2 argument(s) (scale, parts; the last is the list of trailing results), got 1"
    );
}

#[test]
fn an_err_fails_the_call_with_its_message_and_a_panic_is_caught() {
    assert_eq!(call("checked_div", vec![Value::i64(6), Value::i64(3)]).unwrap().view(), ValueRef::Int(2));
    assert_eq!(error("checked_div", vec![Value::i64(6), Value::i64(0)]), "cannot divide 6 by zero");
    tomii_types::install_quiet_hook();
    let (status, message) = call("boom", vec![]).unwrap_err();
    assert_eq!(status, TOMII_ERR_PANIC);
    assert!(message.contains("boom at the boundary"), "{message}");
}
