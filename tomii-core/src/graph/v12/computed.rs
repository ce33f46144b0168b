//! Counts that name a computed initialization (a factor, `group_size`, `group_by`, a range end,
//! a network number): Tomii 1.2 ran its initializations while it loaded the graph and read
//! instance 0 of the named one. This runtime computes initializations when the run starts, after
//! the graph has compiled, so such a count is refused here, naming the field and the
//! initialization (README.md, "Tomii 1.2 graph files", "Computed counts").
//!
//! Only looks at names; never panics.

use std::collections::HashSet;

use serde_json::{Map, Value as Json};

use crate::graph::error::quote;

/// The first count of `node` (at `at`) that names one of the `computed` initializations.
pub(super) fn in_node(node: &Map<String, Json>, at: &str, computed: &HashSet<String>) -> Result<(), String> {
    for field in ["factor", "group_size"] {
        check(node.get(field), &format!("{at}: {field}"), computed)?;
    }
    check(node.get("loop").and_then(|l| l.get("factor")), &format!("{at}: loop.factor"), computed)?;
    for list in ["args", "loop_args"] {
        for (k, arg) in node.get(list).and_then(Json::as_array).into_iter().flatten().enumerate() {
            let Some(Json::Object(pred)) = arg.get("predecessor") else { continue };
            let place = format!("{at} {list}[{k}] predecessor");
            check(pred.get("group_by"), &format!("{place} group_by"), computed)?;
            if let Some(Json::String(indexes)) = pred.get("indexes") {
                let named = std::iter::once(indexes.trim()).chain(indexes.split('-').map(str::trim));
                for name in named {
                    if computed.contains(name) {
                        return Err(refusal(&format!("{place} indexes {}", quote(indexes)), name));
                    }
                }
            }
        }
    }
    Ok(())
}

/// The first number of `network_config` that names a computed initialization.
pub(super) fn in_network(
    network: &Map<String, Json>,
    fields: &[&str],
    computed: &HashSet<String>,
) -> Result<(), String> {
    for field in fields.iter().copied().chain(["address"]) {
        check(network.get(field), &format!("network_config {field}"), computed)?;
    }
    Ok(())
}

fn check(value: Option<&Json>, at: &str, computed: &HashSet<String>) -> Result<(), String> {
    match value.and_then(Json::as_str).map(str::trim) {
        Some(name) if computed.contains(name) => Err(refusal(at, name)),
        _ => Ok(()),
    }
}

fn refusal(at: &str, name: &str) -> String {
    format!(
        "{at} names the computed initialization {}: Tomii 1.2 ran it while loading the graph and used its \
         instance 0; this runtime computes initializations when the run starts, after the graph has compiled, \
         so a count, range end, group_by or network number cannot name one; write its value there (or a \
         constant initialization holding it)",
        quote(name)
    )
}
