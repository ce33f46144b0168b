//! The traffic generator behind `tomii send` and `tomii.send`: packets to a graph's network source
//! over UDP (one datagram each) or TCP (one connection per port, each packet preceded by its
//! length, [`super::TCP_LENGTH_PREFIX`]), paced to a rate. Packets are generated
//! ([`write_packet`]), read from a file, or given by the caller ([`PacketSource`]); packet `n` of a
//! source goes to port `start_port + n % num_sockets`, where a generated packet's `n` is its index
//! in its frame. It never allocates per packet, and never drops a packet silently on its side: a
//! full UDP send buffer is waited out, any other socket error ends the send. Every wait (the
//! pacer's sleep, a full send buffer, a TCP receiver that does not read) calls the progress
//! callback at least every [`PROGRESS_INTERVAL`], so a stop (Ctrl-C) ends it promptly.

use std::fmt;
use std::io::{self, ErrorKind, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::time::{Duration, Instant};

mod packets;

pub use packets::{PacketSource, Packets, fill_payload, write_packet};

/// How long a TCP connect may take before it is an error.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How often [`send`] calls its progress callback.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(250);
/// How long the kernel's UDP send buffer may stay full (`ENOBUFS`, `EAGAIN`) before it is an error.
const FULL_BUFFER_TIMEOUT: Duration = Duration::from_secs(5);
/// The pacer sleeps while the next packet is due later than this, and spins for the rest: a sleep
/// overshoots by tens of microseconds.
const SPIN_WINDOW: Duration = Duration::from_micros(200);
/// The furthest ahead the pacer schedules (about 31 years), so that a long send cannot overflow.
const MAX_SCHEDULE_S: f64 = 1e9;
/// The slowest rate a send takes, in packets per second: one packet every 100 s.
pub const MIN_RATE: f64 = 0.01;
/// The fastest rate a send takes, in packets per second (far beyond what a socket takes; give no
/// rate for full speed).
pub const MAX_RATE: f64 = 1e9;

pub use crate::graph::SocketType;

/// `"udp"` or `"tcp"`, in any case, as a graph's `socket_type` spells it.
pub fn parse_socket_type(text: &str) -> Result<SocketType, SendError> {
    SocketType::parse(text).ok_or_else(|| {
        SendError::invalid("socket_type", format!("{text:?} is not a socket type; use \"udp\" or \"tcp\""))
    })
}

/// One socket of a destination, as errors name it: `tcp 127.0.0.1:9000`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub transport: SocketType,
    pub address: SocketAddr,
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.transport, self.address)
    }
}

/// Where packets go: `num_sockets` consecutive ports from `start_port` on `address`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Destination {
    pub transport: SocketType,
    pub address: IpAddr,
    pub start_port: u16,
    pub num_sockets: u16,
}

impl Destination {
    /// A destination, checked as [`Destination::check`] does.
    pub fn new(transport: SocketType, address: IpAddr, start_port: u16, num_sockets: u16) -> Result<Self, SendError> {
        let destination = Self { transport, address, start_port, num_sockets };
        destination.check()?;
        Ok(destination)
    }

    /// At least one socket, a start port that is not 0, and a last port that exists.
    pub fn check(&self) -> Result<(), SendError> {
        if self.num_sockets == 0 {
            return Err(SendError::invalid("num_sockets", "is 0; give at least 1".into()));
        }
        if self.start_port == 0 {
            return Err(SendError::invalid("start_port", "is 0; give the port the receiver listens on".into()));
        }
        if u32::from(self.start_port) + u32::from(self.num_sockets) - 1 > u32::from(u16::MAX) {
            let problem = format!("{} sockets from port {} go past port 65535", self.num_sockets, self.start_port);
            return Err(SendError::invalid("num_sockets", problem));
        }
        Ok(())
    }

    /// Socket `socket` (from 0): the one on port `start_port + socket`.
    pub fn endpoint(&self, socket: u16) -> Endpoint {
        let address = SocketAddr::new(self.address, self.start_port + socket);
        Endpoint { transport: self.transport, address }
    }

