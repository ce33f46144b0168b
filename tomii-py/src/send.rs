//! `tomii._tomii.send_packets`, behind `tomii.network.send`: the traffic generator of tomii-core,
//! with the GIL released while it sends. Packets from a Python iterable are fetched one at a time
//! with the GIL held only for that; an exception the iterable raises (or Ctrl-C) reaches the caller
//! as it was. No logic beyond that wiring lives here.

use std::ops::ControlFlow;
use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyIterator, PyMemoryView};
use tomii_core::network::send::{self as network, Destination, PacketSource, Packets, SendError, SendStats};

use super::{ConfigError, TomiiError};

/// Sends packets to `socket_type` (`"udp"`, `"tcp"`) ports `start_port ..  start_port +
/// num_sockets` of `address` at `rate` packets per second (None: full speed). The packets are
/// those of the iterable `packets` (bytes-like, each `packet_length` bytes when that is given),
/// else those of the file `path`, else generated: `frames` frames from `first_frame`, each of
/// `frame_packets` packets of `packet_length` bytes. Returns `(packets, bytes, seconds)`.
#[pyfunction]
#[pyo3(signature = (*, socket_type, address, start_port, num_sockets, packet_length, frame_packets, frames,
                    first_frame, rate, path, packets))]
#[allow(clippy::too_many_arguments)]
pub fn send_packets(
    py: Python<'_>,
    socket_type: &str,
    address: &str,
    start_port: u16,
    num_sockets: u16,
    packet_length: Option<usize>,
    frame_packets: Option<u32>,
    frames: u64,
    first_frame: u64,
    rate: Option<f64>,
    path: Option<PathBuf>,
    packets: Option<Bound<'_, PyAny>>,
) -> PyResult<(u64, u64, f64)> {
    let transport = network::parse_socket_type(socket_type).map_err(send_error)?;
    let address = network::parse_address(address).map_err(send_error)?;
    let destination = Destination::new(transport, address, start_port, num_sockets).map_err(send_error)?;
    let stats = match (packets, path) {
        (Some(_), Some(_)) => return Err(ConfigError::new_err("give packets or path, not both")),
        (Some(packets), None) => {
            let iterator = packets
                .try_iter()
                .map_err(|_| ConfigError::new_err(format!("packets: a {} is not iterable", type_name(&packets))))?;
            let mut python = PythonPackets { iterator: iterator.unbind(), packet_length, position: 0, error: None };
            let outcome = send_detached(py, &destination, &mut python, rate);
            // The iterable's own exception, rather than its text in a SendError::Source.
            outcome.map_err(|error| python.error.take().unwrap_or(error))?
        }
        (None, Some(path)) => {
            let packet_length = packet_length.ok_or_else(|| required("packet_length", "path"))?;
            let mut source = Packets::File { path, packet_length }.open(&destination).map_err(send_error)?;
            send_detached(py, &destination, source.as_mut(), rate)?
        }
        (None, None) => {
            let packet_length = packet_length.ok_or_else(|| required("packet_length", "generated packets"))?;
            let frame_packets = frame_packets.ok_or_else(|| required("frame_packets", "generated packets"))?;
            let generated = Packets::Generated { packet_length, frame_packets, frames, first_frame };
            let mut source = generated.open(&destination).map_err(send_error)?;
            send_detached(py, &destination, source.as_mut(), rate)?
        }
    };
    Ok((stats.packets, stats.bytes, stats.seconds))
}

/// Sends with the GIL released; Ctrl-C (a pending signal's exception) stops the send and is raised.
fn send_detached(
    py: Python<'_>,
    destination: &Destination,
    source: &mut dyn PacketSource,
    rate: Option<f64>,
) -> PyResult<SendStats> {
    let mut interrupted = None;
    let outcome = py.detach(|| {
        let mut check_signals = |_sent: u64| match Python::attach(|py| py.check_signals()) {
            Ok(()) => ControlFlow::Continue(()),
            Err(error) => {
                interrupted = Some(error);
                ControlFlow::Break(())
            }
        };
        network::send_from(destination, source, rate, Some(&mut check_signals))
    });
    match (outcome, interrupted) {
        (Ok(stats), _) => Ok(stats),
        (Err(SendError::Stopped { .. }), Some(error)) => Err(error),
        (Err(error), _) => Err(send_error(error)),
    }
}

fn required(field: &str, what: &str) -> PyErr {
    ConfigError::new_err(format!("{field} is required for {what}"))
}

/// Settings and files are the caller's to fix (ConfigError); a socket's failure is a TomiiError.
fn send_error(error: SendError) -> PyErr {
    let text = error.to_string();
    match error {
        SendError::Invalid { .. } | SendError::File { .. } | SendError::TooLong { .. } => ConfigError::new_err(text),
        _ => TomiiError::new_err(text),
    }
}

fn type_name(value: &Bound<'_, PyAny>) -> String {
    value.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "value".into())
}

/// The packets of a Python iterable, fetched with the GIL held for each one only.
struct PythonPackets {
    iterator: Py<PyIterator>,
    packet_length: Option<usize>,
    position: u64,
    /// What the iterable raised, or why an item is no packet: raised to the caller as it is.
    error: Option<PyErr>,
}

impl PacketSource for PythonPackets {
    fn next_packet(&mut self, packet: &mut Vec<u8>) -> Result<Option<u64>, SendError> {
        Python::attach(|py| self.fetch(py, packet)).map_err(|error| {
            let text = error.to_string();
            self.error = Some(error);
            SendError::Source(text)
        })
    }
}

impl PythonPackets {
    fn fetch(&mut self, py: Python<'_>, packet: &mut Vec<u8>) -> PyResult<Option<u64>> {
        let Some(item) = self.iterator.bind(py).into_iter().next() else { return Ok(None) };
        let item = item?;
        let at = self.position;
        packet.clear();
        if let Ok(bytes) = item.cast::<PyBytes>() {
            packet.extend_from_slice(bytes.as_bytes());
        } else {
            let view = PyMemoryView::from(&item).map_err(|_| {
                ConfigError::new_err(format!("packets[{at}]: a {} is not bytes-like", type_name(&item)))
            })?;
            let bytes = view.call_method0("tobytes")?;
            packet.extend_from_slice(bytes.cast::<PyBytes>()?.as_bytes());
        }
        if let Some(length) = self.packet_length
            && packet.len() != length
        {
            let problem = format!("packets[{at}] is {} bytes, not packet_length ({length})", packet.len());
            return Err(ConfigError::new_err(problem));
        }
        self.position += 1;
        Ok(Some(at))
    }
}
