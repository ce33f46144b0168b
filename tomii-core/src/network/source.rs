//! The network source (README.md beside this file): frames made of packets. Each packet is
//! decoded (`extract_packet_func`), given its frame id and index (`id_function`,
//! `index_function`, or the packet header), and, with packet-driven dispatch, delivered through the
//! door as the value of its `$network` instance the moment it arrives; a frame opens at its first
//! packet and its reception ends at its last, or at its deadline; a run of N frames whose packets
//! stop coming ends at the idle timeout, as a failure. Its kernels are called through the kernel
//! port (`plugin::KernelCaller`); it never touches a slot but through the door.
//!
//! # Memory ordering
//! - `stop` is stored Release when the source stops its receivers and loaded Acquire by each
//!   receiver at its ticks and waits, so a receiver that sees it sees the run's end before it.
//!   The receivers' wakers are woken after it, under the `wakers` lock, under which each receiver
//!   registered its waker before its first tick: a receiver either sees `stop` or is woken from
//!   its poll, so one blocked without a deadline never outlives the run.
//! - `waiting` (whether a frame waits for a slot) is stored Release under the window's lock and
//!   loaded Acquire, without the lock, by the door's slot-free callback and the receivers' ticks:
//!   one that sees it set takes the lock and finds the waiting frame; one that misses it is
//!   caught by the next tick.
//! - `holding` (receivers waiting with a packet in hand) is decremented Release after the waiting
//!   receiver stamped `last_packet_ns`, and loaded Acquire by the idle watch before it reads
//!   `last_packet_ns`: a watch that sees no receiver holding sees the time its wait ended.
//! - The counts, `last_packet_ns` and the next expiry time are Relaxed otherwise: statistics, and
//!   times read against a timeout hundreds of ticks long.

use std::ffi::CString;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::json;
use tomii_types::abi::TomiiValue;
use tomii_types::kernel::{Value, ValueRef};

use super::pool::PacketPool;
use super::receive::{self, Endpoint, Local, Sink};
use super::window::{Cause, Counts, Shape, Verdict, Window};
use super::{Dispatch, NetworkOptions, WhenBusy, read_header};
use crate::engine::{Capabilities, Door, FrameDone, FrameOutputs, FrameSource, NextFrame, RunConfig, RunError};
use crate::graph::{CompiledGraph, NetworkConfig};
use crate::knobs::Choice;
use crate::plugin::{Kernel, KernelSet};

/// The most bytes of packet buffers a network source makes.
const MAX_POOL_BYTES: u64 = 2 << 30;
/// The most packets the window may hold (frame_window × frame_packets).
const MAX_HELD: u64 = 1 << 26;
/// The longest a receiver waits, blocked, for the window to move before it looks again.
const WAIT_AT_MOST: Duration = Duration::from_millis(1);
/// The longest a receiver blocks in its poll while frames have deadlines or wait for a slot
/// (README.md, "Receiving"); with none, it blocks until a packet, the idle deadline or the stop.
const POLL_EVERY: Duration = Duration::from_millis(2);
/// How often a receiver looks for frames past their deadline, at most.
const EXPIRE_EVERY_NS: u64 = 1_000_000;

/// Frames from packets on a graph's `network_config` sockets; bound by [`NetworkSource::bind`],
/// receiving once the run has attached it.
pub struct NetworkSource {
    shared: Arc<Shared>,
    /// The sockets, until the receivers take them.
    endpoints: Mutex<Option<Vec<Endpoint>>>,
    receivers: Mutex<Vec<JoinHandle<()>>>,
    ports: Vec<u16>,
    recv_buffer: usize,
}