    /// The most bytes one packet may have: a UDP datagram's limit, or what the TCP length prefix holds.
    pub fn max_packet(&self) -> usize {
        match (self.transport, self.address) {
            (SocketType::Udp, IpAddr::V4(_)) => 65_507,
            (SocketType::Udp, IpAddr::V6(_)) => 65_527,
            (SocketType::Tcp, _) => u32::MAX as usize,
        }
    }
}

/// `udp 127.0.0.1:9000-9003`, or `udp 127.0.0.1:9000` for one socket.
impl fmt::Display for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.endpoint(0))?;
        if self.num_sockets > 1 {
            write!(f, "-{}", u32::from(self.start_port) + u32::from(self.num_sockets) - 1)?;
        }
        Ok(())
    }
}

/// An IP address, or a host name that resolves to one (the first it resolves to).
pub fn parse_address(text: &str) -> Result<IpAddr, SendError> {
    if let Ok(address) = text.parse() {
        return Ok(address);
    }
    let resolved = (text, 0).to_socket_addrs().map_err(|error| {
        SendError::invalid(
            "address",
            format!("{text:?} is not an IP address, and does not resolve: {}", describe(&error)),
        )
    })?;
    let mut resolved = resolved.map(|a| a.ip());
    resolved.next().ok_or_else(|| SendError::invalid("address", format!("{text:?} resolves to no address")))
}

/// Sends packets at `rate` packets per second (packet `n` at `start + n / rate`); `None` sends them
/// as fast as the sockets take them. It sleeps while the next packet is more than ~200 µs away and
/// spins for the rest, so the rate holds at 100k+ packets/s. After a stall it catches up at once.
pub struct Pacer {
    rate: Option<f64>,
    start: Instant,
    next: u64,
}

impl Pacer {
    /// A pacer whose schedule starts now; a rate must be within [`MIN_RATE`]..=[`MAX_RATE`].
    pub fn new(rate: Option<f64>) -> Result<Self, SendError> {
        if let Some(rate) = rate
            && !(MIN_RATE..=MAX_RATE).contains(&rate)
        {
            return Err(SendError::invalid(
                "rate",
                format!(
                    "{rate} packets/s is outside {MIN_RATE}..{MAX_RATE}; give a rate in that range, or none for full \
                     speed"
                ),
            ));
        }
        Ok(Self { rate, start: Instant::now(), next: 0 })
    }

    /// Starts the schedule at `start`: the next packet is packet 0.
    pub fn restart(&mut self, start: Instant) {
        self.start = start;
        self.next = 0;
    }

    /// Returns when the next packet is due, and counts it.
    pub fn wait(&mut self) {
        while !self.wait_until(Instant::now() + PROGRESS_INTERVAL) {}
    }

