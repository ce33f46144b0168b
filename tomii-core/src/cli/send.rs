//! `tomii send`: the traffic generator on the command line. The destination and the packets'
//! shape come from flags, or from a graph's `network_config` block (flags override it); the
//! sending is [`crate::network::send`]'s. Nothing here touches a socket. SIGINT and SIGTERM stop
//! the send within [`network::PROGRESS_INTERVAL`], even between two packets of a slow rate; a
//! second one quits at once.

use std::io::IsTerminal;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde_json::{Map, Value};

use crate::network::send::{self as network, Destination, Packets, SendStats, SocketType};

#[derive(Args)]
pub struct SendArgs {
    /// Take the socket type, address, ports and packet shape from this graph's `network_config`
    /// block; the flags below override it.
    #[arg(long, value_name = "GRAPH")]
    pub graph: Option<PathBuf>,
    /// Send over UDP: one datagram per packet.
    #[arg(long, conflicts_with_all = ["tcp", "socket_type"])]
    pub udp: bool,
    /// Send over TCP: one connection per port, each packet preceded by its length (u32,
    /// little-endian).
    #[arg(long, conflicts_with = "socket_type")]
    pub tcp: bool,
    /// `udp` or `tcp` (as a graph's socket_type spells it).
    #[arg(long, value_name = "TYPE", value_parser = parse_socket_type)]
    pub socket_type: Option<SocketType>,
    /// The receiver's IP address or host name [default: the graph's, else 127.0.0.1].
    #[arg(long, value_name = "ADDRESS")]
    pub address: Option<String>,
    /// The first port: packet INDEX of a frame goes to PORT + INDEX % N.
    #[arg(long, value_name = "PORT")]
    pub port: Option<u16>,
    /// Consecutive ports from PORT [default: the graph's num_sockets, else 1].
    #[arg(long, value_name = "N")]
    pub sockets: Option<u16>,
    /// Bytes per packet, header included.
    #[arg(long, value_name = "BYTES")]
    pub packet_length: Option<usize>,
    /// Packets per frame.
    #[arg(long, value_name = "N", conflicts_with = "from")]
    pub frame_packets: Option<u32>,
    /// Frames to send.
    #[arg(long, default_value_t = 1, value_name = "F", conflicts_with = "from")]
    pub frames: u64,
    /// The frame id of the first frame.
    #[arg(long, default_value_t = 0, value_name = "ID", conflicts_with = "from")]
    pub first_frame: u64,
    /// Packets per second, from 0.01 to 1e9 [default: as fast as the sockets take them].
    #[arg(long, value_name = "PPS")]
    pub rate: Option<f64>,
    /// Send the packets of FILE instead (back to back, each --packet-length bytes, sent as they
    /// are): a regular file, read up to the size it has when the send starts.
    #[arg(long = "from", value_name = "FILE")]
    pub from: Option<PathBuf>,
    /// Print nothing but errors.
    #[arg(long, short)]
    pub quiet: bool,
}

fn parse_socket_type(text: &str) -> Result<SocketType, String> {
    network::parse_socket_type(text).map_err(|error| error.to_string())
}

/// `tomii send`: sends, then prints one line of what it sent.
pub fn send(args: SendArgs) -> Result<()> {
    let graph = args.graph.as_deref().map(GraphFile::load).transpose()?;
    let network = graph.as_ref().map(GraphFile::network).transpose()?;
    let (destination, packets) = settings(&args, network.as_ref())?;
    let total = packets.total();
    let interrupt = super::app::stop_on_interrupt(false)?;
    let started = Instant::now();
    let show_progress = !args.quiet && std::io::stderr().is_terminal();
    let mut progress = |sent: u64| {
        if interrupt.stop.load(Ordering::Relaxed) {
            return ControlFlow::Break(());
        }
        if show_progress {
            eprint!("\r\x1b[2K{}", progress_text(sent, total, started.elapsed().as_secs_f64()));
        }
        ControlFlow::Continue(())
    };
    let outcome = network::send(&destination, &packets, args.rate, Some(&mut progress));
    if show_progress {
        eprint!("\r\x1b[2K");
    }
    drop(interrupt);
    let stats = match outcome {
        Err(network::SendError::Stopped { packets }) => {
            let of = total.map(|total| format!(" of {total}")).unwrap_or_default();
            bail!("interrupted after {packets}{of} packets");
        }
        outcome => outcome?,
    };
    if !args.quiet {
        super::app::say(summary(&stats, &destination))?;
    }
    Ok(())
}

