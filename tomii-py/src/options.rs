//! Run options as Python gives them, `[(name, value), ...]` with the knob catalog's names, made
//! into the launcher's settings: each value converted by its knob's type, then checked and
//! applied by the catalog (`tomii_core::launch::settings`). Wiring only: no option is named here.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyBool;
use tomii_core::graph;
use tomii_core::knobs::{self, Entry, Kind, Value};
use tomii_core::launch::{self, GraphInput, Settings};

use super::{ConfigError, GraphError};

/// The settings `options` make for `entry`; ConfigError names the option at fault.
pub fn settings(entry: Entry, options: Vec<(String, Bound<'_, PyAny>)>) -> PyResult<Settings> {
    let given = options
        .into_iter()
        .map(|(name, value)| {
            let knob =
                knobs::find(&name).ok_or_else(|| ConfigError::new_err(format!("unknown run option {name:?}")))?;
            Ok((name, value_of(knob, &value)?))
        })
        .collect::<PyResult<Vec<_>>>()?;
    launch::settings(entry, given).map_err(ConfigError::new_err)
}

/// `value` as the launcher's value of `knob`'s type.
fn value_of(knob: &knobs::Knob, value: &Bound<'_, PyAny>) -> PyResult<Value> {
    let refused = |_| ConfigError::new_err(format!("{} is {value}: it must be a {}", knob.name, knob.kind.name()));
    Ok(match knob.kind {
        Kind::Int => Value::Int(value.extract().map_err(refused)?),
        Kind::Bool => Value::Bool(value.extract().map_err(refused)?),
        Kind::String => Value::Text(value.extract().map_err(refused)?),
        Kind::Path if knob.flag.bare && value.is_instance_of::<PyBool>() => Value::Bare,
        Kind::Path => Value::Path(value.extract::<PathBuf>().map_err(refused)?),
        Kind::PathList => Value::Paths(value.extract().map_err(refused)?),
        Kind::KeyValueList => Value::Pairs(value.extract().map_err(refused)?),
    })
}

/// The graph `text` (named `source`: its path, when it came from a file) compiled for a run on
/// `workers` workers; `evaluate` computes the initializations a count names before it compiles
/// (graph README, "Computed counts"), with the kernels the run is given.
pub fn graph_input(source: &str, text: &str, workers: u32, evaluate: graph::Evaluate<'_>) -> PyResult<GraphInput> {
    let file = Some(PathBuf::from(source)).filter(|path| path.is_file());
    launch::graph_from_text(source, text.to_owned(), workers, file, evaluate)
        .map_err(|e| GraphError::new_err(e.to_string()))
}
