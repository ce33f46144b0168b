//! `network_config`: the sockets that feed the `$network` input, checked for shape.

use serde_json::Value as Json;

use super::arg::arg_list;
use super::fields::{check_fields, name_field};
use super::{ArgSpec, FactorSpec, NETWORK_INPUT, NetworkSpec};
use crate::graph::error::{ArgGroup, Issue, Place, invalid, quote};
use crate::graph::typed::show;

const NETWORK_FIELDS: &[&str] = &[
    "socket_type",
    "address",
    "start_port",
    "num_sockets",
    "packet_length",
    "frame_packets",
    "stream_packets",
    "buffer_depth",
    "extract_packet_func",
    "id_function",
    "index_function",
];
const INDEX_FUNCTION_FIELDS: &[&str] = &["function", "args"];

/// `network_config` (README.md, "Network sources"), and the factor of `$network`: its
/// `frame_packets` (or `stream_packets`).
pub(super) fn network(json: &Json) -> Result<(NetworkSpec<'_>, FactorSpec), Issue> {
    let at = Place::Network;
    let Json::Object(object) = json else {
        return invalid(format!("{at} must be an object {{\"start_port\": ..., \"packet_length\": ..., ...}}"));
    };
    check_fields(object, NETWORK_FIELDS, &[], at)?;
    let text = |field: &str| -> Result<Option<String>, Issue> {
        match object.get(field) {
            None | Some(Json::Null) => Ok(None),
            Some(Json::String(text)) if !text.is_empty() => Ok(Some(text.clone())),
            Some(other) => invalid(format!("{at}: {} must be a non-empty string, got {}", quote(field), show(other))),
        }
    };
    let number = |field: &str, default: Option<u64>| -> Result<FactorSpec, Issue> {
        match (object.get(field), default) {
            (None | Some(Json::Null), Some(default)) => Ok(FactorSpec::Count(default)),
            (None | Some(Json::Null), None) => invalid(format!("{at}: {} is missing; give a number", quote(field))),
            (Some(Json::Number(n)), _) if n.as_u64().is_some() => Ok(FactorSpec::Count(n.as_u64().unwrap_or(0))),
            (Some(Json::String(name)), _) if !name.is_empty() => Ok(FactorSpec::Var(name.clone())),
            (Some(other), _) => invalid(format!(
                "{at}: {} must be a non-negative integer or the name of an initialization holding one, got {}",
                quote(field),
                show(other)
            )),
        }
    };
    let frame_packets = match (object.get("frame_packets"), object.get("stream_packets")) {
        (Some(_), Some(_)) => {
            return invalid(format!(r#"{at}: give "frame_packets" or its other spelling "stream_packets", not both"#));
        }
        (None, Some(_)) => number("stream_packets", None)?,
        _ => number("frame_packets", None)?,
    };
    let index_function = match object.get("index_function") {
        None | Some(Json::Null) => None,
        Some(Json::Object(index)) if index.is_empty() => None,
        Some(Json::Object(index)) => {
            check_fields(index, INDEX_FUNCTION_FIELDS, &[], at)?;
            let function = name_field(index, "function", at, "name the kernel that gives a packet's index")?;
            let args = arg_list(index.get("args"), "index_function.args", NETWORK_INPUT, ArgGroup::Kernel)?;
            if args.iter().any(|arg| matches!(arg, ArgSpec::Edge(_))) {
                return invalid(format!(
                    "{at}: index_function's args are passed with each packet; give literals or $ref"
                ));
            }
            Some((function, args))
        }
        Some(other) => {
            return invalid(format!(
                r#"{at}: "index_function" must be {{"function": KERNEL, "args": [...]}}, got {}"#,
                show(other)
            ));
        }
    };
    let network = NetworkSpec {
        socket_type: text("socket_type")?.unwrap_or_else(|| "udp".to_owned()),
        address: text("address")?.unwrap_or_else(|| "127.0.0.1".to_owned()),
        start_port: number("start_port", None)?,
        num_sockets: number("num_sockets", Some(1))?,
        packet_length: number("packet_length", None)?,
        buffer_depth: number("buffer_depth", Some(128))?,
        extract_packet_func: text("extract_packet_func")?,
        id_function: text("id_function")?,
        index_function,
    };
    Ok((network, frame_packets))
}
