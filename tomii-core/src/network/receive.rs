//! The sockets and the receiver threads (README.md, "Receiving"). Sockets are bound before the run
//! starts, so a port in use or an address that is not local is an error before any frame; each
//! receiver thread then polls its share of them (mio) and hands every packet to the source. A
//! receiver never spins: with nothing to read it blocks in its poll, as long as the source lets it.

use crate::plugin::KernelCaller;
use std::io::{self, Read};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use mio::net::{TcpListener, TcpStream, UdpSocket};
use mio::{Events, Interest, Poll, Token, Waker};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::sync::Arc;

use super::TCP_LENGTH_PREFIX;
use crate::graph::{NetworkConfig, SocketType};

/// The token of the receiver's waker.
const WAKE: Token = Token(usize::MAX);
/// Bytes a TCP connection reads at once, at least.
const STREAM_BUFFER: usize = 64 << 10;

/// A bound socket.
pub(crate) enum Endpoint {
    Udp(UdpSocket),
    Tcp(TcpListener),
}

/// The bound sockets of a network source.
pub(crate) struct Sockets {
    pub endpoints: Vec<Endpoint>,
    pub ports: Vec<u16>,
    /// The receive buffer the system granted each socket, in bytes.
    pub recv_buffer: usize,
}

/// Binds every socket of `config`, asking for `recv_buffer` bytes of receive buffer each; errors
/// are one line naming the address and port.
pub(crate) fn bind(config: &NetworkConfig, recv_buffer: u64) -> Result<Sockets, String> {
    let mut sockets = Sockets { endpoints: Vec::new(), ports: Vec::new(), recv_buffer: 0 };
    for i in 0..config.num_sockets {
        let port = if config.start_port == 0 { 0 } else { config.start_port + i };
        let address = SocketAddr::new(config.address, port);
        let (endpoint, granted, bound) = bind_one(config.socket_type, address, recv_buffer)
            .map_err(|error| bind_error(config.socket_type, address, &error))?;
        sockets.endpoints.push(endpoint);
        sockets.ports.push(bound);
        sockets.recv_buffer = granted;
    }
    Ok(sockets)
}

fn bind_one(kind: SocketType, address: SocketAddr, recv_buffer: u64) -> io::Result<(Endpoint, usize, u16)> {
    let domain = Domain::for_address(address);
    let socket = match kind {
        SocketType::Udp => Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))?,
        SocketType::Tcp => Socket::new(domain, Type::STREAM, Some(Protocol::TCP))?,
    };
    // Asked for, not required: the system caps it (net.core.rmem_max); the report says what it gave.
    let _ = socket.set_recv_buffer_size(usize::try_from(recv_buffer).unwrap_or(usize::MAX));
    if kind == SocketType::Tcp {
        // Lets a port be bound again at once after a run; a port in use by a listener still fails.
        socket.set_reuse_address(true)?;
    }
    socket.bind(&SockAddr::from(address))?;
    socket.set_nonblocking(true)?;
    let granted = socket.recv_buffer_size().unwrap_or(0);
    let port = socket.local_addr()?.as_socket().map_or(address.port(), |a| a.port());
    let endpoint = match kind {
        SocketType::Udp => Endpoint::Udp(UdpSocket::from_std(socket.into())),
        SocketType::Tcp => {
            socket.listen(1024)?;
            Endpoint::Tcp(TcpListener::from_std(socket.into()))
        }
    };
    Ok((endpoint, granted, port))
}

/// The one-line message for a socket that cannot be bound, with what to do.
fn bind_error(kind: SocketType, address: SocketAddr, error: &io::Error) -> String {
    let what = match error.kind() {
        io::ErrorKind::AddrInUse => {
            "the port is in use (by another program or run); choose another start_port".to_owned()
        }
        io::ErrorKind::AddrNotAvailable => {
            "the address is not one of this machine's; use 127.0.0.1, 0.0.0.0 or an address of one of its interfaces"
                .to_owned()
        }
        io::ErrorKind::PermissionDenied => {
            "permission denied (ports below 1024 need privileges); choose a start_port above 1023".to_owned()
        }
        _ => error.to_string(),
    };
    format!("network_config: cannot listen on {} {}: {what}", kind.name(), show(address))
}

/// `127.0.0.1:9000`, `[::1]:9000`.
pub(crate) fn show(address: SocketAddr) -> String {
    match address.ip() {
        IpAddr::V4(ip) => format!("{ip}:{}", address.port()),
        IpAddr::V6(ip) => format!("[{ip}]:{}", address.port()),
    }
}

