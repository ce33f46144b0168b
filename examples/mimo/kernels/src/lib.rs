//! The kernels of the MIMO uplink example (examples/mimo/README.md): per packet an OFDM FFT, per
//! subcarrier block a least-squares channel estimate and zero-forcing beamweights, per data symbol
//! and block the equalised symbols' hard decisions, and per frame the collected bits. Data flows
//! only through results (arrays and opaque objects); no kernel keeps state between calls.

#![deny(unsafe_code)]

pub mod ofdm;

use std::sync::Arc;

use nalgebra::{Cholesky, DMatrix, DVector};
use rustfft::num_complex::{Complex32, Complex64};
use rustfft::{Fft, FftPlanner};
use tomii_types::kernel::{CallCtx, ValueRef};
use tomii_types::tomii_export;

use ofdm::Qam;

/// The OFDM numerology and the FFT planned for it, made once by an initialization and shared by
/// every `fft` call.
pub struct OfdmPlan {
    fft: Arc<dyn Fft<f32>>,
    nfft: usize,
    subcarriers: usize,
    antennas: usize,
}

/// The channel estimate of one block of subcarriers: per subcarrier, H (antennas × users), in
/// double precision for the Gram matrix, whose condition number is H's squared.
pub struct ChannelBlock {
    first: usize,
    h: Vec<DMatrix<Complex64>>,
}

/// The zero-forcing beamweights of one block: per subcarrier, W = (HᴴH)⁻¹Hᴴ (users × antennas).
pub struct BeamBlock {
    first: usize,
    w: Vec<DMatrix<Complex32>>,
}

/// Plans the `nfft`-point FFT of `subcarriers` data subcarriers received on `antennas` antennas.
#[tomii_export]
pub fn ofdm_plan(nfft: usize, subcarriers: usize, antennas: usize) -> Result<OfdmPlan, String> {
    if subcarriers == 0 || !subcarriers.is_multiple_of(2) || subcarriers >= nfft {
        return Err(format!(
            "ofdm_plan: {subcarriers} data subcarriers in an {nfft}-point FFT: give an even number below the FFT size"
        ));
    }
    if antennas == 0 {
        return Err("ofdm_plan: antennas must be at least 1".into());
    }
    let fft = FftPlanner::new().plan_fft_forward(nfft);
    Ok(OfdmPlan { fft, nfft, subcarriers, antennas })
}

/// One packet (one antenna's samples of one OFDM symbol) → its S data subcarriers, normalised by
/// 1/√NFFT. Instance i must receive packet i = symbol · antennas + antenna; the headers say so.
#[tomii_export]
pub fn fft(ctx: &CallCtx, plan: &OfdmPlan, packet: ValueRef) -> Result<Vec<[f32; 2]>, String> {
    let ValueRef::Bytes(bytes) = packet else {
        return Err(format!("fft: expected a packet (bytes), found {}", tomii_types::export::describe(&packet)));
    };
    let expected = ofdm::packet_length(plan.nfft);
    if bytes.len() != expected {
        return Err(format!("fft: a packet of {} bytes; {} samples take {expected}", bytes.len(), plan.nfft));
    }
    let header = ofdm::header(bytes)?;
    let index = u32::from(header.symbol) * plan.antennas as u32 + u32::from(header.antenna);
    if usize::from(header.samples) != plan.nfft || header.index != index || header.index != ctx.instance {
        return Err(format!(
            "fft instance {}: packet {} of frame {} says symbol {}, antenna {}, {} samples (expected index {index}, {} samples)",
            ctx.instance, header.index, header.frame, header.symbol, header.antenna, header.samples, plan.nfft
        ));
    }
    let mut buffer: Vec<Complex32> = ofdm::samples(bytes).collect();
    plan.fft.process(&mut buffer);
    let norm = 1.0 / (plan.nfft as f32).sqrt();
    let data = (0..plan.subcarriers).map(|k| buffer[ofdm::bin(k, plan.subcarriers, plan.nfft)] * norm);
    Ok(data.map(|c| [c.re, c.im]).collect())
}

