//! `tomii send` end to end: the built binary sends to sockets this test binds on 127.0.0.1 (port 0),
//! and every packet arrives as `write_packet` predicts; a graph's `network_config` (with names of
//! initializations) gives the settings and flags override them; a bad destination or a missing
//! setting is one `error:` line naming the address and port, or the flag.

mod common;

use std::io::Write;
use std::net::{TcpListener, UdpSocket};
use std::path::Path;
use std::thread::JoinHandle;
use std::time::Duration;

use common::cli::{Run, assert_error, finish, tomii};
use tomii_core::network::send::write_packet;

/// `tomii send ARGS...`.
fn send(args: &[&str]) -> Run {
    let mut command = tomii();
    command.arg("send").args(args);
    finish(command)
}

/// A UDP socket on 127.0.0.1 at a port the system chose, and that port as text.
fn udp_socket() -> (UdpSocket, String) {
    let socket = UdpSocket::bind("127.0.0.1:0").expect("binding a loopback port");
    socket.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let port = socket.local_addr().unwrap().port().to_string();
    (socket, port)
}

/// Reads `count` datagrams on its own thread, so that none is dropped while the child sends.
fn receive(socket: UdpSocket, count: usize) -> JoinHandle<Vec<Vec<u8>>> {
    std::thread::spawn(move || {
        let mut buffer = vec![0u8; 65_536];
        (0..count)
            .map(|_| {
                let length = socket.recv(&mut buffer).expect("a datagram within 30 s");
                buffer[..length].to_vec()
            })
            .collect()
    })
}

/// Frames `frames` of `frame_packets` packets each, as `tomii send` generates them.
fn generated(frames: std::ops::Range<u64>, frame_packets: u32, packet_length: usize) -> Vec<Vec<u8>> {
    let packet = move |frame, index| {
        let mut packet = vec![0u8; packet_length];
        write_packet(&mut packet, frame, index);
        packet
    };
    frames.flat_map(|frame| (0..frame_packets).map(move |index| packet(frame, index))).collect()
}

fn assert_summary(run: &Run, packets: u64, bytes: u64, destination: &str) {
    assert!(run.status.success(), "status {:?}\nstderr:\n{}", run.status, run.stderr);
    let line = run.stdout.trim_end();
    let start = format!("sent {packets} packets ({bytes} bytes) to {destination} in ");
    assert!(line.starts_with(&start) && line.ends_with(" packets/s"), "stdout: {line:?}, wanted {start:?}...");
    assert_eq!(run.stdout.lines().count(), 1, "stdout: {:?}", run.stdout);
}

#[test]
fn generated_frames_arrive_in_order_and_the_summary_counts_them() {
    let (socket, port) = udp_socket();
    let received = receive(socket, 12);
    let args = ["--udp", "--port", &port, "--packet-length", "48", "--frame-packets", "4", "--frames", "3"];
    let run = send(&[&args[..], &["--first-frame", "10", "--rate", "50000"]].concat());
    assert_summary(&run, 12, 576, &format!("udp 127.0.0.1:{port}"));
    assert_eq!(received.join().unwrap(), generated(10..13, 4, 48));
}

fn write_graph(dir: &Path, port: &str) -> String {
    let graph = format!(
        r#"{{
            "initializations": [
                {{"name": "port", "value": {{"type": "usize", "value": {port}}}}},
                {{"name": "packets", "value": 3}},
                {{"name": "host", "value": {{"type": "String", "value": "127.0.0.1"}}}}
            ],
            "nodes": [{{"name": "x", "function": "noop"}}],
            "network_config": {{
                "socket_type": "udp", "address": "host", "start_port": "port", "num_sockets": 1,
                "packet_length": 64, "frame_packets": "packets", "buffer_depth": 128,
                "index_function": {{"function": "index", "args": []}}
            }}
        }}"#
    );
    let path = dir.join("network.json");
    std::fs::write(&path, graph).unwrap();
    path.to_str().expect("UTF-8 path").to_owned()
}

#[test]
fn a_graph_gives_the_settings_and_flags_override_them() {
    let dir = tempfile::tempdir().unwrap();
    let (socket, port) = udp_socket();
    let graph = write_graph(dir.path(), &port);
    let received = receive(socket, 6);
    let run = send(&["--graph", &graph, "--frames", "2", "--packet-length", "24"]);
    assert_summary(&run, 6, 144, &format!("udp 127.0.0.1:{port}"));
    assert_eq!(received.join().unwrap(), generated(0..2, 3, 24));
}