/// The destination and packets the flags give, each missing one taken from the graph's block.
fn settings(args: &SendArgs, network: Option<&NetworkBlock<'_>>) -> Result<(Destination, Packets)> {
    let flag_type = match (args.udp, args.tcp, args.socket_type) {
        (true, _, _) => Some(SocketType::Udp),
        (_, true, _) => Some(SocketType::Tcp),
        (_, _, chosen) => chosen,
    };
    let transport = match flag_type {
        Some(transport) => transport,
        // A graph's block without socket_type means UDP, as the runtime reads it.
        None if network.is_some() => {
            let text = pick(None, network, "socket_type", NetworkBlock::text)?.unwrap_or_else(|| "udp".to_owned());
            let in_graph = || format!("{}: network_config", network.map_or(Path::new(""), |n| n.path).display());
            network::parse_socket_type(&text).with_context(in_graph)?
        }
        None => required(None, network, "socket_type", NetworkBlock::text).map(|_| SocketType::Udp)?,
    };
    let address = pick(args.address.clone(), network, "address", NetworkBlock::text)?;
    let address = network::parse_address(address.as_deref().unwrap_or("127.0.0.1"))?;
    let start_port = required(args.port, network, "start_port", NetworkBlock::integer)?;
    let sockets = pick(args.sockets, network, "num_sockets", NetworkBlock::integer)?.unwrap_or(1);
    let destination = Destination::new(transport, address, start_port, sockets)?;
    let packet_length = required(args.packet_length, network, "packet_length", NetworkBlock::integer)?;
    let packets = match &args.from {
        Some(path) => Packets::File { path: path.clone(), packet_length },
        None => Packets::Generated {
            packet_length,
            frame_packets: match pick(None, network, "stream_packets", NetworkBlock::integer)? {
                Some(packets) if args.frame_packets.is_none() => packets, // the field's other spelling
                _ => required(args.frame_packets, network, "frame_packets", NetworkBlock::integer)?,
            },
            frames: args.frames,
            first_frame: args.first_frame,
        },
    };
    Ok((destination, packets))
}

/// The flag's value, else the graph's `field` (read by `read`), else none.
fn pick<'a, T>(
    flag: Option<T>,
    network: Option<&NetworkBlock<'a>>,
    field: &str,
    read: impl Fn(&NetworkBlock<'a>, &str) -> Result<Option<T>>,
) -> Result<Option<T>> {
    match (flag, network) {
        (Some(value), _) => Ok(Some(value)),
        (None, Some(network)) => read(network, field),
        (None, None) => Ok(None),
    }
}

/// [`pick`], where having no value is an error naming the flag.
fn required<'a, T>(
    flag: Option<T>,
    network: Option<&NetworkBlock<'a>>,
    field: &str,
    read: impl Fn(&NetworkBlock<'a>, &str) -> Result<Option<T>>,
) -> Result<T> {
    match (pick(flag, network, field, read)?, network) {
        (Some(value), _) => Ok(value),
        (None, Some(network)) => {
            bail!("{}: network_config has no {field}; give {}", network.path.display(), flag_for(field))
        }
        (None, None) => bail!("no {field}: give {}, or give --graph", flag_for(field)),
    }
}

/// The flag that gives a `network_config` field.
fn flag_for(field: &str) -> &'static str {
    match field {
        "socket_type" => "--udp or --tcp",
        "address" => "--address",
        "start_port" => "--port",
        "num_sockets" => "--sockets",
        "packet_length" => "--packet-length",
        "frame_packets" => "--frame-packets",
        _ => "it as a flag",
    }
}

