//! Frames from the network: packets on UDP or TCP sockets feed the `$network` input of a graph
//! (README.md beside this file). `send` is the traffic generator that tests, benchmarks and users
//! drive it with (`tomii send`, `tomii.send`).

mod drops;
mod pool;
mod receive;
pub mod send;
mod source;
mod window;

pub use source::NetworkSource;

use std::time::Duration;

/// The run options of a network source (the knobs `receiver_threads`, `socket_recv_buf_bytes`,
/// `network_dispatch`, `on_slots_busy`, `frame_timeout_ms`, `frame_window`,
/// `network_idle_timeout_ms`).
#[derive(Clone, Debug, PartialEq)]
pub struct NetworkOptions {
    /// Threads that read the sockets (each socket is read by one of them).
    pub receiver_threads: u32,
    /// `SO_RCVBUF` asked for each socket (the system may grant less; the report says what).
    pub socket_recv_buf_bytes: u64,
    pub dispatch: Dispatch,
    pub on_slots_busy: WhenBusy,
    /// A frame whose packets have not all arrived this long after its first one is abandoned (or
    /// earlier, when `frame_window` newer frames need its place).
    pub frame_timeout: Duration,
    /// Frame ids the window spans (README.md, "Frames from packets"): how far packets may be
    /// reordered, and how far beyond the newest id a packet is a stray.
    pub frame_window: u32,
    /// With `frames = N`: once the first packet came, no packet for this long while frames are
    /// still expected stops the run with [`RunError::NetworkIdle`](crate::engine::RunError);
    /// `None`: the run waits for packets without limit.
    pub idle_timeout: Option<Duration>,
}

impl Default for NetworkOptions {
    fn default() -> Self {
        NetworkOptions {
            receiver_threads: 1,
            socket_recv_buf_bytes: 16 << 20,
            dispatch: Dispatch::Packet,
            on_slots_busy: WhenBusy::Drop,
            frame_timeout: Duration::from_secs(1),
            frame_window: 64,
            idle_timeout: Some(Duration::from_secs(10)),
        }
    }
}

/// When a packet's instance may run (its words, `Choice::word`, are declared with the knob catalog).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dispatch {
    /// As soon as the packet arrives: a frame starts at its first packet.
    Packet,
    /// Once the frame's last packet arrived: the frame starts with every packet (the baseline a
    /// runtime that must collect a frame first gives).
    Frame,
}

/// What a frame does when every slot is busy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WhenBusy {
    /// It is dropped, and its packets counted as `slots_busy`.
    Drop,
    /// It waits in the window, holding its packets, and opens when a slot is free; the receivers
    /// go on reading (they wait only for a frame id beyond the window).
    Wait,
}

/// Bytes of the packet header the runtime reads when a graph names no `id_function` or
/// `index_function`: the frame id (u64, little-endian), the packet's index within its frame (u32,
/// little-endian), and four bytes left zero, so that the payload after it is 16-byte aligned.
pub const HEADER_LEN: usize = 16;

/// Writes the packet header of packet `index` of frame `frame` into the first [`HEADER_LEN`] bytes
/// of `packet`; the caller keeps `packet` at least that long.
pub fn write_header(packet: &mut [u8], frame: u64, index: u32) {
    packet[..8].copy_from_slice(&frame.to_le_bytes());
    packet[8..12].copy_from_slice(&index.to_le_bytes());
    packet[12..HEADER_LEN].fill(0);
}

/// The frame id and packet index of a packet's header; `None` when the packet is shorter than it.
pub fn read_header(packet: &[u8]) -> Option<(u64, u32)> {
    let header = packet.get(..HEADER_LEN)?;
    let frame = u64::from_le_bytes(header[..8].try_into().ok()?);
    let index = u32::from_le_bytes(header[8..12].try_into().ok()?);
    Some((frame, index))
}

/// How a TCP stream frames its packets: each packet is preceded by its length in bytes, as a
/// little-endian u32.
pub const TCP_LENGTH_PREFIX: usize = 4;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_round_trips() {
        let mut packet = [0xAAu8; 64];
        write_header(&mut packet, 0x0102_0304_0506_0708, 77);
        assert_eq!(read_header(&packet), Some((0x0102_0304_0506_0708, 77)));
        assert_eq!(&packet[12..16], &[0, 0, 0, 0]);
        assert_eq!(packet[16], 0xAA);
        assert_eq!(read_header(&packet[..15]), None);
    }
}