/// What the receivers share with the run.
struct Shared {
    config: NetworkConfig,
    options: NetworkOptions,
    window: Mutex<Window>,
    counts: Counts,
    pool: Arc<PacketPool>,
    door: OnceLock<Arc<Door>>,
    epoch: Instant,
    next_expiry_ns: AtomicU64,
    extract: Option<Kernel>,
    id: Option<Kernel>,
    /// The index function and its constant arguments.
    index: Option<(Kernel, Vec<Value>)>,
    /// `$network`, the node name source kernels see.
    node: CString,
    /// The first source kernel failure, for the report.
    first_error: Mutex<Option<String>>,
    /// Set when the run is over: the receivers return.
    stop: AtomicBool,
    /// Whether frames wait for a slot (`Window::has_waiting`, kept for the door's callback).
    waiting: AtomicBool,
    /// Each receiver's waker: a free slot wakes them when frames wait for one, and the stop does.
    wakers: Mutex<Vec<Arc<mio::Waker>>>,
    /// Signalled (with `window`) when a frame leaves the engine or a slot is free: a receiver
    /// waiting for the window to move looks again.
    advanced: Condvar,
    /// Per frame, by the engine's frame number, when collecting outputs.
    outputs: Option<Mutex<Vec<FrameOutputs>>>,
    /// When the newest packet came (`now_ns`, at least 1); 0: no packet yet.
    last_packet_ns: AtomicU64,
    /// Receivers waiting, with a packet in hand, for the window to move or for a slot.
    holding: AtomicU32,
    /// The idle timeout in ns, with `frames = N`; `None`: the run waits for packets forever.
    idle_limit_ns: Option<u64>,
    /// How far reception got when the idle timeout stopped the run.
    idle: OnceLock<IdleStop>,
}

/// Where reception stood when no packet had come for the idle timeout (README.md, "The end").
#[derive(Clone, Copy, Debug)]
struct IdleStop {
    newest: Option<u64>,
    taken: u64,
    receiving: u64,
    /// The frames taken: complete, incomplete, dropped and failed.
    kinds: [u64; 4],
}

impl NetworkSource {
    /// Binds the sockets of `graph`'s `network_config` and makes the packet buffers, for a run
    /// configured by `config`; resolves the source kernels in `kernels`.
    /// The network source of `graph`, bound, when it has a `network_config` (see
    /// [`bind`](Self::bind)); `None` for a graph without one.
    pub fn for_graph(graph: &CompiledGraph, kernels: &KernelSet, config: &RunConfig) -> Result<Option<Self>, RunError> {
        if graph.network.is_none() {
            return Ok(None);
        }
        Self::bind(graph, kernels, config).map(Some)
    }

