//! A run's settings, made from a list of (name, value) options by the knob catalog's rows: the
//! engine's `RunConfig` and what the launcher itself does with the rest (which scheduler and
//! kernels, which files, the time limit). No option is read anywhere else by name.

use std::path::PathBuf;

use crate::engine::RunConfig;
use crate::knobs::{self, Entry, Value};
use crate::plugin::{KernelLibrary, KernelSet, PluginError, SchedulerPlugin};

/// Everything the options of a run say.
#[derive(Clone, Debug)]
pub struct Settings {
    /// What the engine is told.
    pub run: RunConfig,
    /// Kernel libraries.
    pub dylibs: Vec<PathBuf>,
    /// The scheduler by name, unless `scheduler_plugin` gives its file.
    pub scheduler: String,
    pub scheduler_plugin: Option<PathBuf>,
    pub files: Files,
    /// Stop after this many seconds, as Ctrl-C does; 0: no limit.
    pub max_runtime_s: u64,
    /// Print nothing but errors.
    pub quiet: bool,
    /// Print every graph warning, not one line per kind (graph/README.md, "Warnings").
    pub verbose: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            run: RunConfig::default(),
            dylibs: Vec::new(),
            scheduler: "fifo".to_owned(),
            scheduler_plugin: None,
            files: Files::default(),
            max_runtime_s: 0,
            quiet: false,
            verbose: false,
        }
    }
}

impl Settings {
    /// The scheduler the options name: `scheduler_plugin`'s file, else `scheduler` on the search
    /// path.
    pub fn scheduler(&self) -> Result<SchedulerPlugin, PluginError> {
        match &self.scheduler_plugin {
            Some(path) => SchedulerPlugin::load(path),
            None => SchedulerPlugin::find(&self.scheduler),
        }
    }

    /// The kernels of the options' libraries, with `extra` (kernels a front end provides).
    pub fn kernels(&self, extra: Option<KernelLibrary>) -> Result<KernelSet, PluginError> {
        let mut kernels = KernelSet::load(&self.dylibs)?;
        if let Some(library) = extra {
            kernels.add(library)?;
        }
        Ok(kernels)
    }
}

/// The files a run writes, by path.
#[derive(Clone, Debug, Default)]
pub struct Files {
    pub report: Option<PathBuf>,
    /// The trace, streamed as the run goes, in `trace_format`.
    pub trace: Option<PathBuf>,
    pub trace_format: TraceFormat,
    /// Tomii 1.2's timing file.
    pub timing: Option<PathBuf>,
    /// Tomii 1.2's scheduler record.
    pub record: Option<RecordAt>,
    /// Keep only this frame's rows in the record (Tomii 1.2's `--record-stream`).
    pub record_frame: Option<u64>,
    /// The decisions file, for `tomii replay`.
    pub decisions: Option<PathBuf>,
}

impl Files {
    /// Where the scheduler record goes, if asked for: the path given, or where Tomii 1.2 put it,
    /// beside the timing file as `NAME_sched.csv` (NAME: the timing file's name up to its first
    /// dot), else `scheduler_record.csv`.
    pub fn record_path(&self) -> Option<PathBuf> {
        match self.record.as_ref()? {
            RecordAt::Path(path) => Some(path.clone()),
            RecordAt::Beside => Some(match &self.timing {
                None => PathBuf::from("scheduler_record.csv"),
                Some(timing) => {
                    let name = timing.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                    let stem = name.split('.').next().unwrap_or_default();
                    timing.with_file_name(format!("{stem}_sched.csv"))
                }
            }),
        }
    }

    /// Every path the run writes to, the trace's included, each with the option that gave it (its
    /// flag in the catalog: `--report`), for messages.
    pub fn paths(&self) -> Vec<(&'static str, PathBuf)> {
        let given = [("trace", &self.trace), ("report", &self.report), ("timing", &self.timing)];
        let mut paths: Vec<(&'static str, PathBuf)> =
            given.into_iter().filter_map(|(knob, path)| Some((flag(knob), path.clone()?))).collect();
        paths.extend(self.record_path().map(|path| (flag("record"), path)));
        paths.extend(self.decisions.clone().map(|path| (flag("record_decisions"), path)));
        paths
    }

    /// The CSV trace file the engine streams to; a Chrome trace is written by a tap instead.
    pub fn csv_trace(&self) -> Option<PathBuf> {
        self.trace.clone().filter(|_| self.trace_format == TraceFormat::Csv)
    }

    /// The trace file in Chrome's format, if that is the trace's format.
    pub fn chrome_trace(&self) -> Option<PathBuf> {
        self.trace.clone().filter(|_| self.trace_format == TraceFormat::Chrome)
    }
}

/// The command-line flag of the catalog's knob `name` (`--report`).
fn flag(name: &'static str) -> &'static str {
    knobs::find(name).map_or(name, |knob| knob.cli)
}

/// Where the scheduler record goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordAt {
    Path(PathBuf),
    /// Where Tomii 1.2 put it ([`Files::record_path`]).
    Beside,
}

/// The trace file's format (its words are declared in the catalog).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TraceFormat {
    /// One row per task execution.
    #[default]
    Csv,
    /// The trace-event JSON that Perfetto and chrome://tracing open.
    Chrome,
}

