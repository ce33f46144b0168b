//! The network source on loopback, with ports the system chooses: UDP and TCP frames end to end
//! (sink checksums equal to the reference computed from the packets), packet-driven overlap seen
//! in the trace (a frame's first task runs before its last packet arrived; collecting, none
//! does), every drop counted by its cause under an induced overload, a frame missing a packet
//! abandoned at its deadline, and a port in use refused with one line.
//!
//! Needs `cargo build --workspace` first (plugins).

mod common;

use std::io::Write;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use common::checksum::{expected, fnv1a};
use common::{plugin, synthetic_lib, within_timeout};
use tomii_core::engine::{
    self, FrameSource, Output, Progress, ProgressFn, RunConfig, RunError, RunFailure, RunOutcome,
};
use tomii_core::graph::{self, CompiledGraph};
use tomii_core::network::send::{self, Destination, Packets, SocketType};
use tomii_core::network::{Dispatch, NetworkOptions, NetworkSource, WhenBusy};
use tomii_core::plugin::{KernelSet, SchedulerPlugin};

const TIMEOUT: Duration = Duration::from_secs(60);
const PACKET: usize = 64;
const PACKETS: u32 = 4;

/// `fft` instance i reads packet i of its frame; `sum` reads every `fft`. `spin` microseconds of
/// work in `fft` (0: none).
fn graph(socket_type: &str, spin_us: u64) -> CompiledGraph {
    graph_on(socket_type, 1, spin_us)
}

/// `graph` on `sockets` sockets.
fn graph_on(socket_type: &str, sockets: u32, spin_us: u64) -> CompiledGraph {
    let text = format!(
        r#"{{
  "name": "net",
  "network_config": {{"socket_type": "{socket_type}", "address": "127.0.0.1", "start_port": 0,
                      "num_sockets": {sockets}, "packet_length": {PACKET}, "frame_packets": {PACKETS}}},
  "nodes": [
    {{"name": "fft", "function": "checksum", "factor": {PACKETS},
     "args": [{{"type": "$res", "predecessor": {{"name": "$network"}}}}]}},
    {{"name": "wait", "function": "spin", "factor": {PACKETS},
     "args": [{spin_us}, {{"type": "$res", "predecessor": {{"name": "fft"}}}}]}},
    {{"name": "sum", "function": "checksum",
     "args": [{{"type": "$res", "predecessor": {{"name": "fft", "index": "all"}}}},
              {{"type": "$dep", "predecessor": {{"name": "wait", "index": "all"}}}}]}}
  ]
}}"#
    );
    graph::parse_str("net.json", &text).unwrap_or_else(|e| panic!("{e}"))
}

/// Packet `index` of frame `frame`, as `tomii send` generates it.
fn packet(frame: u64, index: u32) -> Vec<u8> {
    let mut bytes = vec![0u8; PACKET];
    send::write_packet(&mut bytes, frame, index);
    bytes
}

/// The sink of frame number `number`, made of the packets of frame id `id`.
fn reference(number: u64, id: u64) -> u64 {
    let ffts: Vec<u64> = (0..PACKETS).map(|i| expected("fft", i, number, &[fnv1a(&packet(id, i))])).collect();
    // `$dep` arguments are not passed to the kernel.
    expected("sum", 0, number, &ffts)
}

struct Run {
    graph: CompiledGraph,
    kernels: KernelSet,
    scheduler: SchedulerPlugin,
    config: RunConfig,
}

impl Run {
    fn new(graph: CompiledGraph, scheduler: &str, config: RunConfig) -> Self {
        let kernels = KernelSet::load(&[synthetic_lib()]).unwrap_or_else(|e| panic!("{e}"));
        let file = format!("libtomii_sched_{}.so", scheduler.replace('-', "_"));
        let scheduler = SchedulerPlugin::load(&plugin(&file)).unwrap_or_else(|e| panic!("{e}"));
        Run { graph, kernels, scheduler, config }
    }

    /// Binds, then runs while `send` sends to the bound ports; the outcome has the frames'
    /// outputs, by frame number.
    fn go(self, send: impl FnOnce(&NetworkSource, SocketAddr) + Send) -> Result<RunOutcome, RunError> {
        self.go_keeping_partial(send).map_err(|failure| failure.error)
    }

    /// [`go`](Self::go), which on failure keeps what ran.
    fn go_keeping_partial(
        self,
        send: impl FnOnce(&NetworkSource, SocketAddr) + Send,
    ) -> Result<RunOutcome, RunFailure> {
        let source = NetworkSource::bind(&self.graph, &self.kernels, &self.config).unwrap_or_else(|e| panic!("{e}"));
        let to = SocketAddr::from(([127, 0, 0, 1], source.ports()[0]));
        let result = std::thread::scope(|scope| {
            scope.spawn(|| send(&source, to));
            engine::run_with_keeping_partial(&self.graph, &self.kernels, &self.scheduler, &self.config, &source)
        });
        // What a stuck call's handed outcome gets too (`FrameSource::take_outputs`).
        let outputs = source.take_outputs();
        match result {
            Ok(mut outcome) => {
                outcome.outputs = outputs;
                Ok(outcome)
            }
            Err(mut failure) => {
                if let Some(partial) = &mut failure.partial {
                    partial.outputs = outputs;
                }
                Err(failure)
            }
        }
    }
}

fn config(slots: u32, frames: u64) -> RunConfig {
    RunConfig { workers: 2, slots, frames, collect_outputs: true, trace: true, ..RunConfig::default() }
}

/// `config`, with receivers that wait for a free slot instead of dropping a frame.
fn waiting(slots: u32, frames: u64) -> RunConfig {
    let network = NetworkOptions { on_slots_busy: WhenBusy::Wait, ..NetworkOptions::default() };
    RunConfig { network, ..config(slots, frames) }
}