    pub fn bind(graph: &CompiledGraph, kernels: &KernelSet, config: &RunConfig) -> Result<Self, RunError> {
        let network = graph.network.clone().ok_or_else(|| {
            RunError::Config(format!("{}: the graph has no network_config; a network source needs one", graph.source))
        })?;
        if let Some(other) = graph.nodes.iter().find(|node| node.input && node.name != crate::graph::NETWORK_INPUT) {
            return Err(RunError::Config(format!(
                "{}: input {:?}: a graph with a network_config takes its inputs from packets only ($network)",
                graph.source, other.name
            )));
        }
        check_options(config)?;
        let options = config.network.clone();
        let resolve = |what: &str, name: &str| kernels.resolve(|| format!("network_config {what}"), name);
        let extract = network.extract_packet_func.as_deref().map(|f| resolve("extract_packet_func", f)).transpose()?;
        let id = network.id_function.as_deref().map(|f| resolve("id_function", f)).transpose()?;
        let index = match &network.index_function {
            Some((function, args)) => {
                Some((resolve("index_function", function)?, args.iter().map(|literal| literal.to_value()).collect()))
            }
            None => None,
        };
        let sockets = receive::bind(&network, options.socket_recv_buf_bytes).map_err(RunError::Config)?;
        let collect = options.dispatch == Dispatch::Frame;
        // A slot keeps its frame's packets until its next frame's overwrite them, and every packet
        // of that next frame may be on its way meanwhile (README.md, "Receiving"): two frames'
        // worth per slot. Collecting or waiting, frames in the window hold their packets too.
        let holds = collect || options.on_slots_busy == WhenBusy::Wait;
        let held_frames = 2 * u64::from(config.slots) + if holds { u64::from(options.frame_window) } else { 0 };
        let buffers = held_frames * u64::from(network.frame_packets)
            + u64::from(network.num_sockets) * u64::from(network.buffer_depth);
        let bytes = buffers.saturating_mul(u64::from(network.packet_length) + 1);
        let held = u64::from(options.frame_window).saturating_mul(u64::from(network.frame_packets));
        let buffers = u32::try_from(buffers).ok().filter(|_| bytes <= MAX_POOL_BYTES && held <= MAX_HELD).ok_or_else(|| {
            RunError::Config(format!(
                "{}: network_config: {buffers} packet buffers of {} bytes ((2 × slots{}) × frame_packets + \
                 num_sockets × buffer_depth: {bytes} bytes) or {held} packets held in the window (frame_window × \
                 frame_packets) are more than the {MAX_POOL_BYTES} bytes and {MAX_HELD} packets a network source may hold; lower \
                 buffer_depth, slots or frame_window",
                graph.source,
                network.packet_length + 1,
                if holds { " + frame_window" } else { "" },
            ))
        })?;
        let shape = Shape {
            frame_packets: network.frame_packets,
            capacity: options.frame_window,
            collect,
            wait: options.on_slots_busy == WhenBusy::Wait,
            timeout_ns: u64::try_from(options.frame_timeout.as_nanos()).unwrap_or(u64::MAX),
            frames: config.frames,
            slots: config.slots,
        };
        let shared = Shared {
            pool: PacketPool::new(buffers, network.packet_length as usize + 1),
            window: Mutex::new(Window::new(shape)),
            counts: Counts::default(),
            door: OnceLock::new(),
            epoch: Instant::now(),
            next_expiry_ns: AtomicU64::new(0),
            extract,
            id,
            index,
            node: CString::new(crate::graph::NETWORK_INPUT).unwrap_or_default(),
            first_error: Mutex::new(None),
            stop: AtomicBool::new(false),
            waiting: AtomicBool::new(false),
            wakers: Mutex::new(Vec::new()),
            advanced: Condvar::new(),
            outputs: config.collect_outputs.then(|| Mutex::new(Vec::new())),
            last_packet_ns: AtomicU64::new(0),
            holding: AtomicU32::new(0),
            idle_limit_ns: options
                .idle_timeout
                .filter(|_| config.frames > 0)
                .map(|limit| u64::try_from(limit.as_nanos()).unwrap_or(u64::MAX)),
            idle: OnceLock::new(),
            config: network,
            options,
        };
        Ok(NetworkSource {
            shared: Arc::new(shared),
            endpoints: Mutex::new(Some(sockets.endpoints)),
            receivers: Mutex::new(Vec::new()),
            ports: sockets.ports,
            recv_buffer: sockets.recv_buffer,
        })
    }

    /// The ports bound, in socket order (the system's choice where `start_port` is 0).
    pub fn ports(&self) -> &[u16] {
        &self.ports
    }

    /// Packets read from the sockets so far (kept or dropped).
    pub fn packets_received(&self) -> u64 {
        self.shared.counts.received.load(Ordering::Relaxed)
    }

    /// Where the source listens, as `udp 127.0.0.1:9000-9003`.
    pub fn describe(&self) -> String {
        let config = &self.shared.config;
        let first = receive::show(std::net::SocketAddr::new(config.address, self.ports[0]));
        let ports = match self.ports.as_slice() {
            [_] => first,
            [.., last] if self.ports.windows(2).all(|p| p[1] == p[0] + 1) => format!("{first}-{last}"),
            _ => format!("{first} and {} more ports", self.ports.len() - 1),
        };
        format!("{} {ports}", config.socket_type.name())
    }

    /// The outputs collected, one entry per frame in the engine's frame order (frames that did
    /// not complete have none).
    pub fn into_outputs(self) -> Vec<FrameOutputs> {
        self.take_outputs()
    }

    /// Stops the receivers, waking those blocked in their poll, and waits for them.
    fn stop_receivers(&self) {
        self.shared.stop.store(true, Ordering::Release);
        lock(&self.shared.wakers).iter().for_each(|waker| drop(waker.wake()));
        for receiver in std::mem::take(&mut *lock(&self.receivers)) {
            let _ = receiver.join();
        }
    }
}

impl Drop for NetworkSource {
    fn drop(&mut self) {
        self.stop_receivers();
    }
}