/// The settings that `given` options make for `entry`, from the defaults: each option is found
/// in the catalog, checked against its kind and domain, and applied by its row. An option the
/// entry does not take is refused, naming the ones it takes.
pub fn settings(entry: Entry, given: impl IntoIterator<Item = (String, Value)>) -> Result<Settings, String> {
    let mut settings = Settings::default();
    for (name, value) in given {
        let Some(knob) = knobs::find(&name).filter(|knob| knob.takes.entry(entry)) else {
            let taken: Vec<&str> = knobs::taken_by(entry).map(|knob| knob.name).collect();
            return Err(format!("{} takes no option {name:?}; its options: {}", entry.name(), taken.join(", ")));
        };
        knob.check(&value)?;
        (knob.apply)(&mut settings, value);
    }
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knobs::{CATALOG, Preset};

    /// A knob's catalog default as the value a front end gives for it (none when unset).
    fn default_value(preset: Preset) -> Option<Value> {
        match preset {
            Preset::Unset | Preset::Empty => None,
            Preset::Int(value) => Some(Value::Int(value)),
            Preset::Bool(value) => Some(Value::Bool(value)),
            Preset::Text(text) => Some(Value::Text(text.to_owned())),
        }
    }

    /// Every knob given its default changes nothing: the catalog's defaults are the settings'.
    #[test]
    fn the_catalog_defaults_are_the_default_settings() {
        for entry in [Entry::Run, Entry::Session] {
            let given = knobs::taken_by(entry)
                .filter_map(|knob| default_value(knob.default_for(entry)).map(|value| (knob.name.to_owned(), value)));
            let made = settings(entry, given).unwrap();
            assert_eq!(format!("{made:?}"), format!("{:?}", Settings::default()), "{entry:?}");
        }
    }

    /// A value of `knob`'s kind other than its default.
    fn other_value(knob: &knobs::Knob) -> Value {
        use knobs::{Domain, Kind};
        match (knob.kind, knob.domain, knob.default) {
            (Kind::Int, Domain::Int { min, .. }, Preset::Int(default)) => {
                Value::Int(if default == min { min + 1 } else { min })
            }
            // An option unset by default (`record_stream`): any value sets it.
            (Kind::Int, Domain::Int { min, .. }, Preset::Unset) => Value::Int(min),
            (Kind::Bool, _, Preset::Bool(default)) => Value::Bool(!default),
            (Kind::String, Domain::Choice(words), Preset::Text(default)) => {
                Value::Text(words.iter().find(|word| **word != default).expect("two words").to_string())
            }
            (Kind::String, _, _) => Value::Text("other".to_owned()),
            (Kind::Path, _, _) => Value::Path(PathBuf::from("p")),
            (Kind::PathList, _, _) => Value::Paths(vec![PathBuf::from("p")]),
            (Kind::KeyValueList, _, _) => Value::Pairs(vec![("k".to_owned(), "v".to_owned())]),
            _ => panic!("{}: a default that does not fit its kind", knob.name),
        }
    }

    #[test]
    fn every_row_applies_its_value() {
        for knob in CATALOG {
            let value = other_value(knob);
            let mut made = Settings::default();
            knob.check(&value).unwrap_or_else(|e| panic!("{}: {e}", knob.name));
            (knob.apply)(&mut made, value);
            assert_ne!(format!("{made:?}"), format!("{:?}", Settings::default()), "{} changed nothing", knob.name);
        }
    }

    #[test]
    fn an_option_the_entry_does_not_take_is_refused_naming_those_it_takes() {
        let error = settings(Entry::Session, [("frames".to_owned(), Value::Int(3))]).unwrap_err();
        assert!(error.starts_with("a session takes no option \"frames\"; its options: "), "{error}");
        assert!(error.contains("workers"), "{error}");
        let error = settings(Entry::Run, [("workers".to_owned(), Value::Bool(true))]).unwrap_err();
        assert!(error.starts_with("workers takes a value of type int, not Bool(true)"), "{error}");
        let error = settings(Entry::Run, [("on_slots_busy".to_owned(), Value::Text("x".into()))]).unwrap_err();
        assert!(error.starts_with("on_slots_busy is \"x\": it must be one of \"drop\", \"wait\""), "{error}");
    }

    #[test]
    fn a_bare_record_goes_where_tomii_1_2_put_it() {
        let mut files = Files { record: Some(RecordAt::Beside), ..Files::default() };
        assert_eq!(files.record_path(), Some(PathBuf::from("scheduler_record.csv")));
        files.timing = Some(PathBuf::from("out/t.1.txt"));
        assert_eq!(files.record_path(), Some(PathBuf::from("out/t_sched.csv")));
    }
}