fn sink(outputs: &[(u32, u32, Output)]) -> u64 {
    match outputs.last() {
        Some((_, 0, Output::UInt(value))) => *value,
        other => panic!("expected the sink value last, got {other:?}"),
    }
}

fn udp_sender() -> UdpSocket {
    UdpSocket::bind("127.0.0.1:0").unwrap()
}

/// Waits until the source has read `count` packets. The run starts after the sender, possibly
/// late on a loaded machine: a pause meant to separate packets counts from here, not from the
/// send, and a sender that waits here never overruns the socket's buffer.
fn wait_received(source: &NetworkSource, count: u64) {
    while source.packets_received() < count {
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn udp_frames_end_to_end_match_the_reference_with_three_schedulers() {
    for scheduler in ["fifo", "priority", "work-stealing"] {
        within_timeout(TIMEOUT, scheduler, move || {
            let frames = 40;
            let outcome = Run::new(graph("udp", 0), scheduler, waiting(4, frames)).go(|_, to| {
                // The traffic generator, paced to stay well within the socket buffer.
                let destination = Destination::new(SocketType::Udp, to.ip(), to.port(), 1).unwrap();
                let packets =
                    Packets::Generated { packet_length: PACKET, frame_packets: PACKETS, frames, first_frame: 0 };
                let sent = send::send(&destination, &packets, Some(20_000.0), None).unwrap();
                assert_eq!(sent.packets, frames * u64::from(PACKETS));
            });
            let outcome = outcome.unwrap_or_else(|e| panic!("{scheduler}: {e}"));
            let shown = serde_json::to_string(&outcome.report.source_section).unwrap();
            assert_eq!(
                outcome.report.frames, frames,
                "{scheduler}: {shown} abandoned {}",
                outcome.report.frames_abandoned
            );
            assert_eq!(outcome.outputs.len() as u64, frames);
            for (number, outputs) in outcome.outputs.iter().enumerate() {
                // One socket, one receiver: frames open in the order their packets came.
                assert_eq!(sink(outputs), reference(number as u64, number as u64), "{scheduler}: frame {number}");
            }
            let network = &outcome.report.source_section["network"];
            assert_eq!(network["packets_accepted"], frames * u64::from(PACKETS));
            assert_eq!(network["frames_complete"], frames);
            assert_eq!(outcome.report.source, "network");
            common::report_schema::check(scheduler, &outcome.report);
        });
    }
}

/// Frames whose packets alternate between two sockets, read by one receiver: when every slot is
/// busy, a frame waits holding its packets while the receiver goes on reading the packets of the
/// frames in flight (a receiver that blocked would wait for itself).
#[test]
fn frames_spread_over_two_sockets_wait_for_slots_without_blocking_their_receiver() {
    within_timeout(TIMEOUT, "two sockets", || {
        let frames = 200;
        let run = Run::new(graph_on("udp", 2, 50), "fifo", waiting(2, frames));
        let outcome = run.go(|source, to| {
            // The system chose each port: packet i goes to socket i % 2, as `tomii send` sends.
            let ports: Vec<SocketAddr> = source.ports().iter().map(|&port| SocketAddr::new(to.ip(), port)).collect();
            let socket = udp_sender();
            for frame in 0..frames {
                for index in 0..PACKETS {
                    socket.send_to(&packet(frame, index), ports[index as usize % 2]).unwrap();
                }
                if frame % 16 == 15 {
                    // Within the socket buffers: at most 16 frames ahead of what the receiver read.
                    wait_received(source, (frame - 15) * u64::from(PACKETS));
                }
            }
        });
        let outcome = outcome.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(outcome.report.frames, frames);
        let network = &outcome.report.source_section["network"];
        assert_eq!(network["packets_accepted"], frames * u64::from(PACKETS), "{network}");
        assert_eq!(network["receiver_threads"], 1);
    });
}

#[test]
fn tcp_frames_end_to_end_match_the_reference_across_reconnects() {
    within_timeout(TIMEOUT, "tcp", || {
        let frames = 12;
        let outcome = Run::new(graph("tcp", 0), "fifo", waiting(2, frames)).go(|_, to| {
            // Each connection sends a third of the frames, then closes: the source accepts the next.
            for part in 0..3 {
                let mut stream = TcpStream::connect(to).unwrap();
                for frame in part * 4..part * 4 + 4 {
                    for index in 0..PACKETS {
                        stream.write_all(&(PACKET as u32).to_le_bytes()).unwrap();
                        stream.write_all(&packet(frame, index)).unwrap();
                    }
                }
                stream.flush().unwrap();
            }
        });
        let outcome = outcome.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(outcome.report.frames, frames);
        for (number, outputs) in outcome.outputs.iter().enumerate() {
            assert_eq!(sink(outputs), reference(number as u64, number as u64), "frame {number}");
        }
        assert_eq!(outcome.report.source_section["network"]["connections"], 3);
    });
}

/// Small packets over two TCP connections, written in turn as `tomii send` writes them, faster
/// than the run takes them: the receiver takes a few packets of each connection in turn, so the
/// packets of a frame stay within the window and every frame is assembled.
#[test]
fn tcp_frames_over_two_connections_stay_within_the_window() {
    within_timeout(TIMEOUT, "tcp two connections", || {
        let frames = 2000;
        let outcome = Run::new(graph_on("tcp", 2, 0), "fifo", waiting(4, frames)).go(|source, to| {
            let mut streams: Vec<TcpStream> = source
                .ports()
                .iter()
                .map(|&port| TcpStream::connect(SocketAddr::new(to.ip(), port)).unwrap())
                .collect();
            for frame in 0..frames {
                for index in 0..PACKETS {
                    let stream = &mut streams[index as usize % 2];
                    stream.write_all(&(PACKET as u32).to_le_bytes()).unwrap();
                    stream.write_all(&packet(frame, index)).unwrap();
                }
            }
        });
        let outcome = outcome.unwrap_or_else(|e| panic!("the run failed: {e}"));
        let network = &outcome.report.source_section["network"];
        assert_eq!(outcome.report.frames, frames, "{network}");
        assert_eq!(network["packets_accepted"], frames * u64::from(PACKETS), "{network}");
    });
}

/// Sends frame 0 with a pause of `gap` before its last packet; returns the trace's (ready, start)
/// of `fft` 0 and the ready time of `fft` of the last packet.
fn paced_first_frame(dispatch: Dispatch) -> (u64, u64) {
    let config = RunConfig { network: NetworkOptions { dispatch, ..NetworkOptions::default() }, ..config(1, 1) };
    let outcome = Run::new(graph("udp", 0), "fifo", config).go(|source, to| {
        let socket = udp_sender();
        for index in 0..PACKETS {
            if index == PACKETS - 1 {
                wait_received(source, u64::from(PACKETS - 1));
                std::thread::sleep(Duration::from_millis(100));
            }
            socket.send_to(&packet(0, index), to).unwrap();
        }
    });
    let outcome = outcome.unwrap_or_else(|e| panic!("{e}"));
    let fft = outcome.report.per_node.iter().find(|n| n.name == "fft").unwrap().node;
    assert!(!outcome.trace.is_empty(), "no trace: {}", serde_json::to_string(&outcome.report).unwrap());
    let record = |instance| outcome.trace.iter().find(|r| r.node == fft && r.instance == instance).copied().unwrap();
    let (first, last) = (record(0), record(PACKETS - 1));
    (outcome.ns(first.start), outcome.ns(last.ready))
}

#[test]
fn a_frames_first_task_runs_before_its_last_packet_arrives_unless_collecting() {
    within_timeout(TIMEOUT, "overlap", || {
        let (first_start, last_ready) = paced_first_frame(Dispatch::Packet);
        assert!(
            first_start < last_ready,
            "packet-driven: fft[0] started at {first_start} ns, the last packet came at {last_ready} ns"
        );
        let (first_start, last_ready) = paced_first_frame(Dispatch::Frame);
        assert!(
            first_start >= last_ready,
            "collecting: fft[0] started at {first_start} ns, before the last packet ({last_ready} ns)"
        );
    });
}

#[test]
fn every_drop_is_counted_by_its_cause_under_overload() {
    within_timeout(TIMEOUT, "overload", || {
        // One slot, and frame 0 keeps it for 300 ms: frames 1..=5 find it busy.
        let stop = Arc::new(AtomicBool::new(false));
        let config = RunConfig { stop: Some(Arc::clone(&stop)), ..config(1, 0) };
        let sent = 4 + 4 + 5 * 4;
        let outcome = Run::new(graph("udp", 300_000), "fifo", config).go(|source, to| {
            let socket = udp_sender();
            for index in 0..PACKETS {
                socket.send_to(&packet(0, index), to).unwrap();
            }
            socket.send_to(&packet(0, 1), to).unwrap(); // duplicate
            socket.send_to(&packet(0, 1)[..PACKET - 1], to).unwrap(); // wrong length
            let mut bad = packet(0, 9); // index beyond frame_packets
            bad[8] = 9;
            socket.send_to(&bad, to).unwrap();
            socket.send_to(&packet(1000, 0), to).unwrap(); // far ahead of frame 0, which is in flight
            for frame in 1..=5 {
                for index in 0..PACKETS {
                    socket.send_to(&packet(frame, index), to).unwrap();
                }
            }
            wait_received(source, sent);
            stop.store(true, Ordering::Relaxed);
        });
        let outcome = outcome.unwrap_or_else(|e| panic!("{e}"));
        let network = &outcome.report.source_section["network"];
        let dropped = &network["packets_dropped"];
        assert_eq!(network["packets_received"], sent);
        assert_eq!(dropped["duplicate"], 1);
        assert_eq!(dropped["wrong_length"], 1);
        assert_eq!(dropped["bad_index"], 1);
        assert_eq!(dropped["outside_window"], 1);
        assert_eq!(dropped["slots_busy"], 5 * 4);
        assert_eq!(network["frames_dropped"], 5);
        assert_eq!(network["packets_accepted"], 4);
        assert_eq!(outcome.report.frames, 1);
        assert!(outcome.report.interrupted);
    });
}

#[test]
fn a_frame_missing_a_packet_is_abandoned_at_its_deadline_and_the_next_one_runs() {
    within_timeout(TIMEOUT, "timeout", || {
        // Long enough that frame 1's packets, sent together, arrive within it even if the sender
        // loses the processor between two of them.
        let network = NetworkOptions { frame_timeout: Duration::from_millis(500), ..NetworkOptions::default() };
        let config = RunConfig { network, ..config(1, 2) };
        let outcome = Run::new(graph("udp", 0), "fifo", config).go(|source, to| {
            let socket = udp_sender();
            for index in 0..PACKETS - 1 {
                socket.send_to(&packet(0, index), to).unwrap();
            }
            // Frame 1 comes well after frame 0's deadline, counted from when frame 0 was read.
            wait_received(source, u64::from(PACKETS - 1));
            std::thread::sleep(Duration::from_millis(1000));
            for index in 0..PACKETS {
                socket.send_to(&packet(1, index), to).unwrap();
            }
        });
        let outcome = outcome.unwrap_or_else(|e| panic!("{e}"));
        let network = &outcome.report.source_section["network"];
        assert_eq!(network["frames_incomplete"], 1, "{network}");
        assert_eq!(network["frames_complete"], 1, "{network}");
        assert_eq!(outcome.report.frames, 1);
        assert_eq!(outcome.report.frames_abandoned, 1);
        // Frame 0 ran none of its tasks after it was abandoned: its sink never ran the kernel.
        assert!(outcome.outputs[0].iter().all(|(_, _, value)| *value == Output::None), "{:?}", outcome.outputs[0]);
        assert_eq!(sink(&outcome.outputs[1]), reference(1, 1));
    });
}

/// Sends packets `0..count` of frame `frame` as fast as the receiver reads them, never more than
/// `ahead` packets beyond what it has read (so the socket's buffer never overflows).
fn send_burst(source: &NetworkSource, to: SocketAddr, frame: u64, count: u32, ahead: u64) {
    let socket = udp_sender();
    let before = source.packets_received();
    for index in 0..count {
        if u64::from(index) >= ahead {
            wait_received(source, before + u64::from(index) - ahead);
        }
        socket.send_to(&packet(frame, index), to).unwrap();
    }
}

/// Frames of `packets` packets over UDP: each is read by its instance of `fast` (a checksum), and
/// the first one also by `slow`, which spins for `spin_us` microseconds.
fn slow_graph(packets: u32, spin_us: u64) -> CompiledGraph {
    let text = format!(
        r#"{{"network_config": {{"start_port": 0, "packet_length": {PACKET}, "frame_packets": {packets}}},
            "nodes": [{{"name": "fast", "function": "checksum", "factor": {packets},
                       "args": [{{"type": "$res", "predecessor": {{"name": "$network"}}}}]}},
                      {{"name": "slow", "function": "spin",
                       "args": [{spin_us}, {{"type": "$res", "predecessor": {{"name": "$network", "index": 0}}}}]}}]}}"#
    );
    graph::parse_str("slow.json", &text).unwrap_or_else(|e| panic!("{e}"))
}