/// The options, checked against the run: one line each.
fn check_options(config: &RunConfig) -> Result<(), RunError> {
    config.check_ranges()?;
    let (options, slots) = (&config.network, config.slots);
    if options.frame_window < slots {
        return Err(RunError::Config(format!(
            "frame_window {} is smaller than slots {slots}: every slot could not hold a frame; raise frame_window",
            options.frame_window
        )));
    }
    Ok(())
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl FrameSource for NetworkSource {
    fn next_frame(&self) -> NextFrame {
        NextFrame::NotYet // frames open as packets arrive, through the door
    }

    fn capabilities(&self) -> Capabilities {
        // Each packet's value is delivered as it arrives; a frame whose packets stop coming is
        // abandoned (README.md, "Frames").
        Capabilities { gives_inputs: true, delivers_inputs: true }
    }

    fn wants_outputs(&self) -> bool {
        self.shared.outputs.is_some()
    }

    fn take_outputs(&self) -> Vec<FrameOutputs> {
        self.shared.outputs.as_ref().map(|o| std::mem::take(&mut *lock(o))).unwrap_or_default()
    }

    fn frame_done(&self, done: FrameDone) {
        let now = self.shared.now_ns();
        lock(&self.shared.window).frame_done(done.tag, done.completed && !done.abandoned, now);
        self.shared.advanced.notify_all();
        if let (Some(outputs), Some(frame)) = (&self.shared.outputs, done.outputs) {
            let mut outputs = lock(outputs);
            let at = done.frame as usize;
            if outputs.len() <= at {
                outputs.resize_with(at + 1, Vec::new);
            }
            outputs[at] = frame;
        }
    }

    fn attach(&self, door: &Arc<Door>) -> Result<(), RunError> {
        let _ = self.shared.door.set(Arc::clone(door));
        if self.shared.options.on_slots_busy == WhenBusy::Wait {
            // Frames waiting for a slot open as soon as one is free: the receivers are woken.
            let shared = Arc::downgrade(&self.shared);
            door.on_slot_free(Box::new(move || {
                if let Some(shared) = shared.upgrade()
                    && shared.waiting.load(Ordering::Acquire)
                {
                    lock(&shared.wakers).iter().for_each(|waker| drop(waker.wake()));
                    shared.advanced.notify_all();
                }
            }));
        }
        let endpoints = lock(&self.endpoints).take().unwrap_or_default();
        let threads = (self.shared.options.receiver_threads as usize).min(endpoints.len()).max(1);
        let mut shares: Vec<Vec<Endpoint>> = (0..threads).map(|_| Vec::new()).collect();
        for (k, endpoint) in endpoints.into_iter().enumerate() {
            shares[k % threads].push(endpoint);
        }
        let mut receivers = lock(&self.receivers);
        for (k, share) in shares.into_iter().enumerate() {
            let shared = Arc::clone(&self.shared);
            let spawned = std::thread::Builder::new().name(format!("tomii-receive-{k}")).spawn(move || {
                // A receiver that stops (a socket error, or a panic: a bug) ends the run's frames,
                // so the run never waits for packets nobody reads; the report says why.
                let received =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| receive::receive(&*shared, share)));
                let why = match received {
                    Ok(Ok(())) => return,
                    Ok(Err(error)) => format!("a receiver stopped: {error}"),
                    Err(payload) => format!("a receiver panicked: {}", tomii_types::panic_message(&*payload)),
                };
                shared.record_error(why);
                shared.end();
            });
            match spawned {
                Ok(handle) => receivers.push(handle),
                Err(error) => {
                    self.shared.end();
                    return Err(RunError::Internal(format!("cannot start a receiver thread: {error}")));
                }
            }
        }
        Ok(())
    }

    fn kind(&self) -> &'static str {
        "network"
    }

    fn planned(&self) -> Option<u64> {
        let frames = lock(&self.shared.window).planned();
        (frames > 0).then_some(frames)
    }

    fn finish(&self) -> Option<serde_json::Value> {
        self.stop_receivers();
        Some(self.report())
    }

    fn failure(&self) -> Option<RunError> {
        let IdleStop { newest, taken, receiving, kinds } = *self.shared.idle.get()?;
        let idle_ms = self.shared.options.idle_timeout.unwrap_or_default().as_millis();
        let frames = lock(&self.shared.window).planned();
        let taken_as: Vec<String> = ["complete", "incomplete", "dropped", "failed"]
            .iter()
            .zip(kinds)
            .filter(|&(_, count)| count > 0)
            .map(|(kind, count)| format!("{count} {kind}"))
            .collect();
        Some(RunError::NetworkIdle { idle_ms, newest, taken, taken_as: taken_as.join(", "), frames, receiving })
    }
}

