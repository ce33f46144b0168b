//! Criterion benchmarks of one kernel call through the C ABI: a kernel of `libtomii_synthetic.so`,
//! resolved through `KernelSet` and called through its function pointer as the engine's workers
//! call it (`tomii_bench::kernel_call::AbiCall`), against plain Rust doing the same work inlined.
//! ns per call; after each case one line gives both medians and their ratio, the ABI's overhead.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use tomii_bench::kernel_call::{AbiCall, CallCase, NODE, WORDS, bytes, inline};
use tomii_bench::{median, plugins};

/// What one benchmark saw: the result of a call, and the median ns per call over its samples.
struct Calls {
    result: u64,
    median_ns: f64,
}

/// Benchmarks `call` as `case`/`how` (ns per call), after one untimed call whose result is returned.
fn bench_calls(
    group: &mut BenchmarkGroup<'_, WallTime>,
    case: CallCase,
    how: &str,
    mut call: impl FnMut() -> u64,
) -> Calls {
    let result = call();
    let mut samples = Vec::new();
    group.bench_function(BenchmarkId::new(case.name(), how), |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                black_box(call());
            }
            let elapsed = start.elapsed();
            samples.push(elapsed.as_secs_f64() * 1e9 / iters as f64);
            elapsed
        })
    });
    Calls { result, median_ns: median(&samples) }
}

/// Each case through the ABI, then inlined: `<case>/abi` and `<case>/inline`.
fn kernel_call(c: &mut Criterion) {
    let plugins = plugins();
    let (node, bytes) = (NODE.to_str().expect("the node name is ASCII"), bytes());
    let mut group = c.benchmark_group("kernel_call");
    group.sample_size(20).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(1));
    group.throughput(Throughput::Elements(1));
    for case in CallCase::ALL {
        let mut abi = AbiCall::new(&plugins.kernels, case);
        let abi = bench_calls(&mut group, case, "abi", || abi.call());
        let inline = match case {
            CallCase::Noop => bench_calls(&mut group, case, "inline", inline::noop),
            CallCase::ChecksumU64s => {
                bench_calls(&mut group, case, "inline", || inline::checksum_words(black_box(node), black_box(&WORDS)))
            }
            CallCase::ChecksumBytes => {
                bench_calls(&mut group, case, "inline", || inline::checksum_bytes(black_box(node), black_box(&bytes)))
            }
        };
        assert_eq!(abi.result, inline.result, "{}: the kernel and the inline Rust disagree", case.name());
        if !abi.median_ns.is_nan() && !inline.median_ns.is_nan() {
            println!(
                "kernel_call/{}: {:.2} ns/call through the ABI, {:.2} ns/call inline: ratio {:.1}, difference {:.2} ns (medians over every sample, warm-up included)\n",
                case.name(),
                abi.median_ns,
                inline.median_ns,
                abi.median_ns / inline.median_ns,
                abi.median_ns - inline.median_ns
            );
        }
    }
    group.finish();
}

// Without plots, which would cost about 5 s per benchmark on this VM.
criterion_group! {
    name = benches;
    config = Criterion::default().without_plots();
    targets = kernel_call
}
criterion_main!(benches);