/// A frame far larger than `buffer_depth` (128), sent in one burst into the slot its previous
/// frame still holds (its packets stay there until the new ones overwrite them), while the one
/// worker spins in the task of its first packet and serves the door only after it: every packet
/// gets a buffer all the same.
#[test]
fn a_burst_of_a_whole_frame_gets_a_buffer_for_every_packet() {
    within_timeout(TIMEOUT, "burst", || {
        let packets = 256;
        let done = Arc::new(AtomicU64::new(0));
        let frames_done = Arc::clone(&done);
        let progress = ProgressFn(Arc::new(move |p: Progress| frames_done.store(p.frames_done, Ordering::Relaxed)));
        let config = RunConfig { workers: 1, progress: Some(progress), ..config(1, 2) };
        let run = Run::new(slow_graph(packets, 200_000), "fifo", config);
        let outcome = run.go(|source, to| {
            send_burst(source, to, 0, packets, 64);
            // Frame 1 opens in the slot frame 0 leaves, once it completed.
            while done.load(Ordering::Relaxed) < 1 {
                std::thread::sleep(Duration::from_millis(5));
            }
            std::thread::sleep(Duration::from_millis(50));
            send_burst(source, to, 1, packets, 64);
        });
        let outcome = outcome.unwrap_or_else(|e| panic!("{e}"));
        let network = &outcome.report.source_section["network"];
        assert_eq!(network["packets_dropped"]["no_buffer"], 0, "{network}");
        assert_eq!(network["packets_accepted"], 2 * packets, "{network}");
        assert_eq!(outcome.report.frames, 2, "{network}");
        // Two frames of packets per slot, and buffer_depth per socket (README.md, "Receiving").
        assert_eq!(network["packet_buffers"], 2 * packets + 128);
    });
}