impl NetworkSource {
    /// The report's `network` section.
    fn report(&self) -> serde_json::Value {
        let (shared, counts) = (&self.shared, &self.shared.counts);
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let dropped: serde_json::Map<String, serde_json::Value> =
            Cause::ALL.iter().map(|&cause| (cause.name().to_owned(), counts.dropped(cause).into())).collect();
        let window = lock(&shared.window);
        let options = &shared.options;
        json!({
            "socket_type": shared.config.socket_type.name(),
            "address": shared.config.address.to_string(),
            "ports": self.ports,
            "receiver_threads": options.receiver_threads.min(self.ports.len() as u32),
            "recv_buffer_bytes": self.recv_buffer,
            "dispatch": options.dispatch.word(),
            "on_slots_busy": options.on_slots_busy.word(),
            "frame_timeout_ms": options.frame_timeout.as_millis() as u64,
            "frame_window": options.frame_window,
            "idle_timeout_ms": options.idle_timeout.map_or(0, |limit| limit.as_millis() as u64),
            "packet_length": shared.config.packet_length,
            "frame_packets": shared.config.frame_packets,
            "packet_buffers": shared.pool.capacity(),
            "packets_received": load(&counts.received),
            "packets_accepted": load(&counts.accepted),
            "packets_dropped": dropped,
            "frames_complete": load(&counts.complete),
            "frames_incomplete": load(&counts.incomplete),
            "frames_dropped": load(&counts.dropped_frames),
            "frames_failed": load(&counts.failed),
            "frames_stray": load(&counts.stray),
            "packets_missing": load(&counts.missing),
            "connections": load(&counts.connections),
            "first_source_error": *lock(&shared.first_error),
            "latency_from_first_packet_us": crate::engine::latency_summary(&window.latency),
        })
    }
}