/// Where a receiver hands its packets: the network source.
pub(crate) trait Sink {
    /// A free packet buffer: its index, or `None` when every one is in use.
    fn buffer(&self) -> Option<u32>;
    /// Buffer `index`, to read a packet into.
    ///
    /// # Safety
    /// The caller took `index` from `buffer` and has not handed it on.
    #[allow(clippy::mut_from_ref)]
    unsafe fn bytes(&self, index: u32) -> &mut [u8];
    /// Gives back a buffer that holds no packet.
    fn give_back(&self, index: u32);
    /// A packet of `len` bytes is in buffer `index`, which the sink now owns.
    fn packet(&self, receiver: &mut Local, index: u32, len: usize);
    /// A packet that could not be kept (no buffer, or a TCP packet of another length).
    fn lost(&self, why: super::window::Cause);
    /// A TCP connection was accepted.
    fn connected(&self);
    /// Looked at every poll: whether the receivers should stop.
    fn tick(&self) -> bool;
    /// How long the receiver may block in its poll when no socket has anything to read: until the
    /// run needs it to look again (a deadline); `None`: until a packet comes or it is woken.
    fn longest_wait(&self) -> Option<Duration>;
    /// The length every packet has.
    fn packet_length(&self) -> usize;
    /// The receiver's waker, which ends its poll: when a slot may be free (the receiver then calls
    /// `slot_freed`) and when the source stops.
    fn waker(&self, waker: Arc<Waker>);
    /// A slot may have become free (the receiver was woken).
    fn slot_freed(&self);
}

/// A receiver thread's own buffers, lent to the sink for each packet.
pub(crate) struct Local {
    /// How the source's kernels are called (their error messages).
    pub kernels: KernelCaller<'static>,
    /// A dropped packet's bytes when no buffer is free.
    scratch: Vec<u8>,
}

/// One TCP connection's stream, parsed into packets.
struct Connection {
    stream: TcpStream,
    buffer: Vec<u8>,
    /// Unparsed bytes are `buffer[start..end]`.
    start: usize,
    end: usize,
    /// Bytes of a packet of the wrong length still to skip.
    skip: usize,
    /// Whether the stream may have bytes to read.
    ready: bool,
}

/// What a round of reading left of a socket.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Left {
    /// Nothing to read until it is readable again.
    Drained,
    /// More may be waiting: it gets another round.
    More,
    /// The connection closed.
    Closed,
}

/// Datagrams read from one socket in a round, and packets (and reads) taken from one TCP
/// connection: sockets take turns, so that one socket's backlog does not hold up the packets of
/// the others (a frame's packets may be spread over several, and must stay within the frame
/// window of each other).
const UDP_ROUND: usize = 32;
const TCP_ROUND_PACKETS: usize = 32;
const TCP_ROUND: usize = 4;

/// A receiver thread's life: polls `endpoints` until the sink says stop.
pub(crate) fn receive(sink: &dyn Sink, mut endpoints: Vec<Endpoint>) -> io::Result<()> {
    let mut poll = Poll::new()?;
    for (k, endpoint) in endpoints.iter_mut().enumerate() {
        let registry = poll.registry();
        match endpoint {
            Endpoint::Udp(socket) => registry.register(socket, Token(k), Interest::READABLE)?,
            Endpoint::Tcp(listener) => registry.register(listener, Token(k), Interest::READABLE)?,
        }
    }
    sink.waker(Arc::new(Waker::new(poll.registry(), WAKE)?));
    let mut local = Local { kernels: KernelCaller::outside_run(1024), scratch: vec![0; sink.packet_length() + 1] };
    let mut connections: Vec<Option<Connection>> = Vec::new();
    let mut ready = vec![false; endpoints.len()];
    let mut events = Events::with_capacity(256);
    let mut more = false;
    while !sink.tick() {
        let wait = if more { Some(Duration::ZERO) } else { sink.longest_wait() };
        if let Err(error) = poll.poll(&mut events, wait) {
            if error.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(error);
        }
        for event in &events {
            let token = event.token().0;
            if event.token() == WAKE {
                sink.slot_freed();
            } else if let Some(Endpoint::Tcp(listener)) = endpoints.get(token) {
                accept(sink, &poll, listener, endpoints.len(), &mut connections)?;
            } else if token < endpoints.len() {
                ready[token] = true;
            } else if let Some(Some(connection)) = connections.get_mut(token - endpoints.len()) {
                connection.ready = true;
            }
        }
        // One round: every socket that may have packets reads a few.
        more = false;
        for (k, endpoint) in endpoints.iter().enumerate() {
            if let (true, Endpoint::Udp(socket)) = (ready[k], endpoint) {
                ready[k] = read_datagrams(sink, &mut local, socket) == Left::More;
                more |= ready[k];
            }
        }
        for slot in &mut connections {
            let Some(connection) = slot.as_mut().filter(|c| c.ready) else { continue };
            match read_stream(sink, &mut local, connection) {
                Left::Drained => connection.ready = false,
                Left::More => more = true,
                Left::Closed => {
                    if let Some(mut connection) = slot.take() {
                        let _ = poll.registry().deregister(&mut connection.stream);
                    }
                }
            }
        }
    }
    Ok(())
}

