//! What `tomii send` sends: generated packets (a header, then a ramp a test can predict), the
//! packets of a file read as they are sent, or the caller's ([`PacketSource`]). A source fills
//! the sender's one reused buffer; it must never allocate per packet. A file of packets is read
//! under the rule of every input file (`crate::files`): a regular file only, and no more of it
//! than its size when opened.

use std::fs::File;
use std::io::{self, BufReader, ErrorKind, Read, Take};
use std::path::{Path, PathBuf};

use super::{Destination, SendError, describe};
use crate::network::{HEADER_LEN, write_header};

/// Fills the payload of generated packet `index` of frame `frame` (the bytes after its header):
/// byte `k` (from 0) is `(131 * frame + 31 * index + k) mod 256`, a ramp whose start frame and index
/// set, so that a test can predict every byte. Python: `tomii.network.fill_payload`.
pub fn fill_payload(payload: &mut [u8], frame: u64, index: u32) {
    let start = frame.wrapping_mul(131).wrapping_add(u64::from(index).wrapping_mul(31)) as u8;
    for (k, byte) in payload.iter_mut().enumerate() {
        *byte = start.wrapping_add(k as u8);
    }
}

/// Writes generated packet `index` of frame `frame` over all of `packet`: the header
/// ([`write_header`]), then the payload ([`fill_payload`]). `packet` is at least [`HEADER_LEN`] long.
pub fn write_packet(packet: &mut [u8], frame: u64, index: u32) {
    write_header(packet, frame, index);
    fill_payload(&mut packet[HEADER_LEN..], frame, index);
}

/// The packets [`send`] sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Packets {
    /// Frames `first_frame .. first_frame + frames`, each of `frame_packets` packets in index order,
    /// each `packet_length` bytes written by [`write_packet`].
    Generated { packet_length: usize, frame_packets: u32, frames: u64, first_frame: u64 },
    /// The packets of a file, back to back, each exactly `packet_length` bytes, sent as they are.
    File { path: PathBuf, packet_length: usize },
}

impl Packets {
    /// How many packets there are: known for generated ones, read from a file's size.
    pub fn total(&self) -> Option<u64> {
        match self {
            Self::Generated { frame_packets, frames, .. } => frames.checked_mul(u64::from(*frame_packets)),
            Self::File { path, packet_length } => {
                let size = std::fs::metadata(path).ok()?.len();
                Some(size / (*packet_length).max(1) as u64)
            }
        }
    }

    /// Checks the settings against `destination` and opens the source.
    pub fn open(&self, destination: &Destination) -> Result<Box<dyn PacketSource>, SendError> {
        match self {
            Self::Generated { packet_length, frame_packets, frames, first_frame } => {
                check_length(*packet_length, HEADER_LEN, destination)?;
                let generated = Generated::new(*packet_length, *frame_packets, *frames, *first_frame)?;
                Ok(Box::new(generated))
            }
            Self::File { path, packet_length } => {
                check_length(*packet_length, 1, destination)?;
                Ok(Box::new(FileSource::open(path, *packet_length)?))
            }
        }
    }
}

/// A packet length from `least` up to what one packet to `destination` may hold.
fn check_length(packet_length: usize, least: usize, destination: &Destination) -> Result<(), SendError> {
    if packet_length < least {
        let problem = if least == HEADER_LEN {
            format!(
                "{packet_length} bytes is shorter than the {HEADER_LEN}-byte packet header; give at least {HEADER_LEN}"
            )
        } else {
            format!("is {packet_length}; give at least 1")
        };
        return Err(SendError::invalid("packet_length", problem));
    }
    let max = destination.max_packet();
    if packet_length > max {
        let problem = format!("{packet_length} bytes is more than one {} packet holds ({max})", destination.transport);
        return Err(SendError::invalid("packet_length", problem));
    }
    Ok(())
}

/// Packets one at a time, into a buffer the sender reuses.
pub trait PacketSource: Send {
    /// Writes the next packet over `packet` (setting its length) and returns its number: the
    /// packet goes to socket `number % num_sockets`. `None` after the last packet.
    fn next_packet(&mut self, packet: &mut Vec<u8>) -> Result<Option<u64>, SendError>;
}

