//! The matrix-compute example in Rust: plain functions exported with `#[tomii_export]`. The C
//! (plugins/matrix-compute-c) and Python (plugins/matrix-compute-python) versions compute the same
//! numbers; README.md defines each kernel exactly, and the Python tests compare the three.

#![deny(unsafe_code)]

use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::Arc;

use rustfft::num_complex::Complex32;
use rustfft::{Fft, FftPlanner as RustFftPlanner};
use tomii_types::kernel::CallCtx;
use tomii_types::tomii_export;

/// A forward FFT of one length, planned once at init and shared by every `compute_fft` call.
pub struct FftPlanner {
    fft: Arc<dyn Fft<f32>>,
}

/// Plans the `len`-point forward DFT, unnormalised: `X[k] = Σ_j x[j]·e^(−2πi·jk/len)`.
#[tomii_export]
pub fn fft_planner(len: usize) -> FftPlanner {
    FftPlanner { fft: RustFftPlanner::new().plan_fft_forward(len) }
}

/// The deterministic test vector of the calling instance (`ctx.instance`): `len` complex numbers
/// from an integer hash, each part a multiple of 1/65536 in [−0.5, 0.5), so every language
/// computes it exactly.
#[tomii_export]
pub fn generate_vector(ctx: &CallCtx, len: usize) -> Vec<[f32; 2]> {
    (0..len).map(|k| sample(ctx.instance, k)).collect()
}

/// Element `k` of `instance`'s vector (README.md, "generate_vector").
fn sample(instance: u32, k: usize) -> [f32; 2] {
    // Only the low 32 bits of the position enter the hash, as in the C and NumPy versions.
    let position = instance.wrapping_mul(1_000_003).wrapping_add(k as u32);
    let mut hash = position.wrapping_mul(2_654_435_761);
    hash ^= hash >> 16;
    let part = |bits: u32| (bits & 0xffff) as f32 / 65536.0 - 0.5;
    [part(hash), part(hash >> 16)]
}

/// The spectrum of `v` with the planned FFT; `v` must have the planned length.
#[tomii_export]
pub fn compute_fft(planner: &FftPlanner, v: &[[f32; 2]]) -> Result<Vec<[f32; 2]>, String> {
    let len = planner.fft.len();
    if v.len() != len {
        return Err(format!("compute_fft: the vector has {} elements, the plan {len}", v.len()));
    }
    let mut buffer: Vec<Complex32> = v.iter().map(|&[re, im]| Complex32::new(re, im)).collect();
    planner.fft.process(&mut buffer);
    Ok(buffer.into_iter().map(|c| [c.re, c.im]).collect())
}

/// The outer product `v·vᴴ` as a `len × len` row-major matrix: `M[r][c] = v[r]·conj(v[c])`.
#[tomii_export]
pub fn vec_to_mat(v: &[[f32; 2]]) -> Vec<[f32; 2]> {
    v.iter().flat_map(|&[ar, ai]| v.iter().map(move |&[br, bi]| [ar * br + ai * bi, ai * br - ar * bi])).collect()
}

/// Writes every array it receives, in order, to `path` as little-endian (re, im) f32 pairs, and
/// returns their checksum: the sum of |re| + |im| over all elements, in f64.
#[tomii_export(variadic)]
pub fn write_to_file(path: &str, arrays: &[&[[f32; 2]]]) -> Result<f64, String> {
    let failed = |error: std::io::Error| format!("write_to_file: cannot write {path}: {error}");
    let mut file = BufWriter::new(File::create(path).map_err(failed)?);
    let mut checksum = 0.0;
    for &[re, im] in arrays.iter().copied().flatten() {
        file.write_all(&re.to_le_bytes()).map_err(failed)?;
        file.write_all(&im.to_le_bytes()).map_err(failed)?;
        checksum += f64::from(re.abs()) + f64::from(im.abs());
    }
    file.flush().map_err(failed)?;
    Ok(checksum)
}

tomii_types::kernel_library!("matrix-compute");
