//! Frame sources: who decides that a frame starts, what it reads and where its outputs go
//! (README.md, "Frames and their source"). The engine never starts a frame on its own: when a slot
//! is free it asks the run's [`FrameSource`], and threads outside the worker pool start frames
//! through the run's [`Door`](super::Door).
//!
//! [`Counted`] is the synthetic source (`frames = N`, or unbounded with 0); the programmatic
//! source is [`Session`](super::Session)'s.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use tomii_types::kernel::Value;

use super::FrameOutputs;

/// What a source says when the engine asks it for a frame.
pub enum NextFrame {
    /// Start a frame now: `tag` is the source's own name for it (handed back in [`FrameDone`]);
    /// `inputs` holds one value per input instance of the graph, in input order
    /// (`CompiledGraph::inputs`), empty for a graph without inputs.
    Start { tag: u64, inputs: Vec<Value> },
    /// No frame now; the source starts its next frames through the door.
    NotYet,
    /// No frame ever again: the run ends once the frames in flight completed.
    Done,
}

/// A frame that left its slot.
pub struct FrameDone {
    /// The source's tag of the frame.
    pub tag: u64,
    /// The engine's number of the frame (frames are numbered in the order they start).
    pub frame: u64,
    /// From the frame's start to its last task's completion, in nanoseconds.
    pub latency_ns: u64,
    /// Its sink outputs, when the source wants them (see [`FrameSource::wants_outputs`]).
    pub outputs: Option<FrameOutputs>,
    /// Whether the frame completed. A frame that did not was in flight when the run ended
    /// without it (a failure, or a stop with frames waiting for their inputs).
    pub completed: bool,
    /// Whether the source abandoned the frame (`Door::abandon`): its tasks after that were
    /// skipped, and it does not count among the run's frames or latencies.
    pub abandoned: bool,
}

/// What a frame source can do: the engine asks it (`FrameSource::capabilities`) instead of
/// looking at the graph for the kind of source it has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// It gives the graph's input instances their values (at a frame's start, or one by one). A
    /// graph with inputs cannot run from a source that does not.
    pub gives_inputs: bool,
    /// It opens frames before it has their inputs and delivers each as it comes (`Door::open`,
    /// `Door::deliver`), and may give up on a frame (`Door::abandon`): the door then keeps a place
    /// per input, and every task's body looks at its frame's `abandoned` flag first (README.md,
    /// "Inputs delivered one by one").
    pub delivers_inputs: bool,
}

/// Where a run's frames come from and where their outputs go.
///
/// Called concurrently from the workers and the host thread; `next_frame` and `frame_done` run once
/// per frame, never per task, so a source may take a lock in them.
pub trait FrameSource: Sync {
    /// A slot is free: start a frame in it, not yet, or never again.
    fn next_frame(&self) -> NextFrame;

    /// What the source can do: by default it gives a frame's inputs at its start, all at once.
    fn capabilities(&self) -> Capabilities {
        Capabilities { gives_inputs: true, delivers_inputs: false }
    }

    /// Whether `frame_done` should receive each frame's sink outputs (otherwise they are released
    /// when the slot is reused, and nothing is built per frame).
    fn wants_outputs(&self) -> bool {
        false
    }

    /// A frame left its slot: completed, with its outputs if wanted, or lost.
    fn frame_done(&self, done: FrameDone);

    /// Called once, on the host thread, before the first frame: the door through which threads
    /// outside the worker pool start frames. An error fails the run before it starts.
    fn attach(&self, door: &std::sync::Arc<super::Door>) -> Result<(), super::RunError> {
        let _ = door;
        Ok(())
    }

    /// What the report calls this source.
    fn kind(&self) -> &'static str;

    /// Called once, on the host thread, after the run (the workers joined, every frame handed
    /// back): stops whatever the source runs and returns its section of the report, which the
    /// report holds under the source's `kind`.
    fn finish(&self) -> Option<serde_json::Value> {
        None
    }

    /// Why the source ended the run as a failure, if it did (the network source, when no packet
    /// came for its idle timeout: README.md, "The end of a run"). Asked once, after the run's
    /// frames completed and before the post-nodes: the run then fails with it, keeping what it did.
    fn failure(&self) -> Option<super::RunError> {
        None
    }

    /// How many frames the source will give in all, when it knows (for progress).
    fn planned(&self) -> Option<u64> {
        None
    }

    /// The frames' outputs collected so far, taken out of the source: for an outcome made before
    /// the run returns (a stuck call's, handed to `on_hang`), which the run's caller cannot
    /// complete with them afterwards. Empty for a source that hands outputs out frame by frame.
    fn take_outputs(&self) -> Vec<FrameOutputs> {
        Vec::new()
    }
}

/// The synthetic source: frames 0 .. `frames` without inputs, or without end when `frames` is 0;
/// with `collect`, it keeps every frame's outputs, in frame order.
pub struct Counted {
    frames: u64,
    issued: AtomicU64,
    /// Per frame (by the engine's frame number: the kernels' context has it), when collecting.
    outputs: Option<Mutex<Vec<FrameOutputs>>>,
}

impl Counted {
    pub fn new(frames: u64, collect: bool) -> Self {
        let outputs = collect.then(|| Mutex::new(Vec::new()));
        Counted { frames, issued: AtomicU64::new(0), outputs }
    }

    /// The outputs collected, one entry per frame in frame order (empty without `collect`).
    pub fn into_outputs(self) -> Vec<FrameOutputs> {
        self.take_outputs()
    }
}

impl FrameSource for Counted {
    fn next_frame(&self) -> NextFrame {
        let tag = self.issued.fetch_add(1, Ordering::Relaxed);
        if self.frames == 0 || tag < self.frames {
            NextFrame::Start { tag, inputs: Vec::new() }
        } else {
            NextFrame::Done
        }
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities { gives_inputs: false, delivers_inputs: false }
    }

    fn wants_outputs(&self) -> bool {
        self.outputs.is_some()
    }

    fn frame_done(&self, done: FrameDone) {
        let (Some(outputs), Some(frame)) = (&self.outputs, done.outputs) else { return };
        let mut outputs = outputs.lock().unwrap_or_else(|p| p.into_inner());
        let at = done.frame as usize;
        if outputs.len() <= at {
            outputs.resize_with(at + 1, Vec::new);
        }
        outputs[at] = frame;
    }

    fn kind(&self) -> &'static str {
        "counted"
    }

    fn planned(&self) -> Option<u64> {
        (self.frames > 0).then_some(self.frames)
    }

    fn take_outputs(&self) -> Vec<FrameOutputs> {
        self.outputs
            .as_ref()
            .map(|o| std::mem::take(&mut *o.lock().unwrap_or_else(|p| p.into_inner())))
            .unwrap_or_default()
    }
}
