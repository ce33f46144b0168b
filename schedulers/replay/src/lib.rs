//! `replay`: the scheduler of `tomii replay` (tomii-core/src/replay.rs), `libtomii_replay.so`. Option `decisions=FILE`, a
//! decisions file (`--record-decisions`): each worker is handed the tasks it ran when the file was
//! recorded, in that order, and nothing else; a task is held until the worker it belongs to asks
//! for it. Not a policy to compare: without the file it refuses to start. See README.md.

#![deny(unsafe_code)]

use std::collections::{HashMap, VecDeque};
use std::ffi::CStr;
use std::io::BufRead;
use std::sync::{Mutex, MutexGuard, PoisonError};

use tomii_types::abi::TomiiKnobDesc;
use tomii_types::scheduler::{InitInfo, Scheduler, Task, knob};

/// A task as the file names it: (frame, node, instance within the node).
type Key = (u64, u32, u32);

pub struct Replay {
    state: Mutex<State>,
}

struct State {
    /// Per worker: the tasks it is still to run, in order.
    queues: Vec<VecDeque<Key>>,
    /// Pushed and not handed out yet.
    held: HashMap<Key, Task>,
    replayed: u64,
}

impl Replay {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Scheduler for Replay {
    const NAME: &'static CStr = c"replay";
    const KNOBS: &'static [TomiiKnobDesc] = &[knob(
        c"decisions",
        c"path",
        c"",
        c"a decisions file",
        c"The decisions file to replay (written by --record-decisions); tomii replay gives it.",
    )];

    fn create(init: &InitInfo) -> Result<Self, String> {
        let path = init.knob("decisions").ok_or(
            "the replay scheduler replays a decisions file: give decisions=FILE (tomii replay FILE does); \
             record one with --record-decisions",
        )?;
        let file = std::fs::File::open(path).map_err(|e| format!("{path}: cannot read the decisions: {e}"))?;
        let mut queues = vec![VecDeque::new(); init.workers as usize];
        for (index, line) in std::io::BufReader::new(file).lines().enumerate().skip(1) {
            let line = line.map_err(|e| format!("{path}: {e}"))?;
            // Empty lines, and the JSON lines that end the file (how the run ended, what a
            // checker found: tomii replay reads them).
            if line.is_empty() || line.starts_with('{') {
                continue;
            }
            let bad = || format!("{path}: line {}: not worker,frame,node,instance,start_ns,end_ns", index + 1);
            let fields: Vec<u64> =
                line.split(',').map(|f| f.trim().parse::<u64>()).collect::<Result<_, _>>().map_err(|_| bad())?;
            let [worker, frame, node, instance, _start, _end] = fields[..] else { return Err(bad()) };
            let queue = queues.get_mut(worker as usize).ok_or_else(|| {
                format!("{path}: line {}: worker {worker}, but the run has {} workers", index + 1, init.workers)
            })?;
            queue.push_back((frame, node as u32, instance as u32));
        }
        Ok(Replay { state: Mutex::new(State { queues, held: HashMap::new(), replayed: 0 }) })
    }

    fn push(&self, _worker: Option<u32>, tasks: &[Task]) -> Result<(), String> {
        let mut state = self.state();
        for task in tasks {
            state.held.insert((task.frame, task.node, task.instance), *task);
        }
        Ok(())
    }

    fn pop(&self, worker: u32, out: &mut [Task]) -> Result<usize, String> {
        let mut state = self.state();
        let Some(&next) = state.queues.get(worker as usize).and_then(VecDeque::front) else { return Ok(0) };
        let Some(task) = state.held.remove(&next) else { return Ok(0) };
        state.queues[worker as usize].pop_front();
        state.replayed += 1;
        out[0] = task;
        Ok(1)
    }

    /// How far the replay got: tasks handed out, and what each worker waits for next.
    fn stats(&self) -> String {
        let state = self.state();
        let waiting: Vec<serde_json::Value> = state
            .queues
            .iter()
            .enumerate()
            .filter_map(|(worker, queue)| {
                queue.front().map(|&(frame, node, instance)| {
                    serde_json::json!({"worker": worker, "frame": frame, "node": node, "instance": instance,
                                       "held": state.held.contains_key(&(frame, node, instance))})
                })
            })
            .collect();
        // Held tasks no worker waits for next: the first few, oldest frame first.
        let mut unasked: Vec<&Key> =
            state.held.keys().filter(|key| !state.queues.iter().any(|q| q.front() == Some(*key))).collect();
        unasked.sort_unstable();
        let unasked: Vec<serde_json::Value> = unasked
            .into_iter()
            .take(5)
            .map(|&(frame, node, instance)| serde_json::json!({"frame": frame, "node": node, "instance": instance}))
            .collect();
        serde_json::json!({"replayed": state.replayed, "waiting": waiting, "held": state.held.len(), "unasked": unasked})
            .to_string()
    }
}

tomii_types::export_scheduler!(Replay);

#[cfg(test)]
mod tests {
    use super::*;
    use tomii_types::scheduler::testing;

    #[test]
    fn each_worker_gets_its_recorded_tasks_in_order() {
        let dir = std::env::temp_dir().join(format!("tomii-replay-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("d.csv");
        std::fs::write(&file, "{\"header\": true}\n1,0,0,1,5,6\n0,0,0,0,0,1\n1,0,0,0,9,10\n{\"end\": {}}\n").unwrap();
        let path = file.display().to_string();
        let replay = Replay::create(&testing::init(2, &[(0, 2)], &[("decisions", &path)])).unwrap();
        let task = |instance| Task { frame: 0, node: 0, instance, handle: u64::from(instance), ..Task::default() };
        let mut out = [Task::default(); 4];
        assert_eq!(replay.pop(1, &mut out).unwrap(), 0, "nothing pushed yet");
        replay.push(None, &[task(0)]).unwrap();
        assert_eq!(replay.pop(1, &mut out).unwrap(), 0, "worker 1 runs instance 1 first");
        assert_eq!(replay.pop(0, &mut out).unwrap(), 1);
        assert_eq!(out[0].instance, 0);
        replay.push(None, &[task(1)]).unwrap();
        assert_eq!(replay.pop(1, &mut out).unwrap(), 1);
        assert_eq!(out[0].instance, 1);
        assert!(replay.stats().contains("\"replayed\":2"), "{}", replay.stats());
        let _ = std::fs::remove_dir_all(dir);
        assert!(Replay::create(&testing::init(1, &[(0, 1)], &[])).is_err_and(|e| e.contains("decisions=FILE")));
    }
}