/// A graph file, read as plain JSON: the sender needs a few fields, not a compiled graph.
struct GraphFile {
    path: PathBuf,
    json: Value,
}

impl GraphFile {
    /// Reads the graph file at `path` as every graph file is read (`graph::read_file`: a regular
    /// file, of bounded size); errors name `--graph`.
    fn load(path: &Path) -> Result<Self> {
        let text = crate::graph::read_file(path).map_err(|error| anyhow::anyhow!("--graph {error}"))?;
        let json = serde_json::from_str(&text).with_context(|| format!("{}: not valid JSON", path.display()))?;
        Ok(Self { path: path.to_path_buf(), json })
    }

    fn network(&self) -> Result<NetworkBlock<'_>> {
        let Some(config) = self.json.get("network_config").filter(|c| !c.is_null()) else {
            bail!(
                "{}: has no network_config block; give --udp or --tcp, --port, --packet-length and --frame-packets",
                self.path.display()
            );
        };
        let config =
            config.as_object().with_context(|| format!("{}: network_config is not an object", self.path.display()))?;
        let initializations = self.json.get("initializations").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        Ok(NetworkBlock { path: &self.path, config, initializations })
    }
}

/// A graph's `network_config` block, with the initializations its fields may name.
struct NetworkBlock<'a> {
    path: &'a Path,
    config: &'a Map<String, Value>,
    initializations: &'a [Value],
}

impl NetworkBlock<'_> {
    /// The value of `field`: a string naming an initialization stands for that one's value.
    fn value(&self, field: &str) -> Result<Option<Value>> {
        let value = match self.config.get(field) {
            None | Some(Value::Null) => return Ok(None),
            Some(value) => value,
        };
        let Some(name) = value.as_str() else { return Ok(Some(value.clone())) };
        let Some(init) = self.initializations.iter().find(|i| i.get("name").and_then(Value::as_str) == Some(name))
        else {
            return Ok(Some(value.clone()));
        };
        let Some(literal) = init.get("value") else {
            bail!(
                "{}: network_config.{field} names initialization {name:?}, which a kernel computes; the sender \
                 needs a literal value: give {}",
                self.path.display(),
                flag_for(field)
            );
        };
        // A typed literal {"type": T, "value": V} holds its value inside.
        Ok(Some(literal.get("value").unwrap_or(literal).clone()))
    }

    fn integer<T: TryFrom<u64>>(&self, field: &str) -> Result<Option<T>> {
        let Some(value) = self.value(field)? else { return Ok(None) };
        let shown = format!("{}: network_config.{field} is {value}", self.path.display());
        match value.as_u64() {
            Some(number) => Ok(Some(T::try_from(number).map_err(|_| anyhow::anyhow!("{shown}: out of range"))?)),
            None if value.is_string() => bail!("{shown}: neither an integer nor the name of an initialization"),
            None => bail!("{shown}: not a non-negative integer"),
        }
    }

    fn text(&self, field: &str) -> Result<Option<String>> {
        match self.value(field)? {
            None => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(other) => bail!("{}: network_config.{field} is {other}: not a string", self.path.display()),
        }
    }
}

fn progress_text(sent: u64, total: Option<u64>, seconds: f64) -> String {
    let rate = sent as f64 / seconds.max(1e-9);
    let done = match total {
        Some(total) if total > 0 => format!("sent {sent}/{total} packets ({:.0}%)", 100.0 * sent as f64 / total as f64),
        _ => format!("sent {sent} packets"),
    };
    format!("{done}, {seconds:.1} s, {rate:.0} packets/s")
}

/// `sent 12 packets (768 bytes) to udp 127.0.0.1:9000-9003 in 0.001 s: 12000 packets/s`.
fn summary(stats: &SendStats, destination: &Destination) -> String {
    format!(
        "sent {} packets ({} bytes) to {destination} in {:.3} s: {:.0} packets/s",
        stats.packets,
        stats.bytes,
        stats.seconds,
        stats.packets_per_s()
    )
}