/// `waiting` with the network idle timeout `idle`.
fn idling(slots: u32, frames: u64, idle: Duration) -> RunConfig {
    let config = waiting(slots, frames);
    RunConfig { network: NetworkOptions { idle_timeout: Some(idle), ..config.network.clone() }, ..config }
}

/// Sends frames `0..whole` with every packet, then `part` packets of frame `whole`.
fn send_frames(to: SocketAddr, whole: u64, part: u32) {
    let socket = udp_sender();
    for frame in 0..whole {
        for index in 0..PACKETS {
            socket.send_to(&packet(frame, index), to).unwrap();
        }
    }
    for index in 0..part {
        socket.send_to(&packet(whole, index), to).unwrap();
    }
}

/// Frames 0..=2 whole and half of frame 3, of the 10 asked for, then nothing: the run stops once
/// no packet came for the idle timeout, the open frame abandoned, and fails saying how far it got.
#[test]
fn a_sender_that_stops_early_fails_the_run_at_the_idle_timeout_saying_how_far_it_got() {
    within_timeout(TIMEOUT, "stopped sender", || {
        // The frame timeout (1 s) is longer: frame 3 is still receiving when the run stops.
        let run = Run::new(graph("udp", 0), "fifo", idling(4, 10, Duration::from_millis(300)));
        let failure = run.go_keeping_partial(|_, to| send_frames(to, 3, PACKETS / 2)).expect_err("the run succeeded");
        let RunError::NetworkIdle { idle_ms, newest, taken, frames, receiving, .. } = failure.error else {
            panic!("another failure: {}", failure.error)
        };
        assert_eq!((idle_ms, newest, taken, frames, receiving), (300, Some(3), 3, 10, 1));
        let message = failure.error.to_string();
        assert!(
            message.contains(
                "no packet for 300 ms after frame 3: 3 of 10 frames taken (3 complete), 1 still receiving abandoned"
            ),
            "{message}"
        );
        assert!(message.contains("--network-idle-timeout-ms"), "{message}");
        let partial = failure.partial.expect("what ran");
        assert_eq!(partial.report.status, "failed");
        assert_eq!(partial.report.error.as_deref(), Some(message.as_str()));
        assert_eq!((partial.report.frames, partial.report.frames_abandoned), (3, 1));
        for number in 0..3 {
            assert_eq!(sink(&partial.outputs[number]), reference(number as u64, number as u64), "frame {number}");
        }
        let network = &partial.report.source_section["network"];
        assert_eq!((network["frames_complete"].as_u64(), network["frames_incomplete"].as_u64()), (Some(3), Some(1)));
        assert_eq!(network["idle_timeout_ms"], 300);
    });
}

