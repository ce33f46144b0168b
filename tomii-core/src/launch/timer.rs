//! The time limit of a run (`max_runtime_s`): a thread that sets the run's stop flag once the
//! limit has passed, as Ctrl-C does, unless the timer is dropped first.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::Duration;

/// Sets a run's stop flag once `limit` has passed (`max_runtime_s`): the run then completes the
/// frames in flight and reports, as after Ctrl-C. Dropping it before cancels it.
pub struct StopTimer {
    cancel: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl StopTimer {
    /// Starts the timer: after `limit`, it sets `fired` and `stop`.
    pub fn start(stop: Arc<AtomicBool>, fired: Arc<AtomicBool>, limit: Duration) -> std::io::Result<StopTimer> {
        let (cancel, cancelled) = channel::<()>();
        let thread = std::thread::Builder::new().name("tomii-max-runtime".into()).spawn(move || {
            if let Err(RecvTimeoutError::Timeout) = cancelled.recv_timeout(limit) {
                fired.store(true, Ordering::Relaxed);
                stop.store(true, Ordering::Relaxed);
            }
        })?;
        Ok(StopTimer { cancel: Some(cancel), thread: Some(thread) })
    }
}

impl Drop for StopTimer {
    fn drop(&mut self) {
        drop(self.cancel.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancelled_timer_never_stops_the_run() {
        let (stop, fired) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        let timer = StopTimer::start(Arc::clone(&stop), Arc::clone(&fired), Duration::from_secs(3600)).unwrap();
        drop(timer);
        assert!(!stop.load(Ordering::Relaxed) && !fired.load(Ordering::Relaxed));
        let timer = StopTimer::start(Arc::clone(&stop), Arc::clone(&fired), Duration::from_millis(1)).unwrap();
        while !stop.load(Ordering::Relaxed) {
            std::thread::yield_now();
        }
        drop(timer); // joins the timer's thread: its stores are seen
        assert!(fired.load(Ordering::Relaxed));
    }
}