    /// Returns when the next packet is due, counting it (true), or at `limit` if that comes first
    /// (false: the packet is still to wait for).
    pub fn wait_until(&mut self, limit: Instant) -> bool {
        let Some(rate) = self.rate else { return true };
        let offset = (self.next as f64 / rate).min(MAX_SCHEDULE_S);
        let due = self.start + Duration::from_secs_f64(offset);
        loop {
            let now = Instant::now();
            if now >= due {
                self.next += 1;
                return true;
            }
            if now >= limit {
                return false;
            }
            let ahead = due.min(limit) - now;
            if ahead > SPIN_WINDOW {
                std::thread::sleep(ahead - SPIN_WINDOW);
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

/// Sockets to every port of a destination.
pub struct Sender {
    destination: Destination,
    links: Links,
    /// A TCP packet behind its length prefix: one write per packet.
    framed: Vec<u8>,
    sent: u64,
}

enum Links {
    Udp(Vec<UdpSocket>),
    Tcp(Vec<TcpStream>),
}

impl Sender {
    /// UDP: a socket per port, connected to it (so a port nothing listens on is reported). TCP: a
    /// connection per port, with Nagle's algorithm off.
    pub fn connect(destination: &Destination) -> Result<Self, SendError> {
        destination.check()?;
        let endpoints = (0..destination.num_sockets).map(|socket| destination.endpoint(socket));
        let links = match destination.transport {
            SocketType::Udp => Links::Udp(endpoints.map(connect_udp).collect::<Result<_, _>>()?),
            SocketType::Tcp => Links::Tcp(endpoints.map(connect_tcp).collect::<Result<_, _>>()?),
        };
        Ok(Self { destination: destination.clone(), links, framed: Vec::new(), sent: 0 })
    }

    pub fn destination(&self) -> &Destination {
        &self.destination
    }

    /// Sends `packet` on socket `socket` (below `num_sockets`; panics otherwise). UDP waits while
    /// the kernel's send buffer is full; TCP writes the length prefix and the packet at once,
    /// waiting while the receiver does not read. While it waits, `waiting` is called about every
    /// [`PROGRESS_INTERVAL`]: `Break` stops the send ([`SendError::Stopped`]).
    pub fn send(
        &mut self,
        socket: usize,
        packet: &[u8],
        waiting: &mut dyn FnMut() -> ControlFlow<()>,
    ) -> Result<(), SendError> {
        let endpoint = self.destination.endpoint(socket as u16);
        if packet.len() > self.destination.max_packet() {
            return Err(SendError::TooLong { endpoint, length: packet.len(), max: self.destination.max_packet() });
        }
        let result = match &mut self.links {
            Links::Udp(sockets) => send_datagram(&sockets[socket], packet, waiting),
            Links::Tcp(streams) => {
                self.framed.clear();
                self.framed.extend_from_slice(&(packet.len() as u32).to_le_bytes());
                self.framed.extend_from_slice(packet);
                write_stream(&mut streams[socket], &self.framed, waiting)
            }
        };
        match result {
            Ok(true) => {}
            Ok(false) => return Err(SendError::Stopped { packets: self.sent }),
            Err(error) => return Err(SendError::Send { endpoint, sent: self.sent, error }),
        }
        self.sent += 1;
        Ok(())
    }

    /// Hands what is written to the kernel (TCP); UDP has nothing to flush.
    pub fn flush(&mut self) -> Result<(), SendError> {
        if let Links::Tcp(streams) = &mut self.links {
            for (socket, stream) in streams.iter_mut().enumerate() {
                let endpoint = self.destination.endpoint(socket as u16);
                stream.flush().map_err(|error| SendError::Send { endpoint, sent: self.sent, error })?;
            }
        }
        Ok(())
    }
}

fn connect_udp(endpoint: Endpoint) -> Result<UdpSocket, SendError> {
    let local: IpAddr = match endpoint.address {
        SocketAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        SocketAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    };
    let socket = UdpSocket::bind((local, 0)).map_err(|error| SendError::Connect { endpoint, error })?;
    socket.connect(endpoint.address).map_err(|error| SendError::Connect { endpoint, error })?;
    Ok(socket)
}

fn connect_tcp(endpoint: Endpoint) -> Result<TcpStream, SendError> {
    let stream = TcpStream::connect_timeout(&endpoint.address, CONNECT_TIMEOUT)
        .map_err(|error| SendError::Connect { endpoint, error })?;
    stream.set_nodelay(true).map_err(|error| SendError::Connect { endpoint, error })?;
    // A write the receiver does not take returns after this, so that the send can be stopped.
    stream.set_write_timeout(Some(PROGRESS_INTERVAL)).map_err(|error| SendError::Connect { endpoint, error })?;
    Ok(stream)
}

/// One datagram; a full kernel send buffer is waited out (yielding), up to [`FULL_BUFFER_TIMEOUT`],
/// calling `waiting` about every [`PROGRESS_INTERVAL`]. False when `waiting` stopped it.
fn send_datagram(socket: &UdpSocket, packet: &[u8], waiting: &mut dyn FnMut() -> ControlFlow<()>) -> io::Result<bool> {
    let mut full_since = None;
    let mut ask_at = Instant::now() + PROGRESS_INTERVAL;
    loop {
        match socket.send(packet) {
            Ok(_) => return Ok(true),
            Err(error) if error.kind() == ErrorKind::Interrupted => {}
            Err(error) if send_buffer_full(&error) => {
                if full_since.get_or_insert_with(Instant::now).elapsed() > FULL_BUFFER_TIMEOUT {
                    return Err(error);
                }
                if Instant::now() >= ask_at {
                    if waiting().is_break() {
                        return Ok(false);
                    }
                    ask_at = Instant::now() + PROGRESS_INTERVAL;
                }
                std::thread::yield_now();
            }
            Err(error) => return Err(error),
        }
    }
}

/// Writes all of `bytes` to `stream`, whose writes time out after [`PROGRESS_INTERVAL`], calling
/// `waiting` at each timeout. False when `waiting` stopped it (part of `bytes` may be written).
fn write_stream(
    stream: &mut TcpStream,
    mut bytes: &[u8],
    waiting: &mut dyn FnMut() -> ControlFlow<()>,
) -> io::Result<bool> {
    while !bytes.is_empty() {
        match stream.write(bytes) {
            Ok(0) => return Err(io::Error::from(ErrorKind::WriteZero)),
            Ok(written) => bytes = &bytes[written..],
            Err(error) if error.kind() == ErrorKind::Interrupted => {}
            Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if waiting().is_break() {
                    return Ok(false);
                }
            }
            Err(error) => return Err(error),
        }
    }
    Ok(true)
}

fn send_buffer_full(error: &io::Error) -> bool {
    error.kind() == ErrorKind::WouldBlock || error.raw_os_error() == Some(libc::ENOBUFS)
}

/// What a send did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SendStats {
    /// Packets sent.
    pub packets: u64,
    /// Their bytes, without TCP's length prefixes.
    pub bytes: u64,
    /// From the first packet to the last sent, connections made.
    pub seconds: f64,
}

impl SendStats {
    pub fn packets_per_s(&self) -> f64 {
        self.packets as f64 / self.seconds.max(1e-9)
    }
}

/// Called about every [`PROGRESS_INTERVAL`] with the packets sent so far; `Break` stops the send
/// ([`SendError::Stopped`]).
pub type Progress<'a> = &'a mut dyn FnMut(u64) -> ControlFlow<()>;

/// Sends `packets` to `destination` at `rate` packets per second (`None`: as fast as possible).
/// Settings and files are checked before anything connects.
pub fn send(
    destination: &Destination,
    packets: &Packets,
    rate: Option<f64>,
    progress: Option<Progress<'_>>,
) -> Result<SendStats, SendError> {
    let mut source = packets.open(destination)?;
    send_from(destination, source.as_mut(), rate, progress)
}

/// [`send`] with the packets of `source`.
pub fn send_from(
    destination: &Destination,
    source: &mut dyn PacketSource,
    rate: Option<f64>,
    mut progress: Option<Progress<'_>>,
) -> Result<SendStats, SendError> {
    let mut pacer = Pacer::new(rate)?;
    let mut sender = Sender::connect(destination)?;
    let sockets = u64::from(destination.num_sockets);
    let mut packet = Vec::new();
    let mut stats = SendStats::default();
    let start = Instant::now();
    pacer.restart(start);
    let mut report_at = start + PROGRESS_INTERVAL;
    let mut report = |sent: u64| progress.as_mut().map_or(ControlFlow::Continue(()), |report| report(sent));
    while let Some(number) = source.next_packet(&mut packet)? {
        // The progress callback is called during the wait too, so that a slow rate stops at once.
        while !pacer.wait_until(report_at) {
            if report(stats.packets).is_break() {
                return Err(SendError::Stopped { packets: stats.packets });
            }
            report_at = Instant::now() + PROGRESS_INTERVAL;
        }
        sender.send((number % sockets) as usize, &packet, &mut || report(stats.packets))?;
        stats.packets += 1;
        stats.bytes += packet.len() as u64;
        if Instant::now() >= report_at {
            if report(stats.packets).is_break() {
                return Err(SendError::Stopped { packets: stats.packets });
            }
            report_at = Instant::now() + PROGRESS_INTERVAL;
        }
    }
    sender.flush()?;
    stats.seconds = start.elapsed().as_secs_f64();
    Ok(stats)
}

/// Why a send failed: one line naming the field, file, or address and port at fault.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// A setting is out of range; `field` as a graph's `network_config` and `tomii.send` name it.
    #[error("{field}: {problem}")]
    Invalid { field: &'static str, problem: String },
    #[error("cannot connect to {endpoint}: {}{}", describe(.error), connect_hint(.error))]
    Connect { endpoint: Endpoint, error: io::Error },
    #[error("cannot send to {endpoint} after {sent} packets: {}{}", describe(.error), send_hint(.endpoint, .error))]
    Send { endpoint: Endpoint, sent: u64, error: io::Error },
    #[error("cannot send a {length}-byte packet to {endpoint}: one packet holds at most {max} bytes")]
    TooLong { endpoint: Endpoint, length: usize, max: usize },
    #[error("{}: {problem}", .path.display())]
    File { path: PathBuf, problem: String },
    /// A caller's [`PacketSource`] failed; the message is its own.
    #[error("{0}")]
    Source(String),
    #[error("stopped after {packets} packets")]
    Stopped { packets: u64 },
}

impl SendError {
    fn invalid(field: &'static str, problem: String) -> Self {
        Self::Invalid { field, problem }
    }
}

/// An I/O error as a clause: "connection refused", without the "(os error 111)".
pub(super) fn describe(error: &io::Error) -> String {
    let text = error.to_string();
    let text = text.split(" (os error ").next().unwrap_or_default();
    let mut chars = text.chars();
    chars.next().map(|first| first.to_lowercase().chain(chars).collect()).unwrap_or_default()
}

fn connect_hint(error: &io::Error) -> &'static str {
    match error.kind() {
        ErrorKind::ConnectionRefused => "; is the receiver running?",
        ErrorKind::TimedOut => "; is the address right, and the receiver reachable?",
        _ => "",
    }
}

fn send_hint(endpoint: &Endpoint, error: &io::Error) -> &'static str {
    match (endpoint.transport, error.kind()) {
        (SocketType::Udp, ErrorKind::ConnectionRefused) => " (nothing listens on that port); is the receiver running?",
        (SocketType::Tcp, ErrorKind::BrokenPipe | ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted) => {
            "; the receiver closed the connection"
        }
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;
    use std::thread::JoinHandle;

    use super::*;
    use std::io::Read;

    use crate::network::{HEADER_LEN, TCP_LENGTH_PREFIX, read_header};

    const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

    /// `count` sockets bound to consecutive ports of 127.0.0.1, from a port the system chose.
    fn consecutive<T>(count: u16, bind: impl Fn(u16) -> io::Result<T>, port_of: impl Fn(&T) -> u16) -> (u16, Vec<T>) {
        for _ in 0..100 {
            let first = bind(0).expect("binding a loopback port");
            let start = port_of(&first);
            let rest: io::Result<Vec<T>> = (1..count).map(|k| bind(start.wrapping_add(k))).collect();
            if let (Ok(rest), true) = (rest, start.checked_add(count).is_some()) {
                return (start, std::iter::once(first).chain(rest).collect());
            }
        }
        panic!("found no {count} consecutive free ports on 127.0.0.1");
    }

    fn udp_sockets(count: u16) -> (u16, Vec<UdpSocket>) {
        let (start, sockets) =
            consecutive(count, |p| UdpSocket::bind((LOOPBACK, p)), |s| s.local_addr().unwrap().port());
        for socket in &sockets {
            socket.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        }
        (start, sockets)
    }

    /// Reads `count` datagrams on its own thread, so that none is dropped while the test sends.
    fn receive(socket: UdpSocket, count: usize) -> JoinHandle<Vec<Vec<u8>>> {
        std::thread::spawn(move || {
            let mut buffer = vec![0u8; 65_536];
            let mut received = Vec::new();
            for _ in 0..count {
                let length = socket.recv(&mut buffer).expect("a datagram within 10 s");
                received.push(buffer[..length].to_vec());
            }
            received
        })
    }

    /// Accepts one connection and reads it to its end, as length-prefixed packets.
    fn accept(listener: TcpListener) -> JoinHandle<Vec<Vec<u8>>> {
        std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().expect("a connection");
            let mut bytes = Vec::new();
            stream.read_to_end(&mut bytes).expect("reading the stream");
            let mut packets = Vec::new();
            let mut rest = &bytes[..];
            while !rest.is_empty() {
                let (prefix, tail) = rest.split_at(TCP_LENGTH_PREFIX);
                let length = u32::from_le_bytes(prefix.try_into().unwrap()) as usize;
                packets.push(tail[..length].to_vec());
                rest = &tail[length..];
            }
            packets
        })
    }

    fn generated(packet_length: usize, frame_packets: u32, frames: u64, first_frame: u64) -> Packets {
        Packets::Generated { packet_length, frame_packets, frames, first_frame }
    }

    fn expected(frame: u64, index: u32, packet_length: usize) -> Vec<u8> {
        let mut packet = vec![0u8; packet_length];
        write_packet(&mut packet, frame, index);
        packet
    }

    #[test]
    fn the_payload_is_the_documented_ramp() {
        let mut payload = [0u8; 70];
        fill_payload(&mut payload, 1, 2);
        // (131 * 1 + 31 * 2 + k) mod 256 = (193 + k) mod 256.
        assert_eq!(payload[..3], [193, 194, 195]);
        assert_eq!(payload[63], 0);
        assert_eq!(payload[69], 6);
        let packet = expected(u64::MAX, 7, 40);
        assert_eq!(read_header(&packet), Some((u64::MAX, 7)));
        assert_eq!(packet[HEADER_LEN], (u64::MAX.wrapping_mul(131).wrapping_add(7 * 31)) as u8);
    }

    #[test]
    fn udp_datagrams_carry_the_header_and_payload_of_every_packet_in_order() {
        let (port, mut sockets) = udp_sockets(1);
        let received = receive(sockets.remove(0), 15);
        let destination = Destination::new(SocketType::Udp, LOOPBACK, port, 1).unwrap();
        let stats = send(&destination, &generated(40, 5, 3, 7), None, None).unwrap();
        assert_eq!((stats.packets, stats.bytes), (15, 600));
        let wanted: Vec<Vec<u8>> = (7..10).flat_map(|f| (0..5).map(move |i| expected(f, i, 40))).collect();
        assert_eq!(received.join().unwrap(), wanted);
    }

    #[test]
    fn packet_index_picks_the_port_round_robin() {
        let (port, sockets) = udp_sockets(3);
        // Frames of 4 packets over 3 ports: indexes 0 and 3 go to the first port, 1 to the second...
        let counts = [4, 2, 2];
        let receivers: Vec<_> = sockets.into_iter().zip(counts).map(|(s, n)| receive(s, n)).collect();
        let destination = Destination::new(SocketType::Udp, LOOPBACK, port, 3).unwrap();
        send(&destination, &generated(16, 4, 2, 0), None, None).unwrap();
        for (socket, receiver) in receivers.into_iter().enumerate() {
            let headers: Vec<_> = receiver.join().unwrap().iter().map(|p| read_header(p).unwrap()).collect();
            let wanted: Vec<_> =
                (0..2).flat_map(|f| (0..4).map(move |i| (f, i))).filter(|(_, i)| *i as usize % 3 == socket).collect();
            assert_eq!(headers, wanted, "packets on socket {socket}");
        }
    }

    #[test]
    fn tcp_frames_each_packet_behind_its_length_on_one_connection_per_port() {
        let (port, listeners) =
            consecutive(2, |p| TcpListener::bind((LOOPBACK, p)), |l| l.local_addr().unwrap().port());
        let accepted: Vec<_> = listeners.into_iter().map(accept).collect();
        let destination = Destination::new(SocketType::Tcp, LOOPBACK, port, 2).unwrap();
        let stats = send(&destination, &generated(24, 3, 2, 5), None, None).unwrap();
        assert_eq!((stats.packets, stats.bytes), (6, 144));
        let streams: Vec<_> = accepted.into_iter().map(|a| a.join().unwrap()).collect();
        assert_eq!(streams[0], [expected(5, 0, 24), expected(5, 2, 24), expected(6, 0, 24), expected(6, 2, 24)]);
        assert_eq!(streams[1], [expected(5, 1, 24), expected(6, 1, 24)]);
    }

    #[test]
    fn a_file_of_packets_is_sent_as_it_is() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        let packets: Vec<Vec<u8>> = (0..3u8).map(|k| (0..32).map(|b| b ^ (k * 85)).collect()).collect();
        file.write_all(&packets.concat()).unwrap();
        let (port, mut sockets) = udp_sockets(1);
        let received = receive(sockets.remove(0), 3);
        let destination = Destination::new(SocketType::Udp, LOOPBACK, port, 1).unwrap();
        let source = Packets::File { path: file.path().to_path_buf(), packet_length: 32 };
        assert_eq!(source.total(), Some(3));
        let stats = send(&destination, &source, None, None).unwrap();
        assert_eq!((stats.packets, stats.bytes), (3, 96));
        assert_eq!(received.join().unwrap(), packets);
    }

    #[test]
    fn a_file_ending_in_a_partial_packet_is_refused_before_sending() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(&[0u8; 100]).unwrap();
        let destination = Destination::new(SocketType::Tcp, LOOPBACK, closed_tcp_port(), 1).unwrap();
        let source = Packets::File { path: file.path().to_path_buf(), packet_length: 32 };
        let message = send(&destination, &source, None, None).unwrap_err().to_string();
        assert!(message.starts_with(&file.path().display().to_string()), "{message}");
        assert!(message.contains("100 bytes") && message.contains("32-byte packets"), "{message}");
    }

    #[test]
    fn the_pacer_never_runs_ahead_of_its_rate() {
        let rate = 20_000.0;
        let mut pacer = Pacer::new(Some(rate)).unwrap();
        let start = Instant::now();
        pacer.restart(start);
        for _ in 0..2_000 {
            pacer.wait();
        }
        // Packet 1999 is due 1999 / rate after the start; only a lower bound, as machines are noisy.
        let least = 1_999.0 / rate * 0.99;
        assert!(start.elapsed().as_secs_f64() >= least, "2000 packets in {:?}", start.elapsed());
    }

    #[test]
    fn the_pacer_returns_at_its_limit_before_a_packet_far_away() {
        let mut pacer = Pacer::new(Some(MIN_RATE)).unwrap();
        pacer.restart(Instant::now());
        assert!(pacer.wait_until(Instant::now()), "packet 0 is due at once");
        // Packet 1 is due in 100 s: the wait ends at its limit, the packet still to wait for.
        let start = Instant::now();
        assert!(!pacer.wait_until(start + Duration::from_millis(20)));
        assert!(start.elapsed() < Duration::from_secs(10), "waited {:?}", start.elapsed());
        assert!(!pacer.wait_until(Instant::now()));
        let rate = |rate: f64| Pacer::new(Some(rate)).err().map(|e| e.to_string());
        assert_eq!(
            rate(1e-9).as_deref(),
            Some(
                "rate: 0.000000001 packets/s is outside 0.01..1000000000; give a rate in that range, or none for full speed"
            )
        );
        assert!(rate(f64::INFINITY).is_some() && rate(f64::NAN).is_some() && rate(MAX_RATE).is_none());
    }

    #[test]
    fn a_paced_send_takes_at_least_its_schedule() {
        let (port, mut sockets) = udp_sockets(1);
        let received = receive(sockets.remove(0), 200);
        let destination = Destination::new(SocketType::Udp, LOOPBACK, port, 1).unwrap();
        let stats = send(&destination, &generated(16, 10, 20, 0), Some(20_000.0), None).unwrap();
        assert_eq!(stats.packets, 200);
        assert!(stats.seconds >= 199.0 / 20_000.0 * 0.99, "{stats:?}");
        assert!(stats.packets_per_s() <= 20_000.0 * 1.01, "{stats:?}");
        assert_eq!(received.join().unwrap().len(), 200);
    }

    #[test]
    fn progress_can_stop_a_send() {
        let (port, _sockets) = udp_sockets(1);
        let destination = Destination::new(SocketType::Udp, LOOPBACK, port, 1).unwrap();
        let mut reports = Vec::new();
        let mut stop = |sent: u64| {
            reports.push(sent);
            ControlFlow::Break(())
        };
        // 1000 packets at 2000/s take at least 0.5 s: the first report, at 0.25 s, comes before the end.
        let error = send(&destination, &generated(16, 1000, 1, 0), Some(2_000.0), Some(&mut stop)).unwrap_err();
        assert!(matches!(error, SendError::Stopped { packets } if packets == reports[0]), "{error}");
        assert_eq!(reports.len(), 1);
    }

    fn closed_tcp_port() -> u16 {
        let listener = TcpListener::bind((LOOPBACK, 0)).unwrap();
        listener.local_addr().unwrap().port()
    }

    #[test]
    fn a_refused_tcp_connection_names_the_address_and_port() {
        let port = closed_tcp_port();
        let destination = Destination::new(SocketType::Tcp, LOOPBACK, port, 1).unwrap();
        let message = send(&destination, &generated(16, 1, 1, 0), None, None).unwrap_err().to_string();
        assert_eq!(
            message,
            format!("cannot connect to tcp 127.0.0.1:{port}: connection refused; is the receiver running?")
        );
    }

    #[test]
    fn udp_to_a_port_nothing_listens_on_is_an_error() {
        let port = UdpSocket::bind((LOOPBACK, 0)).unwrap().local_addr().unwrap().port();
        let destination = Destination::new(SocketType::Udp, LOOPBACK, port, 1).unwrap();
        let message = send(&destination, &generated(16, 1000, 10, 0), None, None).unwrap_err().to_string();
        assert!(message.starts_with(&format!("cannot send to udp 127.0.0.1:{port} after ")), "{message}");
        assert!(message.ends_with("connection refused (nothing listens on that port); is the receiver running?"));
    }

    #[test]
    fn bad_settings_name_their_field() {
        let udp = Destination { transport: SocketType::Udp, address: LOOPBACK, start_port: 9000, num_sockets: 1 };
        let error = |destination: &Destination, packets: &Packets, rate: Option<f64>| {
            send(destination, packets, rate, None).unwrap_err().to_string()
        };
        let short = error(&udp, &generated(8, 1, 1, 0), None);
        assert_eq!(short, "packet_length: 8 bytes is shorter than the 16-byte packet header; give at least 16");
        assert!(error(&udp, &generated(70_000, 1, 1, 0), None).starts_with("packet_length: 70000 bytes is more"));
        assert_eq!(error(&udp, &generated(16, 0, 1, 0), None), "frame_packets: is 0; give at least 1");
        assert_eq!(error(&udp, &generated(16, 1, 0, 0), None), "frames: is 0; give at least 1");
        assert!(error(&udp, &generated(16, 1, 2, u64::MAX), None).starts_with("frames: 2 frames from frame"));
        assert!(error(&udp, &generated(16, 1, 1, 0), Some(0.0)).starts_with("rate: 0 packets/s"));
        let wide = Destination { start_port: 65_000, num_sockets: 600, ..udp.clone() };
        assert_eq!(
            error(&wide, &generated(16, 1, 1, 0), None),
            "num_sockets: 600 sockets from port 65000 go past port 65535"
        );
        assert!(parse_socket_type("sctp").unwrap_err().to_string().starts_with("socket_type: \"sctp\""));
        assert_eq!(parse_socket_type("TCP").unwrap(), SocketType::Tcp);
        let missing = Packets::File { path: "/no/such/packets.bin".into(), packet_length: 16 };
        assert!(error(&udp, &missing, None).starts_with("/no/such/packets.bin: cannot open the packets: no such file"));
    }

    #[test]
    fn destinations_print_their_port_range() {
        let one = Destination::new(SocketType::Udp, LOOPBACK, 9000, 1).unwrap();
        assert_eq!(one.to_string(), "udp 127.0.0.1:9000");
        let four = Destination::new(SocketType::Tcp, "::1".parse().unwrap(), 9000, 4).unwrap();
        assert_eq!(four.to_string(), "tcp [::1]:9000-9003");
        assert_eq!(parse_address("localhost").map(|a| a.is_loopback()).ok(), Some(true));
    }
}