/// A sender that starts after the run is not idle: the idle timeout counts from the first packet.
#[test]
fn before_its_first_packet_the_source_waits_beyond_the_idle_timeout() {
    within_timeout(TIMEOUT, "late sender", || {
        let run = Run::new(graph("udp", 0), "fifo", idling(2, 2, Duration::from_millis(200)));
        let outcome = run.go(|_, to| {
            std::thread::sleep(Duration::from_millis(700));
            send_frames(to, 2, 0);
        });
        let outcome = outcome.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(outcome.report.frames, 2);
    });
}

/// With `frames = 0` the run is live until a stop: a pause of the sender ends nothing.
#[test]
fn an_unbounded_run_outlasts_the_idle_timeout_until_it_is_stopped() {
    within_timeout(TIMEOUT, "unbounded", || {
        let stop = Arc::new(AtomicBool::new(false));
        let config = RunConfig { stop: Some(Arc::clone(&stop)), ..idling(2, 0, Duration::from_millis(100)) };
        let outcome = Run::new(graph("udp", 0), "fifo", config).go(|source, to| {
            send_frames(to, 2, 0);
            wait_received(source, 2 * u64::from(PACKETS));
            std::thread::sleep(Duration::from_millis(600));
            stop.store(true, Ordering::Relaxed);
        });
        let outcome = outcome.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((outcome.report.frames, outcome.report.interrupted), (2, true));
    });
}

/// `config` with the frame window `window`, frame timeout `timeout` and idle timeout `idle`
/// (frames dropped when every slot is busy).
fn windowed(slots: u32, frames: u64, window: u32, timeout: Duration, idle: Duration) -> RunConfig {
    let network = NetworkOptions {
        frame_window: window,
        frame_timeout: timeout,
        idle_timeout: Some(idle),
        ..NetworkOptions::default()
    };
    RunConfig { network, ..config(slots, frames) }
}

/// The frame id among `ids` whose packets made the sink `outputs` of frame number `number`.
fn frame_of(number: usize, outputs: &[(u32, u32, Output)], ids: std::ops::Range<u64>) -> Option<u64> {
    let value = sink(outputs);
    ids.into_iter().find(|&id| reference(number as u64, id) == value)
}

/// One datagram with frame id 10^9 comes before the frames 0..6 of the run (network/README.md,
/// "Frames from packets": a lone first packet far from the rest is a stray): every frame is
/// assembled, the stray is counted, nothing is late.
#[test]
fn a_stray_first_datagram_does_not_make_the_frames_after_it_late() {
    within_timeout(TIMEOUT, "stray first", || {
        let frames = 6;
        let run = Run::new(graph("udp", 0), "fifo", idling(4, frames, Duration::from_secs(3)));
        let outcome = run.go(|source, to| {
            udp_sender().send_to(&packet(1_000_000_000, 0), to).unwrap();
            wait_received(source, 1);
            send_frames(to, frames, 0);
        });
        let outcome = outcome.unwrap_or_else(|e| panic!("the run failed: {e}"));
        let network = &outcome.report.source_section["network"];
        assert_eq!(outcome.report.frames, frames, "{network}");
        assert_eq!(network["frames_complete"], frames, "{network}");
        assert_eq!(network["frames_stray"], 1, "{network}");
        assert_eq!(network["packets_dropped"]["late"], 0, "{network}");
        assert_eq!(network["packets_dropped"]["outside_window"], 1, "{network}");
        // The stray opened a frame (number 0), abandoned when the window restarted at frame 0.
        assert_eq!(outcome.report.frames_abandoned, 1);
        for number in 1..=frames as usize {
            let id = frame_of(number, &outcome.outputs[number], 0..frames);
            assert_eq!(id, Some(number as u64 - 1), "frame number {number}");
        }
    });
}

/// Frames 0..24 in blocks of eight sent newest first, their packets interleaved (frame 7's first
/// packet is the first read): reordering within the window loses nothing.
#[test]
fn frames_reordered_within_the_window_are_all_assembled() {
    within_timeout(TIMEOUT, "reordered", || {
        let frames = 24;
        let run = Run::new(graph("udp", 0), "fifo", idling(4, frames, Duration::from_secs(3)));
        let outcome = run.go(|source, to| {
            let socket = udp_sender();
            let mut sent = 0;
            for block in 0..frames / 8 {
                for index in 0..PACKETS {
                    for frame in (block * 8..block * 8 + 8).rev() {
                        socket.send_to(&packet(frame, index), to).unwrap();
                    }
                }
                sent += 8 * u64::from(PACKETS);
                wait_received(source, sent); // within the socket's buffer
            }
        });
        let outcome = outcome.unwrap_or_else(|e| panic!("the run failed: {e}"));
        let network = &outcome.report.source_section["network"];
        assert_eq!(outcome.report.frames, frames, "{network}");
        assert_eq!(network["frames_complete"], frames, "{network}");
        assert_eq!(network["packets_accepted"], frames * u64::from(PACKETS), "{network}");
        let mut ids: Vec<u64> = (0..frames as usize)
            .map(|number| frame_of(number, &outcome.outputs[number], 0..frames).expect("a frame of the sent ids"))
            .collect();
        ids.sort_unstable();
        assert_eq!(ids, (0..frames).collect::<Vec<_>>());
    });
}