/// [`Packets::Generated`], one packet after the other.
struct Generated {
    packet_length: usize,
    frame_packets: u32,
    frame: u64,
    end_frame: u64,
    index: u32,
}

impl Generated {
    fn new(packet_length: usize, frame_packets: u32, frames: u64, first_frame: u64) -> Result<Self, SendError> {
        if frame_packets == 0 {
            return Err(SendError::invalid("frame_packets", "is 0; give at least 1".into()));
        }
        if frames == 0 {
            return Err(SendError::invalid("frames", "is 0; give at least 1".into()));
        }
        let end_frame = first_frame.checked_add(frames).ok_or_else(|| {
            SendError::invalid("frames", format!("{frames} frames from frame {first_frame} go past the last frame id"))
        })?;
        Ok(Self { packet_length, frame_packets, frame: first_frame, end_frame, index: 0 })
    }
}

impl PacketSource for Generated {
    fn next_packet(&mut self, packet: &mut Vec<u8>) -> Result<Option<u64>, SendError> {
        if self.frame == self.end_frame {
            return Ok(None);
        }
        packet.resize(self.packet_length, 0);
        write_packet(packet, self.frame, self.index);
        let number = u64::from(self.index);
        self.index += 1;
        if self.index == self.frame_packets {
            self.index = 0;
            self.frame += 1;
        }
        Ok(Some(number))
    }
}

/// [`Packets::File`]: read as it is sent, never whole into memory.
struct FileSource {
    path: PathBuf,
    reader: BufReader<Take<File>>,
    packet_length: usize,
    packets: u64,
}

impl FileSource {
    /// Opens the file: anything but a regular file (a FIFO would block, a device such as /dev/zero
    /// never end), or one whose size is not a whole number of packets, is an error here, before
    /// anything is sent. Reading stops at the size it had then, should it grow.
    fn open(path: &Path, packet_length: usize) -> Result<Self, SendError> {
        let fail = |problem: String| SendError::File { path: path.to_path_buf(), problem };
        let mut file = crate::files::open_input(path, u64::MAX).map_err(|error| match error {
            crate::files::Unreadable::Io(e) => fail(format!("cannot open the packets: {}", describe(&e))),
            other => fail(other.to_string()),
        })?;
        let metadata =
            file.get_ref().metadata().map_err(|e| fail(format!("cannot read its size: {}", describe(&e))))?;
        let size = metadata.len();
        file.set_limit(size);
        if size == 0 {
            return Err(fail("is empty: it holds no packets".into()));
        }
        let left_over = size % packet_length as u64;
        if left_over != 0 {
            return Err(fail(format!(
                "{size} bytes is not a whole number of {packet_length}-byte packets ({} packets and {left_over} bytes \
                 left over); is packet_length right?",
                size / packet_length as u64
            )));
        }
        let reader = BufReader::with_capacity((1 << 20).max(packet_length), file);
        Ok(Self { path: path.to_path_buf(), reader, packet_length, packets: 0 })
    }
}

impl PacketSource for FileSource {
    fn next_packet(&mut self, packet: &mut Vec<u8>) -> Result<Option<u64>, SendError> {
        packet.resize(self.packet_length, 0);
        let fail = |problem: String| SendError::File { path: self.path.clone(), problem };
        let read = read_full(&mut self.reader, packet).map_err(|e| fail(format!("cannot read: {}", describe(&e))))?;
        if read == 0 {
            return Ok(None);
        }
        if read < self.packet_length {
            let size = self.packets * self.packet_length as u64 + read as u64;
            return Err(fail(format!(
                "ends in a partial packet: {read} of {} bytes after {} whole packets ({size} bytes)",
                self.packet_length, self.packets
            )));
        }
        self.packets += 1;
        Ok(Some(self.packets - 1))
    }
}

/// Reads until `buffer` is full or the reader ends; the bytes read.
fn read_full(reader: &mut impl Read, buffer: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match reader.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(error) if error.kind() == ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(filled)
}