impl Shared {
    fn now_ns(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// A packet came (kept or not): the source is not idle. Returns the time.
    fn heard(&self) -> u64 {
        let now = self.now_ns().max(1);
        self.last_packet_ns.store(now, Ordering::Relaxed);
        now
    }

    /// Stops the run once no packet came for the idle timeout, after a first one, while frames are
    /// still expected (README.md, "The end"): where reception stood is kept for the run's
    /// failure, then the door ends as a stop ends it. Before the first packet, while a receiver
    /// holds one, or once every frame was taken, it waits.
    fn watch_idle(&self, door: &Door, now: u64) {
        let Some(limit) = self.idle_limit_ns else { return };
        if self.holding.load(Ordering::Acquire) > 0 {
            return;
        }
        let last = self.last_packet_ns.load(Ordering::Relaxed);
        if last == 0 || now.saturating_sub(last) < limit || door.is_ended() {
            return;
        }
        let window = lock(&self.window);
        if window.taken() >= window.planned() || door.is_ended() {
            return;
        }
        let counts = &self.counts;
        let kinds = [&counts.complete, &counts.incomplete, &counts.dropped_frames, &counts.failed]
            .map(|count| count.load(Ordering::Relaxed));
        let stop = IdleStop { newest: window.newest(), taken: window.taken(), receiving: window.open_frames(), kinds };
        drop(window);
        if self.idle.set(stop).is_ok() {
            self.end();
        }
    }

    fn door(&self) -> Option<&Arc<Door>> {
        self.door.get()
    }

    /// Ends the run's frames: the door takes no new frame.
    fn end(&self) {
        if let Some(door) = self.door() {
            door.end();
        }
    }

    fn record_error(&self, message: String) {
        let mut first = lock(&self.first_error);
        if first.is_none() {
            *first = Some(message);
        }
    }

    /// Calls a source kernel on `args`; its error message on failure.
    fn call(&self, local: &mut Local, kernel: Kernel, args: &[TomiiValue]) -> Result<Value, String> {
        local.kernels.call_from(kernel, args, &self.node, 0, 0)
    }

    /// A source kernel's result as a frame id or index.
    fn number(&self, what: &str, value: &Value) -> Result<u64, String> {
        match value.view() {
            ValueRef::UInt(n) => Ok(n),
            ValueRef::Int(n) if n >= 0 => Ok(n as u64),
            other => Err(format!("{what} returned {other:?}, not a non-negative integer")),
        }
    }

    /// A source kernel failed on a packet.
    #[cold]
    fn source_error(&self, what: &str, message: String, frame: Option<u64>) {
        self.record_error(format!("network_config {what}: {message}"));
        match (frame, self.door()) {
            (Some(id), Some(door)) => lock(&self.window).fail(&**door, &self.counts, id, self.now_ns()),
            _ => self.counts.drop_packet(Cause::SourceError),
        }
    }

    /// Decodes a packet held in `value` (with the header read from its bytes), which came at
    /// `now_ns`, and offers it.
    fn decode(&self, local: &mut Local, value: Value, header: Option<(u64, u32)>, now_ns: u64) {
        let value = match self.extract {
            Some(kernel) => match self.call(local, kernel, &[*value.as_raw()]) {
                Ok(decoded) => decoded,
                Err(message) => return self.source_error("extract_packet_func", message, None),
            },
            None => value,
        };
        let id = match self.id {
            Some(kernel) => {
                match self.call(local, kernel, &[*value.as_raw()]).and_then(|v| self.number("id_function", &v)) {
                    Ok(id) => id,
                    Err(message) => return self.source_error("id_function", message, None),
                }
            }
            None => header.map_or(0, |(id, _)| id),
        };
        let index = match &self.index {
            Some((kernel, extra)) => {
                let mut args = Vec::with_capacity(1 + extra.len());
                args.push(*value.as_raw());
                args.extend(extra.iter().map(|arg| *arg.as_raw()));
                match self.call(local, *kernel, &args).and_then(|v| self.number("index_function", &v)) {
                    Ok(index) => u32::try_from(index).unwrap_or(u32::MAX),
                    Err(message) => return self.source_error("index_function", message, Some(id)),
                }
            }
            None => header.map_or(0, |(_, index)| index),
        };
        self.offer(id, index, value, now_ns);
    }

    /// Gives a decoded packet, which came at `now_ns`, to its frame.
    fn offer(&self, id: u64, index: u32, value: Value, now_ns: u64) {
        let Some(door) = self.door() else { return };
        let mut window = lock(&self.window);
        let mut verdict = window.packet(&**door, &self.counts, id, index, value, now_ns);
        let mut holding = None;
        while let Verdict::Full { value } = verdict {
            holding.get_or_insert_with(|| Holding::new(self));
            // The window is full: its oldest frame waits for a slot with its packets, and leaves
            // it when a slot frees for it (open_waiting, as the engine completes a frame) or at
            // its deadline (expire, here and in the other receivers). This receiver waits
            // meanwhile.
            window.open_waiting(&**door, &self.counts);
            window.expire(&**door, &self.counts, self.now_ns());
            window = self.advanced.wait_timeout(window, WAIT_AT_MOST).unwrap_or_else(|p| p.into_inner()).0;
            if door.is_ended() || self.stop.load(Ordering::Acquire) {
                return;
            }
            verdict = window.packet(&**door, &self.counts, id, index, value, self.now_ns());
        }
        self.waiting.store(window.has_waiting(), Ordering::Release);
        drop(window);
        drop(holding);
        match verdict {
            Verdict::Deliver { frame, value } => door.deliver(frame, index, value),
            Verdict::Submit { tag, inputs, last } => {
                // Collecting, no frame in the engine waits for a packet: a receiver may block here.
                let wait = (self.options.on_slots_busy == WhenBusy::Drop).then_some(Duration::ZERO);
                let holding = Holding::new(self);
                let submitted = door.submit(tag, inputs, wait);
                drop(holding);
                if let Err(why) = submitted {
                    lock(&self.window).refused(&self.counts, tag, why);
                }
                if last {
                    door.end();
                }
            }
            Verdict::Held | Verdict::Dropped | Verdict::Ignored | Verdict::Full { .. } => {}
        }
    }
}

impl Sink for Shared {
    fn buffer(&self) -> Option<u32> {
        self.pool.take()
    }

