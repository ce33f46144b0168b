//! The files a run writes besides the CSV trace the engine streams: the report, Tomii 1.2's timing
//! file and scheduler record, the Chrome trace and the decisions file. Each is created before the
//! run (an unwritable path fails before the run is spent), fed by its trace tap as the run goes,
//! and ended once with the report, whole or partial, so that a failed or interrupted run keeps
//! what it did.
//!
//! Nothing here runs on a worker; every file is written on the host thread.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::engine::{ChromeLayout, ChromeTraceFile, RecordTapRef, Report, RunConfig, TraceTap};
use crate::graph::CompiledGraph;
use crate::replay::DecisionsFile;

use super::{Files, Record, Timing};

/// A run's files, open.
pub struct Outputs {
    report: Option<PathBuf>,
    /// The CSV trace (the engine writes it; named here for what a failed run kept).
    trace: Option<PathBuf>,
    chrome: Option<ChromeTraceFile>,
    timing: Option<Timing>,
    record: Option<Record>,
    /// Created when the run starts, once its scheduler is known.
    decisions: OnceLock<DecisionsFile>,
}

/// What ending the files did: what each holds, and the errors met (each file is tried).
#[derive(Debug, Default)]
pub struct Written {
    /// "the report (PATH)", "the trace (PATH)", ...: the files that hold what ran.
    pub kept: Vec<String>,
    pub errors: Vec<String>,
}

impl Written {
    /// The first error, if any.
    pub fn result(&self) -> Result<(), String> {
        self.errors.first().cloned().map_or(Ok(()), Err)
    }
}

impl Outputs {
    /// Checks that every file of `files` can be written without blocking and without destroying
    /// the graph file (`graph_file`, if the graph came from one), then creates those written
    /// through taps.
    pub(super) fn create(
        files: &Files,
        graph: &CompiledGraph,
        config: &RunConfig,
        graph_file: Option<&Path>,
    ) -> Result<Outputs, String> {
        for (option, path) in files.paths() {
            crate::files::check_writable(&path, option, graph_file.map(|file| ("the graph file", file)))?;
        }
        let chrome = files
            .chrome_trace()
            .map(|path| ChromeTraceFile::create(&path, ChromeLayout::of(graph, config)))
            .transpose()?;
        let record =
            files.record_path().map(|path| Record::create(&path, graph, config, files.record_frame)).transpose()?;
        Ok(Outputs {
            report: files.report.clone(),
            trace: files.csv_trace(),
            chrome,
            timing: files.timing.as_deref().map(|path| Timing::new(path, graph, config)),
            record,
            decisions: OnceLock::new(),
        })
    }

    /// The taps that feed the files as the trace streams in.
    pub(super) fn taps(&self) -> Vec<TraceTap> {
        let timing = self.timing.iter().map(Timing::tap);
        timing.chain(self.chrome.iter().map(ChromeTraceFile::tap)).collect()
    }

    /// The scheduler record's tap, if it is written.
    pub(super) fn record_taps(&self) -> Vec<RecordTapRef> {
        self.record.iter().map(Record::tap).collect()
    }

    /// Keeps the decisions file, created when the run starts; its tap.
    pub(super) fn keep_decisions(&self, file: DecisionsFile) -> TraceTap {
        self.decisions.get_or_init(|| file).tap()
    }

    /// Ends every file with the run's report (none: the run never started): writes the report and
    /// the timing file, ends the Chrome trace, the record and the decisions file (with how the run ended).
    pub fn finish(&self, report: Option<&Report>) -> Written {
        let mut written = Written::default();
        let mut keep = |what: &str, path: &Path, result: Result<(), String>| match result {
            Ok(()) => written.kept.push(format!("{what} ({})", path.display())),
            Err(error) => written.errors.push(error),
        };
        if let (Some(path), Some(report)) = (&self.report, report) {
            keep("the report", path, write_report(path, report));
        }
        if let (Some(timing), Some(report)) = (&self.timing, report) {
            keep("the timing file", timing.path(), timing.write(report));
        }
        if let Some(record) = &self.record {
            let what = match record.lost() {
                0 => "the record".to_owned(),
                lost => format!("the record, without {lost} dispatch and packet rows the host fell behind on,"),
            };
            keep(&what, record.path(), record.finish());
        }
        if let Some(chrome) = &self.chrome {
            keep("the trace", chrome.path(), chrome.finish(report));
        }
        if let Some(decisions) = self.decisions.get() {
            keep("the decisions file", decisions.path(), decisions.finish(report));
        }
        if let (Some(path), Some(_)) = (&self.trace, report) {
            written.kept.push(format!("the trace ({})", path.display()));
        }
        written
    }
}

/// Writes `report` as pretty JSON, with a last newline, whole or not at all
/// (`files::write_whole`): the path never holds a partial or empty report.
pub fn write_report(path: &Path, report: &Report) -> Result<(), String> {
    let text = serde_json::to_string_pretty(report)
        .map_err(|e| format!("{}: cannot write the report: {e}", path.display()))?;
    crate::files::write_whole(path, (text + "\n").as_bytes())
        .map_err(|e| format!("{}: cannot write the report: {e}", path.display()))
}
