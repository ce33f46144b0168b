//! The trace as CSV (`tomii run --trace FILE`, `run_graph(trace=FILE)` and
//! `RunResult.save_trace(FILE)`): a header, then one row per task execution,
//! `node,instance,frame,slot,worker,ready_ns,start_ns,end_ns`, with the node by name (quoted when
//! it holds a separator or a quote) and times in ns since the run started.
//!
//! Written on the host thread (as the trace streams in, or from a trace kept in memory), never on
//! a worker.

use std::io::Write;

use super::TaskRecord;

/// The columns, in the file's order: [`TaskRecord`]'s fields, the node written by its name.
pub const CSV_COLUMNS: [&str; 8] = ["node", "instance", "frame", "slot", "worker", "ready_ns", "start_ns", "end_ns"];

/// Writes a trace CSV to `out`, records as they come.
pub struct CsvTrace<W: Write> {
    out: W,
    /// The node names as CSV fields, quoted once.
    names: Vec<String>,
}

impl<W: Write> CsvTrace<W> {
    /// Starts the file: its header. `node_names` are the graph's, which records' `node` index.
    pub fn begin(mut out: W, node_names: &[String]) -> std::io::Result<Self> {
        writeln!(out, "{}", CSV_COLUMNS.join(","))?;
        Ok(CsvTrace { out, names: node_names.iter().map(|name| csv_field(name)).collect() })
    }

    /// Writes `records`' rows; a record whose node is not one of the names is an error.
    pub fn records(&mut self, records: &[TaskRecord]) -> std::io::Result<()> {
        for r in records {
            let Some(name) = self.names.get(r.node as usize) else {
                let message =
                    format!("node {} of frame {} is not one of the {} nodes", r.node, r.frame, self.names.len());
                return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, message));
            };
            writeln!(
                self.out,
                "{name},{},{},{},{},{},{},{}",
                r.instance, r.frame, r.slot, r.worker, r.ready_ns, r.start_ns, r.end_ns
            )?;
        }
        Ok(())
    }

    /// Flushes the file; returns the writer.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// A CSV field: quoted, with inner quotes doubled, when it holds a separator or a quote.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) { format!("\"{}\"", text.replace('"', "\"\"")) } else { text.to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_columns_are_the_fields_of_the_record() {
        let mut columns = CSV_COLUMNS.to_vec();
        let mut fields: Vec<&str> = TaskRecord::FIELDS.iter().map(|field| field.name).collect();
        columns.sort_unstable();
        fields.sort_unstable();
        assert_eq!(columns, fields);
    }

    #[test]
    fn rows_name_the_node_and_quote_it_when_they_must() {
        let names = ["a,b".to_owned(), "say \"hi\"".to_owned(), "c".to_owned()];
        let mut trace = CsvTrace::begin(Vec::new(), &names).unwrap();
        let record =
            |node| TaskRecord { node, frame: 3, ready_ns: 10, start_ns: 20, end_ns: 30, ..TaskRecord::default() };
        trace.records(&[record(0), record(1), record(2)]).unwrap();
        let text = String::from_utf8(trace.finish().unwrap()).unwrap();
        assert_eq!(
            text,
            "node,instance,frame,slot,worker,ready_ns,start_ns,end_ns\n\"a,b\",0,3,0,0,10,20,30\n\
             \"say \"\"hi\"\"\",0,3,0,0,10,20,30\nc,0,3,0,0,10,20,30\n"
        );
        let mut trace = CsvTrace::begin(Vec::new(), &names).unwrap();
        assert!(trace.records(&[record(3)]).is_err());
    }
}