    unsafe fn bytes(&self, index: u32) -> &mut [u8] {
        // SAFETY: the caller's guarantee is the pool's.
        unsafe { self.pool.buffer(index) }
    }

    fn give_back(&self, index: u32) {
        self.pool.give_back(index);
    }

    fn packet(&self, local: &mut Local, index: u32, len: usize) {
        let now = self.heard();
        self.counts.received.fetch_add(1, Ordering::Relaxed);
        if len != self.config.packet_length as usize {
            self.pool.give_back(index);
            return self.counts.drop_packet(Cause::WrongLength);
        }
        // SAFETY: the receiver handed buffer `index` over, with `len` bytes written.
        let header =
            if self.config.reads_header() { read_header(unsafe { &self.pool.buffer(index)[..len] }) } else { None };
        // SAFETY: as above; the value owns the buffer from now on.
        let value = unsafe { self.pool.into_value(index, len) };
        self.decode(local, value, header, now);
    }

    fn lost(&self, why: Cause) {
        self.heard();
        self.counts.received.fetch_add(1, Ordering::Relaxed);
        self.counts.drop_packet(why);
    }

    fn connected(&self) {
        self.counts.connections.fetch_add(1, Ordering::Relaxed);
    }

    fn tick(&self) -> bool {
        let Some(door) = self.door() else { return true };
        let now = self.now_ns();
        self.watch_idle(door, now);
        let ended = door.is_ended();
        if self.waiting.load(Ordering::Acquire) {
            self.slot_freed();
        }
        if ended || now >= self.next_expiry_ns.load(Ordering::Relaxed) {
            self.next_expiry_ns.store(now + EXPIRE_EVERY_NS, Ordering::Relaxed);
            let mut window = lock(&self.window);
            // Once the run ends, frames still receiving will get no more packets: give up on them.
            window.expire(&**door, &self.counts, if ended { u64::MAX } else { now });
            if ended && window.open_frames() == 0 {
                return true;
            }
        }
        self.stop.load(Ordering::Acquire)
    }

    fn longest_wait(&self) -> Option<Duration> {
        if self.waiting.load(Ordering::Acquire) || lock(&self.window).has_deadlines() {
            return Some(POLL_EVERY);
        }
        // Nothing expires but the idle timeout, from the newest packet on; before the first one,
        // or once the run ended, nothing does.
        let limit = self.idle_limit_ns?;
        let last = self.last_packet_ns.load(Ordering::Relaxed);
        if last == 0 || self.door().is_none_or(|door| door.is_ended()) {
            return None;
        }
        let left = (last.saturating_add(limit)).saturating_sub(self.now_ns());
        Some(Duration::from_nanos(left).max(POLL_EVERY))
    }

    fn packet_length(&self) -> usize {
        self.config.packet_length as usize
    }

    fn waker(&self, waker: Arc<mio::Waker>) {
        lock(&self.wakers).push(waker);
    }

    fn slot_freed(&self) {
        let Some(door) = self.door() else { return };
        let mut window = lock(&self.window);
        window.open_waiting(&**door, &self.counts);
        self.waiting.store(window.has_waiting(), Ordering::Release);
    }
}

/// A receiver waiting, with a packet in hand, for the window to move or for a slot: the source is
/// not idle meanwhile, and its idle time counts from the end of the wait (README.md, "The end").
struct Holding<'a>(&'a Shared);

impl<'a> Holding<'a> {
    fn new(shared: &'a Shared) -> Self {
        shared.holding.fetch_add(1, Ordering::Relaxed);
        Holding(shared)
    }
}

impl Drop for Holding<'_> {
    fn drop(&mut self) {
        self.0.heard();
        self.0.holding.fetch_sub(1, Ordering::Release);
    }
}