/// Frame 0 misses a packet and its deadline is a minute away: with `on_slots_busy = drop`, the
/// frames after it do not wait behind it once they need its place in the window (4 frames); it
/// is given up as incomplete, and the run of 10 frames ends when the 10th is taken.
#[test]
fn a_frame_missing_a_packet_does_not_hold_back_the_frames_after_it() {
    within_timeout(TIMEOUT, "window held", || {
        let frames = 10;
        let done = Arc::new(AtomicU64::new(0));
        let frames_done = Arc::clone(&done);
        let progress = ProgressFn(Arc::new(move |p: Progress| frames_done.store(p.frames_done, Ordering::Relaxed)));
        let config = windowed(4, frames, 4, Duration::from_secs(60), Duration::from_secs(3));
        let config = RunConfig { progress: Some(progress), ..config };
        let outcome = Run::new(graph("udp", 0), "fifo", config).go_keeping_partial(|_, to| {
            send_frames(to, 0, PACKETS - 1);
            for frame in 1..frames {
                let socket = udp_sender();
                for index in 0..PACKETS {
                    socket.send_to(&packet(frame, index), to).unwrap();
                }
                // One frame at a time, so that no slot is ever busy: frames 1..=frame completed.
                let waited = std::time::Instant::now();
                while done.load(Ordering::Relaxed) < frame {
                    if waited.elapsed() > Duration::from_secs(10) {
                        return; // the frame never completed: the run fails below
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        });
        let outcome = outcome.unwrap_or_else(|failure| panic!("the run failed: {}", failure.error));
        let network = &outcome.report.source_section["network"];
        assert_eq!(outcome.report.frames, frames - 1, "{network}");
        assert_eq!((network["frames_complete"].as_u64(), network["frames_incomplete"].as_u64()), (Some(9), Some(1)));
        assert_eq!(network["packets_missing"], 1, "{network}");
        assert_eq!(network["packets_dropped"]["outside_window"], 0, "{network}");
    });
}

/// A header whose frame id is u64::MAX, first and in the middle of the frames: it is a stray
/// each time, nothing overflows, and the run takes its frames and ends.
#[test]
fn a_frame_id_of_u64_max_is_a_stray_and_wedges_nothing() {
    within_timeout(TIMEOUT, "u64::MAX", || {
        let frames = 6;
        let run = Run::new(graph("udp", 0), "fifo", idling(4, frames, Duration::from_secs(3)));
        let outcome = run.go(|source, to| {
            let socket = udp_sender();
            socket.send_to(&packet(u64::MAX, 0), to).unwrap();
            wait_received(source, 1);
            send_frames(to, 3, 0);
            socket.send_to(&packet(u64::MAX, 1), to).unwrap();
            for frame in 3..frames {
                for index in 0..PACKETS {
                    socket.send_to(&packet(frame, index), to).unwrap();
                }
            }
        });
        let outcome = outcome.unwrap_or_else(|e| panic!("the run failed: {e}"));
        let network = &outcome.report.source_section["network"];
        assert_eq!(outcome.report.frames, frames, "{network}");
        assert_eq!(network["packets_dropped"]["outside_window"], 2, "{network}");
        assert_eq!(network["frames_stray"], 1, "{network}");
    });
}

#[test]
fn a_port_in_use_is_refused_with_one_line_naming_it() {
    let taken = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let text = format!(
        r#"{{"network_config": {{"address": "127.0.0.1", "start_port": {port}, "packet_length": 64, "frame_packets": 1}},
            "nodes": [{{"name": "a", "function": "checksum", "args": [{{"type": "$res", "predecessor": {{"name": "$network"}}}}]}}]}}"#
    );
    let graph = graph::parse_str("busy.json", &text).unwrap();
    let kernels = KernelSet::load(&[synthetic_lib()]).unwrap();
    let Err(error) = NetworkSource::bind(&graph, &kernels, &RunConfig::default()) else {
        panic!("bound a port in use")
    };
    let message = error.to_string();
    assert!(message.contains(&format!("udp 127.0.0.1:{port}")) && message.contains("in use"), "{message}");
    assert!(!message.contains('\n'));
}

#[test]
fn a_source_kernel_error_fails_its_frame_not_the_run() {
    within_timeout(TIMEOUT, "source error", || {
        let text = format!(
            r#"{{"network_config": {{"start_port": 0, "packet_length": {PACKET}, "frame_packets": {PACKETS},
                                    "index_function": {{"function": "fail"}}}},
                "nodes": [{{"name": "a", "function": "checksum", "factor": {PACKETS},
                           "args": [{{"type": "$res", "predecessor": {{"name": "$network"}}}}]}}]}}"#
        );
        let graph = graph::parse_str("failing.json", &text).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let config = RunConfig { stop: Some(Arc::clone(&stop)), ..config(2, 0) };
        let outcome = Run::new(graph, "fifo", config).go(|source, to| {
            let socket = udp_sender();
            for frame in 0..3 {
                for index in 0..PACKETS {
                    socket.send_to(&packet(frame, index), to).unwrap();
                }
            }
            while source.packets_received() < 3 * u64::from(PACKETS) {
                std::thread::sleep(Duration::from_millis(1));
            }
            stop.store(true, Ordering::Relaxed);
        });
        let outcome = outcome.unwrap_or_else(|e| panic!("the run failed: {e}"));
        let network = &outcome.report.source_section["network"];
        assert_eq!(network["frames_failed"], 3);
        assert_eq!(network["packets_dropped"]["source_error"], 3 * u64::from(PACKETS));
        let first = network["first_source_error"].as_str().unwrap();
        assert!(first.contains("index_function") && first.contains("fail kernel called"), "{first}");
        assert_eq!(outcome.report.frames, 0);
    });
}