/// Reads up to a round of datagrams waiting on `socket`.
fn read_datagrams(sink: &dyn Sink, local: &mut Local, socket: &UdpSocket) -> Left {
    let wanted = sink.packet_length() + 1; // one more, to tell a longer datagram
    for _ in 0..UDP_ROUND {
        let Some(index) = sink.buffer() else {
            match socket.recv(&mut local.scratch) {
                Ok(_) => sink.lost(super::window::Cause::NoBuffer),
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Left::Drained,
            }
            continue;
        };
        // SAFETY: taken just above.
        let buffer = unsafe { sink.bytes(index) };
        match socket.recv(&mut buffer[..wanted]) {
            Ok(len) => sink.packet(local, index, len),
            Err(error) => {
                sink.give_back(index);
                if error.kind() != io::ErrorKind::Interrupted {
                    return Left::Drained; // WouldBlock: all read; anything else (an ICMP error) too
                }
            }
        }
    }
    Left::More
}

/// Accepts every connection waiting on `listener`.
fn accept(
    sink: &dyn Sink,
    poll: &Poll,
    listener: &TcpListener,
    first_token: usize,
    connections: &mut Vec<Option<Connection>>,
) -> io::Result<()> {
    loop {
        let mut stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return Ok(()), // a connection reset before it was accepted, or out of descriptors
        };
        let at = connections.iter().position(Option::is_none).unwrap_or(connections.len());
        poll.registry().register(&mut stream, Token(first_token + at), Interest::READABLE)?;
        let size = STREAM_BUFFER.max(2 * (sink.packet_length() + TCP_LENGTH_PREFIX));
        let connection = Connection { stream, buffer: vec![0; size], start: 0, end: 0, skip: 0, ready: true };
        if at == connections.len() {
            connections.push(Some(connection));
        } else {
            connections[at] = Some(connection);
        }
        sink.connected();
    }
}

/// Hands on up to a round of packets of `connection`: those already read first, then what a few
/// reads bring.
fn read_stream(sink: &dyn Sink, local: &mut Local, connection: &mut Connection) -> Left {
    let mut budget = TCP_ROUND_PACKETS - parse_stream(sink, local, connection, TCP_ROUND_PACKETS);
    if budget == 0 {
        return Left::More;
    }
    for _ in 0..TCP_ROUND {
        if connection.start == connection.end {
            (connection.start, connection.end) = (0, 0);
        } else if connection.end == connection.buffer.len() {
            connection.buffer.copy_within(connection.start..connection.end, 0);
            (connection.start, connection.end) = (0, connection.end - connection.start);
        }
        let read = connection.stream.read(&mut connection.buffer[connection.end..]);
        match read {
            Ok(0) => {
                if connection.end > connection.start || connection.skip > 0 {
                    sink.lost(super::window::Cause::WrongLength); // cut off in the middle of a packet
                }
                return Left::Closed;
            }
            Ok(n) => connection.end += n,
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => return Left::Drained,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return Left::Closed,
        }
        budget -= parse_stream(sink, local, connection, budget);
        if budget == 0 {
            return Left::More;
        }
    }
    Left::More
}

/// Hands on the whole packets in the connection's buffer, up to `most` of them (a packet of the
/// wrong length counts); how many.
fn parse_stream(sink: &dyn Sink, local: &mut Local, connection: &mut Connection, most: usize) -> usize {
    let length = sink.packet_length();
    let mut parsed = 0;
    while parsed < most {
        let waiting = connection.end - connection.start;
        if connection.skip > 0 {
            let skipped = connection.skip.min(waiting);
            connection.skip -= skipped;
            connection.start += skipped;
            if connection.skip > 0 {
                return parsed;
            }
            continue;
        }
        if waiting < TCP_LENGTH_PREFIX {
            return parsed;
        }
        let prefix = &connection.buffer[connection.start..connection.start + TCP_LENGTH_PREFIX];
        let len = u32::from_le_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]) as usize;
        if len != length {
            parsed += 1;
            sink.lost(super::window::Cause::WrongLength);
            connection.start += TCP_LENGTH_PREFIX;
            connection.skip = len;
            continue;
        }
        if waiting < TCP_LENGTH_PREFIX + len {
            return parsed;
        }
        parsed += 1;
        let body = connection.start + TCP_LENGTH_PREFIX;
        connection.start = body + len;
        let Some(index) = sink.buffer() else {
            sink.lost(super::window::Cause::NoBuffer);
            continue;
        };
        // SAFETY: taken just above.
        let buffer = unsafe { sink.bytes(index) };
        buffer[..len].copy_from_slice(&connection.buffer[body..body + len]);
        sink.packet(local, index, len);
    }
    parsed
}
