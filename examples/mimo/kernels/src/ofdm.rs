//! The air interface both ends agree on: the packet layout, which FFT bins carry data, the pilot
//! sequence and the square Gray-coded QAM. The sender (examples/mimo/sender.py) writes exactly this;
//! the README's "Packet format" and "Air interface" sections define it. No kernel state lives here.

use rustfft::num_complex::Complex32;

/// Bytes of the runtime's packet header: frame id (u64), index in the frame (u32), 4 zero bytes.
pub const TOMII_HEADER: usize = 16;
/// Bytes of this example's header after it: symbol (u16), antenna (u16), samples (u16), 0 (u16).
pub const MIMO_HEADER: usize = 8;
/// Bytes of one time-domain sample: I and Q as little-endian f32.
pub const SAMPLE_BYTES: usize = 8;

/// The packet length for `nfft` samples.
pub fn packet_length(nfft: usize) -> usize {
    TOMII_HEADER + MIMO_HEADER + SAMPLE_BYTES * nfft
}

/// What a packet's headers say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub frame: u64,
    pub index: u32,
    pub symbol: u16,
    pub antenna: u16,
    pub samples: u16,
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([bytes[at], bytes[at + 1]])
}

/// The headers of `packet`, or why it is not one of this example's packets.
pub fn header(packet: &[u8]) -> Result<Header, String> {
    if packet.len() < TOMII_HEADER + MIMO_HEADER {
        return Err(format!("a packet of {} bytes is shorter than its headers", packet.len()));
    }
    let mut frame = [0; 8];
    frame.copy_from_slice(&packet[..8]);
    let mut index = [0; 4];
    index.copy_from_slice(&packet[8..12]);
    let mimo = TOMII_HEADER;
    Ok(Header {
        frame: u64::from_le_bytes(frame),
        index: u32::from_le_bytes(index),
        symbol: u16_at(packet, mimo),
        antenna: u16_at(packet, mimo + 2),
        samples: u16_at(packet, mimo + 4),
    })
}

/// The time-domain samples of `packet` (after its headers), as complex numbers.
pub fn samples(packet: &[u8]) -> impl Iterator<Item = Complex32> + '_ {
    packet[TOMII_HEADER + MIMO_HEADER..].chunks_exact(SAMPLE_BYTES).map(|iq| {
        let re = f32::from_le_bytes([iq[0], iq[1], iq[2], iq[3]]);
        let im = f32::from_le_bytes([iq[4], iq[5], iq[6], iq[7]]);
        Complex32::new(re, im)
    })
}

/// The FFT bin of data subcarrier `k` of `subcarriers`: the lower half sits on the negative
/// frequencies −S/2 … −1, the upper half on 1 … S/2; DC (bin 0) and the band edges stay empty.
pub fn bin(k: usize, subcarriers: usize, nfft: usize) -> usize {
    let half = subcarriers / 2;
    if k < half { nfft - half + k } else { k - half + 1 }
}

/// Pilot value on data subcarrier `k`: the Zadoff-Chu sequence of root 1 and even length S,
/// `exp(−iπ·k²/S)`, of unit modulus.
pub fn pilot(k: usize, subcarriers: usize) -> Complex32 {
    let k = k as f64;
    let phase = -std::f64::consts::PI * k * k / subcarriers as f64;
    Complex32::new(phase.cos() as f32, phase.sin() as f32)
}

/// Square Gray-coded QAM of `bits` bits per symbol (2: QPSK, 4: 16-QAM, 6: 64-QAM), average
/// energy 1: the first bits/2 bits pick the in-phase level, the rest the quadrature one.
#[derive(Clone, Copy, Debug)]
pub struct Qam {
    bits: usize,
    levels: i32,
    scale: f32,
}

impl Qam {
    pub fn new(bits: usize) -> Result<Qam, String> {
        if !matches!(bits, 2 | 4 | 6) {
            return Err(format!("{bits} bits per symbol: give 2 (QPSK), 4 (16-QAM) or 6 (64-QAM)"));
        }
        let levels = 1i32 << (bits / 2);
        // Levels ±1, ±3, … have mean energy 2(M²−1)/3 per symbol for M levels per axis.
        let energy = 2.0 * f64::from(levels * levels - 1) / 3.0;
        Ok(Qam { bits, levels, scale: energy.sqrt() as f32 })
    }

    pub fn bits(&self) -> usize {
        self.bits
    }

    /// Appends the hard decision on `x` to `out`, one bit (0 or 1) per byte, MSB first per axis.
    pub fn demodulate(&self, x: Complex32, out: &mut Vec<u8>) {
        self.axis(x.re, out);
        self.axis(x.im, out);
    }

    fn axis(&self, value: f32, out: &mut Vec<u8>) {
        let top = self.levels - 1;
        // Level 2·index − (M − 1): the nearest index, clamped to the constellation.
        let index = ((value * self.scale + top as f32) / 2.0).round().clamp(0.0, top as f32) as i32;
        let gray = index ^ (index >> 1);
        for bit in (0..self.bits / 2).rev() {
            out.push(((gray >> bit) & 1) as u8);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_skip_dc_and_keep_order() {
        let bins: Vec<usize> = (0..4).map(|k| bin(k, 4, 8)).collect();
        assert_eq!(bins, [6, 7, 1, 2]);
    }

    #[test]
    fn sixteen_qam_is_gray_coded() {
        let qam = Qam::new(4).unwrap();
        let scale = 10f32.sqrt();
        let mut bits = Vec::new();
        for level in [-3.0, -1.0, 1.0, 3.0] {
            qam.demodulate(Complex32::new(level / scale, 3.0 / scale), &mut bits);
        }
        assert_eq!(bits, [0, 0, 1, 0, 0, 1, 1, 0, 1, 1, 1, 0, 1, 0, 1, 0]);
    }

    #[test]
    fn header_reads_both_parts() {
        let mut packet = vec![0u8; packet_length(2)];
        packet[..8].copy_from_slice(&7u64.to_le_bytes());
        packet[8..12].copy_from_slice(&5u32.to_le_bytes());
        packet[16..18].copy_from_slice(&1u16.to_le_bytes());
        packet[18..20].copy_from_slice(&3u16.to_le_bytes());
        packet[20..22].copy_from_slice(&2u16.to_le_bytes());
        let found = header(&packet).unwrap();
        assert_eq!(found, Header { frame: 7, index: 5, symbol: 1, antenna: 3, samples: 2 });
    }
}