/// The `tomii` command receiving packets from `tomii send`, as a user runs them.
mod command {
    use std::io::{BufRead, BufReader};
    use std::path::Path;
    use std::process::{Child, Command, Stdio};

    use super::*;
    use common::cli::{assert_error, finish, tomii};

    fn write_graph(dir: &Path, config: &str) -> std::path::PathBuf {
        let path = dir.join("net.json");
        let text = format!(
            r#"{{"name": "net", "network_config": {{{config}}},
                "nodes": [{{"name": "fft", "function": "checksum", "factor": 4,
                           "args": [{{"type": "$res", "predecessor": {{"name": "$network"}}}}]}},
                          {{"name": "sum", "function": "checksum",
                           "args": [{{"type": "$res", "predecessor": {{"name": "fft", "index": "all"}}}}]}}]}}"#
        );
        std::fs::write(&path, text).unwrap();
        path
    }

    fn run_command(graph: &Path, args: &[&str]) -> Command {
        let mut command = tomii();
        command.arg("run").arg(graph).arg("--dylib").arg(synthetic_lib()).args(["--workers", "2", "--slots", "4"]);
        command.args(args);
        command
    }

    /// A `tomii run` child, killed if the test fails before it ends.
    struct Running(Option<Child>);

    impl Running {
        fn id(&self) -> u32 {
            self.0.as_ref().map_or(0, Child::id)
        }

        fn wait_with_output(mut self) -> std::process::Output {
            self.0.take().expect("a running child").wait_with_output().expect("the child's exit")
        }
    }

    impl Drop for Running {
        fn drop(&mut self) {
            if let Some(mut child) = self.0.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }

    /// Starts a run and returns it with the port it listens on (from its "listening on" line) and
    /// the rest of its stderr, read to its end.
    fn listening(mut command: Command) -> (Running, u16, std::thread::JoinHandle<String>) {
        let mut child =
            command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("tomii run");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        let port = line
            .strip_prefix("listening on udp 127.0.0.1:")
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("no listening line: {line:?}"));
        let rest = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
            text
        });
        (Running(Some(child)), port, rest)
    }

    /// A run of 4-packet frames over UDP for `frames` frames (0: until stopped), waiting when every
    /// slot is busy and writing a report: its directory (removed when dropped), graph, report path,
    /// the run and its port.
    fn reporting_run(frames: &str) -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf, Running, u16) {
        let dir = tempfile::tempdir().unwrap();
        let graph = write_graph(dir.path(), r#""start_port": 0, "packet_length": 64, "frame_packets": 4"#);
        let report = dir.path().join("report.json");
        let mut command = run_command(&graph, &["--frames", frames, "--on-slots-busy", "wait", "--report"]);
        command.arg(&report);
        let (child, port, _) = listening(command);
        (dir, graph, report, child, port)
    }

    fn read_report(path: &Path) -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    fn send(graph: &Path, port: u16, frames: u64) {
        send_from(graph, port, 0, frames, 4);
    }

    /// `tomii send` of frames `first .. first + frames` of `packets` packets each, to `port`.
    fn send_from(graph: &Path, port: u16, first: u64, frames: u64, packets: u64) {
        let mut command = tomii();
        command.arg("send").arg("--graph").arg(graph).args(["--port", &port.to_string()]);
        command.args(["--first-frame", &first.to_string(), "--frames", &frames.to_string(), "--rate", "20000"]);
        let run = finish(command);
        assert!(run.status.success(), "tomii send failed: {}", run.stderr);
        assert!(run.stdout.contains(&format!("sent {} packets", frames * packets)), "{}", run.stdout);
    }

    /// README.md's example ("Frames from the network": examples/graphs/packets.json, on one
    /// socket of a port the system chooses), after a stray datagram and with the frames 10..110
    /// lost on the way: the window starts at frame 0, jumps to frame 110 and counts the 100 frames
    /// skipped, and the run of 200 frames ends with them counted (more if the machine lost packets
    /// too), exit status 0, its line saying so.
    #[test]
    fn the_documented_example_ends_when_a_burst_of_frames_is_lost_on_the_way() {
        within_timeout(TIMEOUT, "lost burst", || {
            let dir = tempfile::tempdir().unwrap();
            let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/graphs/packets.json");
            let mut graph: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(example).unwrap()).unwrap();
            graph["network_config"]["start_port"] = 0.into();
            graph["network_config"]["num_sockets"] = 1.into();
            let path = dir.path().join("packets.json");
            std::fs::write(&path, graph.to_string()).unwrap();
            let report = dir.path().join("report.json");
            let mut command = run_command(&path, &["--frames", "200", "--on-slots-busy", "wait"]);
            command.args(["--network-idle-timeout-ms", "3000", "--report"]).arg(&report);
            let (child, port, stderr) = listening(command);
            let mut stray = vec![0u8; 1024];
            send::write_packet(&mut stray, 1_000_000_000, 0);
            udp_sender().send_to(&stray, ("127.0.0.1", port)).unwrap();
            send_from(&path, port, 0, 10, 16);
            send_from(&path, port, 110, 90, 16);
            let output = child.wait_with_output();
            let stdout = String::from_utf8_lossy(&output.stdout);
            assert!(output.status.success(), "{stdout}\n{}", stderr.join().unwrap());
            let network = &read_report(&report)["network"];
            let count = |key: &str| network[key].as_u64().unwrap_or_else(|| panic!("no {key}: {network}"));
            assert_eq!(count("frames_complete") + count("frames_incomplete"), 200, "{network}");
            assert!(count("frames_incomplete") >= 101, "{network}");
            assert!(count("packets_missing") > 100 * 16, "{network}");
            assert_eq!(count("frames_stray"), 1, "{network}");
            let (complete, incomplete) = (count("frames_complete"), count("frames_incomplete"));
            let line = format!("frames: {complete} complete, {incomplete} incomplete, 0 dropped, 0 failed, 1 stray");
            assert!(stdout.contains(&line), "{stdout}");
        });
    }

    #[test]
    fn tomii_run_takes_the_frames_tomii_send_sends() {
        let (_dir, graph, report, child, port) = reporting_run("25");
        send(&graph, port, 25);
        let output = child.wait_with_output();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{stdout}");
        assert!(stdout.contains("packets: 100 received, 100 accepted, none dropped"), "{stdout}");
        let report = read_report(&report);
        assert_eq!(report["frames"], 25);
        assert_eq!(report["network"]["ports"][0], port);
    }

    #[test]
    fn ctrl_c_ends_an_unbounded_network_run_with_a_complete_report() {
        let (_dir, graph, report, child, port) = reporting_run("0");
        send(&graph, port, 7);
        std::thread::sleep(Duration::from_millis(300));
        // SAFETY: sending a signal to our own child process.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) }, 0);
        let output = child.wait_with_output();
        assert_eq!(output.status.code(), Some(0));
        let report = read_report(&report);
        assert_eq!((report["frames"].as_u64(), report["interrupted"].as_bool()), (Some(7), Some(true)));
    }

    #[test]
    fn a_run_whose_sender_stops_early_exits_with_an_error_saying_how_far_it_got() {
        within_timeout(TIMEOUT, "stopped sender", || {
            let dir = tempfile::tempdir().unwrap();
            let graph = write_graph(dir.path(), r#""start_port": 0, "packet_length": 64, "frame_packets": 4"#);
            let report = dir.path().join("report.json");
            let mut command = run_command(&graph, &["--frames", "5", "--network-idle-timeout-ms", "300", "--report"]);
            command.arg(&report);
            let (child, port, stderr) = listening(command);
            send(&graph, port, 2);
            let output = child.wait_with_output();
            let stderr = stderr.join().unwrap();
            assert!(matches!(output.status.code(), Some(code) if code != 0), "{:?}: {stderr}", output.status);
            assert!(
                stderr.contains("error: no packet for 300 ms after frame 1: 2 of 5 frames taken (2 complete);"),
                "{stderr}"
            );
            assert!(stderr.contains("the run stopped after 2 frame(s) of 5"), "{stderr}");
            let report = read_report(&report);
            assert_eq!((report["status"].as_str(), report["frames"].as_u64()), (Some("failed"), Some(2)));
        });
    }

    /// A port below the system's first unprivileged one, for a process without privileges (this
    /// test's child drops to user `nobody` when the test runs as root).
    #[test]
    fn a_port_that_needs_privileges_is_one_error_line_saying_so() {
        use std::os::unix::fs::PermissionsExt;
        use std::os::unix::process::CommandExt;
        let first_free = std::fs::read_to_string("/proc/sys/net/ipv4/ip_unprivileged_port_start")
            .ok()
            .and_then(|text| text.trim().parse::<u16>().ok())
            .unwrap_or(1024);
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let port = first_free.saturating_sub(1).max(1);
        let graph =
            write_graph(dir.path(), &format!(r#""start_port": {port}, "packet_length": 64, "frame_packets": 4"#));
        std::fs::set_permissions(&graph, std::fs::Permissions::from_mode(0o644)).unwrap();
        let mut command = run_command(&graph, &["--frames", "1", "--frame-timeout-ms", "1"]);
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            command.uid(65534).gid(65534);
        }
        if first_free == 0 {
            // Every port is unprivileged on this system: the bind succeeds; nothing to refuse.
            let mut child = command.stdin(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
            let mut line = String::new();
            BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
            let _ = child.kill();
            let _ = child.wait();
            assert!(line.starts_with("listening on"), "{line}");
            return;
        }
        assert_error(&finish(command), &[&format!("udp 127.0.0.1:{port}"), "permission denied", "above 1023"]);
    }

    #[test]
    fn sockets_that_cannot_be_bound_are_one_error_line_naming_them() {
        let dir = tempfile::tempdir().unwrap();
        let taken = UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = taken.local_addr().unwrap().port();
        let graph =
            write_graph(dir.path(), &format!(r#""start_port": {port}, "packet_length": 64, "frame_packets": 4"#));
        assert_error(&finish(run_command(&graph, &[])), &[&format!("udp 127.0.0.1:{port}"), "in use"]);
        // 192.0.2.1 (TEST-NET-1) is never an address of this machine.
        let graph = write_graph(
            dir.path(),
            r#""address": "192.0.2.1", "start_port": 9000, "packet_length": 64, "frame_packets": 4"#,
        );
        assert_error(&finish(run_command(&graph, &[])), &["udp 192.0.2.1:9000", "not one of this machine's"]);
    }
}

#[test]
fn packet_buffers_beyond_the_limit_are_refused_naming_the_formula() {
    let text = r#"{"network_config": {"start_port": 0, "packet_length": 16, "frame_packets": 1, "buffer_depth": 3000000000},
                  "nodes": [{"name": "a", "function": "checksum", "args": [{"type": "$res", "predecessor": {"name": "$network"}}]}]}"#;
    let graph = graph::parse_str("deep.json", text).unwrap();
    let kernels = KernelSet::load(&[synthetic_lib()]).unwrap();
    let Err(error) = NetworkSource::bind(&graph, &kernels, &RunConfig::default()) else { panic!("bound") };
    let message = error.to_string();
    assert!(message.contains("buffer_depth") && message.contains("2147483648 bytes"), "{message}");
}