#[test]
fn a_file_of_packets_is_sent_as_it_is() {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    let packets: Vec<Vec<u8>> = (0..4u8).map(|k| vec![k; 20]).collect();
    file.write_all(&packets.concat()).unwrap();
    let (socket, port) = udp_socket();
    let received = receive(socket, 4);
    let path = file.path().to_str().expect("UTF-8 path");
    let run = send(&["--socket-type", "udp", "--port", &port, "--packet-length", "20", "--from", path]);
    assert_summary(&run, 4, 80, &format!("udp 127.0.0.1:{port}"));
    assert_eq!(received.join().unwrap(), packets);
}

#[test]
fn tcp_to_a_closed_port_is_one_error_line_naming_the_address_and_port() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    let run = send(&["--tcp", "--port", &port, "--packet-length", "64", "--frame-packets", "2"]);
    assert_eq!(run.status.code(), Some(1), "stderr:\n{}", run.stderr);
    let line = assert_error(&run, &[&format!("tcp 127.0.0.1:{port}"), "connection refused"]);
    assert!(line.ends_with("is the receiver running?"), "{line}");
    assert!(run.stdout.is_empty(), "stdout: {:?}", run.stdout);
}

#[test]
fn a_missing_setting_names_its_flag() {
    let run = send(&["--udp", "--packet-length", "64", "--frame-packets", "2"]);
    assert_error(&run, &["--port", "or give --graph"]);
    let dir = tempfile::tempdir().unwrap();
    let graph = dir.path().join("plain.json");
    std::fs::write(&graph, r#"{"nodes": [{"name": "x", "function": "noop"}]}"#).unwrap();
    let graph = graph.to_str().unwrap();
    assert_error(&send(&["--graph", graph]), &[graph, "no network_config"]);
}

#[test]
fn a_computed_initialization_cannot_give_a_setting() {
    let dir = tempfile::tempdir().unwrap();
    let graph = dir.path().join("computed.json");
    let text = r#"{"initializations": [{"name": "port", "function": "pick_port", "args": []}],
        "nodes": [{"name": "x", "function": "noop"}],
        "network_config": {"socket_type": "tcp", "start_port": "port", "packet_length": 64, "frame_packets": 1}}"#;
    std::fs::write(&graph, text).unwrap();
    let graph = graph.to_str().unwrap();
    assert_error(&send(&["--graph", graph]), &[graph, "network_config.start_port", "\"port\""]);
}

/// `tomii send` to a UDP socket nothing reads, with `args`, stopped if it runs past `limit`.
fn send_within(args: &[&str], limit: Duration) -> Run {
    let mut command = tomii();
    command.arg("send").args(args);
    common::cli::finish_within(command, limit)
}

#[test]
fn a_rate_outside_its_range_is_refused_naming_the_range() {
    let (_socket, port) = udp_socket();
    let shape = ["--udp", "--port", &port, "--packet-length", "64", "--frame-packets", "1", "--frames", "2"];
    for rate in ["1e-9", "0.001", "1e12", "nan"] {
        let run = send_within(&[&shape[..], &["--rate", rate]].concat(), Duration::from_secs(20));
        let line = assert_error(&run, &["rate: ", "packets/s", "0.01", "1000000000"]);
        assert!(run.stdout.is_empty(), "{rate}: {line}");
    }
}

#[test]
fn packets_from_a_fifo_or_a_device_are_refused_before_sending() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("packets.fifo");
    let path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string; mkfifo only creates the node.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0, "mkfifo");
    let (_socket, port) = udp_socket();
    for (file, what) in [(fifo.to_str().unwrap(), "is a FIFO"), ("/dev/zero", "is a character device")] {
        let args = ["--udp", "--port", &port, "--packet-length", "64", "--from", file];
        let run = send_within(&args, Duration::from_secs(20));
        assert_error(&run, &[file, what, "regular file"]);
    }
}

/// A send paced at one packet every 2 s stops at SIGINT or SIGTERM, while it sleeps between
/// packets, saying how far it got.
#[test]
fn a_signal_stops_a_send_while_it_waits_between_packets() {
    use std::process::Stdio;
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let (socket, port) = udp_socket();
        let mut child = tomii()
            .arg("send")
            .args(["--udp", "--port", &port, "--packet-length", "64", "--frame-packets", "1", "--frames", "50"])
            .args(["--rate", "0.5"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("tomii send");
        let mut buffer = [0u8; 128];
        socket.recv(&mut buffer).expect("the first packet within 30 s");
        // SAFETY: sending a signal to our own child process.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > Duration::from_secs(20) {
                let _ = child.kill();
                panic!("tomii send did not stop within 20 s of signal {signal}");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(status.code(), Some(1), "signal {signal}: {status:?}, stderr {stderr}");
        assert!(stderr.contains("error: interrupted after 1 of 50 packets"), "{stderr}");
    }
}