/// Least-squares channel estimate of block `ctx.instance` (`block` subcarriers wide) from the
/// pilot symbols' FFTs: user u sends the pilot alone on symbol u, so H[a][u] = Y_u,a / pilot.
/// `pilots` holds symbol u, antenna a at u · antennas + a.
#[tomii_export(variadic)]
pub fn csi(ctx: &CallCtx, block: usize, users: usize, pilots: &[&[[f32; 2]]]) -> Result<ChannelBlock, String> {
    if users == 0 || pilots.is_empty() || !pilots.len().is_multiple_of(users) {
        return Err(format!("csi: {} pilot FFTs for {users} users: expected users × antennas", pilots.len()));
    }
    let antennas = pilots.len() / users;
    let subcarriers = pilots[0].len();
    let first = ctx.instance as usize * block;
    let last = (first + block).min(subcarriers);
    if first >= last || pilots.iter().any(|p| p.len() != subcarriers) {
        return Err(format!("csi: block {} of {block} subcarriers is outside {subcarriers}", ctx.instance));
    }
    let h = (first..last)
        .map(|k| {
            let inverse = ofdm::pilot(k, subcarriers).conj();
            DMatrix::from_fn(antennas, users, |a, u| {
                let [re, im] = pilots[u * antennas + a][k];
                let h = Complex32::new(re, im) * inverse;
                Complex64::new(f64::from(h.re), f64::from(h.im))
            })
        })
        .collect();
    Ok(ChannelBlock { first, h })
}

/// Zero-forcing beamweights of one block: W = (HᴴH)⁻¹Hᴴ per subcarrier, by a Cholesky
/// factorisation of the Gram matrix HᴴH in double precision; W is kept in single precision.
#[tomii_export]
pub fn beam(channel: &ChannelBlock) -> Result<BeamBlock, String> {
    let mut w = Vec::with_capacity(channel.h.len());
    for (k, h) in channel.h.iter().enumerate() {
        let adjoint = h.adjoint();
        let gram = &adjoint * h;
        let Some(cholesky) = Cholesky::new(gram) else {
            let subcarrier = channel.first + k;
            return Err(format!(
                "beam: HᴴH of subcarrier {subcarrier} is not positive definite (users > antennas, or a dead channel)"
            ));
        };
        w.push(cholesky.solve(&adjoint).map(|c| Complex32::new(c.re as f32, c.im as f32)));
    }
    Ok(BeamBlock { first: channel.first, w })
}

/// Equalises one data symbol on one block (x̂ = W y per subcarrier) and demodulates each user's
/// symbols to bits: the result is `[user][subcarrier of the block][bit]`, one bit per byte.
/// `symbol` holds the symbol's FFT of each antenna, in antenna order.
#[tomii_export(variadic)]
pub fn demul(beam: &BeamBlock, bits: usize, symbol: &[&[[f32; 2]]]) -> Result<Vec<u8>, String> {
    let qam = Qam::new(bits).map_err(|e| format!("demul: {e}"))?;
    let Some(w0) = beam.w.first() else {
        return Err("demul: the beamweights hold no subcarrier".into());
    };
    let (users, antennas) = w0.shape();
    if symbol.len() != antennas || symbol.iter().any(|y| y.len() < beam.first + beam.w.len()) {
        return Err(format!("demul: {} antenna FFTs for beamweights of {antennas} antennas", symbol.len()));
    }
    let mut decided: Vec<Vec<u8>> = vec![Vec::with_capacity(beam.w.len() * bits); users];
    for (k, w) in beam.w.iter().enumerate() {
        let y = DVector::from_fn(antennas, |a, _| {
            let [re, im] = symbol[a][beam.first + k];
            Complex32::new(re, im)
        });
        let x = w * y;
        for (user, out) in decided.iter_mut().enumerate() {
            qam.demodulate(x[user], out);
        }
    }
    Ok(decided.concat())
}

/// The frame's bits: reads the frame id from packet 0's header and arranges the `demul` results
/// (data symbol d, block b at d · blocks + b) as `[user][data symbol][subcarrier][bit]`, packed MSB
/// first (NumPy's packbits). The result is the frame id (u64, little-endian), then those bytes.
#[tomii_export(variadic)]
pub fn collect(packet: ValueRef, users: usize, blocks: usize, decided: &[&[u8]]) -> Result<Vec<u8>, String> {
    let ValueRef::Bytes(bytes) = packet else {
        return Err(format!("collect: expected packet 0 (bytes), found {}", tomii_types::export::describe(&packet)));
    };
    let frame = ofdm::header(bytes)?.frame;
    if users == 0 || blocks == 0 || !decided.len().is_multiple_of(blocks) {
        return Err(format!("collect: {} demul results for {blocks} blocks", decided.len()));
    }
    let symbols = decided.len() / blocks;
    let mut bits = Vec::with_capacity(decided.iter().map(|d| d.len()).sum());
    for user in 0..users {
        for d in 0..symbols {
            for part in &decided[d * blocks..(d + 1) * blocks] {
                let per_user = part.len() / users;
                bits.extend_from_slice(&part[user * per_user..(user + 1) * per_user]);
            }
        }
    }
    let mut out = frame.to_le_bytes().to_vec();
    out.extend(bits.chunks(8).map(|byte| byte.iter().enumerate().fold(0u8, |acc, (i, &b)| acc | (b << (7 - i)))));
    Ok(out)
}

tomii_types::kernel_library!("mimo");
