//! A network run that gets no packet burns no core (network/README.md, "Receiving"): its
//! receivers block in their poll and its workers park, before the first packet and once packets
//! stop. The process's CPU time over a second of silence is held far below the wall time: a
//! coarse bound that load on the machine does not move (CPU time is not wall time), and that a
//! receiver or worker spinning while idle (about a whole core) breaks.
//!
//! Its own test binary, with one test, so that no other test's threads count in the process's
//! CPU time. Needs `cargo build --workspace` first (plugins).

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::{fifo_lib, synthetic_lib, within_timeout};
use tomii_core::engine::{self, RunConfig};
use tomii_core::graph::{self, CompiledGraph};
use tomii_core::network::send;
use tomii_core::network::{NetworkOptions, NetworkSource};
use tomii_core::plugin::{KernelSet, SchedulerPlugin};

const PACKET: usize = 64;
const PACKETS: u32 = 4;
/// The silence measured, each time.
const SILENCE: Duration = Duration::from_secs(1);
/// The most CPU time the run may use over `SILENCE`, as a share of it (idle is about 0.3 %).
const MOST_BUSY: f64 = 0.3;

/// One `noop` per packet and one per frame, on one UDP socket.
fn graph() -> CompiledGraph {
    let text = format!(
        r#"{{
  "name": "idle",
  "network_config": {{"socket_type": "udp", "address": "127.0.0.1", "start_port": 0,
                      "num_sockets": 1, "packet_length": {PACKET}, "frame_packets": {PACKETS}}},
  "nodes": [
    {{"name": "take", "function": "noop", "factor": {PACKETS},
     "args": [{{"type": "$dep", "predecessor": {{"name": "$network"}}}}]}},
    {{"name": "frame", "function": "noop",
     "args": [{{"type": "$dep", "predecessor": {{"name": "take", "index": "all"}}}}]}}
  ]
}}"#
    );
    graph::parse_str("idle.json", &text).unwrap_or_else(|e| panic!("{e}"))
}

/// The user and system CPU time of the whole process so far.
fn process_cpu() -> Duration {
    // SAFETY: getrusage writes only the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_SELF is a valid target.
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) }, 0, "getrusage failed");
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// The share of a core the process used over `SILENCE` from now, with nothing sent.
fn busy_over_silence() -> f64 {
    let (cpu, wall) = (process_cpu(), Instant::now());
    std::thread::sleep(SILENCE);
    (process_cpu() - cpu).as_secs_f64() / wall.elapsed().as_secs_f64()
}

/// Before the first packet, then after two whole frames (the source waits for eight more, with an
/// idle timeout far off), the run uses well under `MOST_BUSY` of a core; both workers park.
#[test]
fn a_network_run_without_packets_burns_no_core() {
    within_timeout(Duration::from_secs(60), "idle network run", || {
        let graph = graph();
        let kernels = KernelSet::load(&[synthetic_lib()]).unwrap_or_else(|e| panic!("{e}"));
        let scheduler = SchedulerPlugin::load(&fifo_lib()).unwrap_or_else(|e| panic!("{e}"));
        let stop = Arc::new(AtomicBool::new(false));
        let network = NetworkOptions { idle_timeout: Some(Duration::from_secs(60)), ..NetworkOptions::default() };
        let config = RunConfig {
            workers: 2,
            slots: 2,
            frames: 10,
            network,
            stop: Some(Arc::clone(&stop)),
            ..RunConfig::default()
        };
        let source = NetworkSource::bind(&graph, &kernels, &config).unwrap_or_else(|e| panic!("{e}"));
        let to = SocketAddr::from(([127, 0, 0, 1], source.ports()[0]));
        let (before, after) = std::thread::scope(|scope| {
            let silence = scope.spawn(|| {
                std::thread::sleep(Duration::from_millis(200)); // the run started its threads
                let before = busy_over_silence();
                let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
                let mut packet = vec![0u8; PACKET];
                for frame in 0..2 {
                    for index in 0..PACKETS {
                        send::write_packet(&mut packet, frame, index);
                        sender.send_to(&packet, to).unwrap();
                    }
                }
                while source.packets_received() < 2 * u64::from(PACKETS) {
                    std::thread::sleep(Duration::from_millis(1));
                }
                std::thread::sleep(Duration::from_millis(200)); // the two frames completed
                let after = busy_over_silence();
                stop.store(true, Ordering::Relaxed);
                (before, after)
            });
            let outcome = engine::run_with(&graph, &kernels, &scheduler, &config, &source);
            let outcome = outcome.unwrap_or_else(|e| panic!("{e}"));
            assert_eq!((outcome.report.frames, outcome.report.interrupted), (2, true));
            silence.join().expect("the measuring thread")
        });
        assert!(before < MOST_BUSY, "before the first packet the run used {:.0} % of a core", 100.0 * before);
        assert!(after < MOST_BUSY, "after the packets stopped the run used {:.0} % of a core", 100.0 * after);
    });
}
