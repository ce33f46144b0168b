//! Crash reports of the `tomii` command: a plugin that crashes the process (SIGSEGV, SIGBUS,
//! SIGILL, SIGFPE, SIGABRT) or calls `exit()` during a run ends it with one `error:` line naming
//! the plugins, never with a bare "Segmentation fault" or in silence. A crash inside a plugin
//! cannot be contained in the process: this only says what happened, then exits. The line also
//! says whether the report was written: it is written whole or not at all (`files::write_whole`),
//! so a crash leaves no empty or partial report.
//!
//! Who is named depends on when the crash comes: during a run, the run's plugins, unless the host
//! was making the run's state then (`engine::memory::HostAllocating`: an allocation of the host's
//! that failed and aborted is the host's, and the line says so); after a run, the plugins that
//! ran, since memory a plugin corrupted is often found only later, when the C library frees it
//! ("double free or corruption", then SIGABRT); before any run, what was being loaded.
//!
//! The signal handler runs in a broken process: it only loads and stores atomics and calls
//! `write(2)`, `prctl(2)`, `pause(2)` and `_exit(2)`, all async-signal-safe. Everything it prints
//! is formatted before the run, when the plugins are known; it must never allocate, lock, format
//! or panic. The engine's hot path never sees any of this: a flag is set once per run.
//! engine/README.md ("Crashes") describes what is reported and what is not.
//!
//! # Memory ordering
//! `IN_RUN` and a text's length are SeqCst; a text's bytes are relaxed, published by the SeqCst
//! store of its length after them (a crash reads the length first). The workers that may crash
//! start after the text was set, on the thread that set it. `REPORTER`'s compare-exchange makes
//! one thread the reporter.

use std::ffi::{c_int, c_void};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, AtomicUsize, Ordering};

use crate::plugin::{KernelSet, SchedulerPlugin};

/// The signals reported, and what each means.
const SIGNALS: [(c_int, &str); 5] = [
    (libc::SIGSEGV, "SIGSEGV (invalid memory access)"),
    (libc::SIGBUS, "SIGBUS (invalid memory access)"),
    (libc::SIGILL, "SIGILL (illegal instruction)"),
    (libc::SIGFPE, "SIGFPE (arithmetic fault, such as an integer division by zero)"),
    (libc::SIGABRT, "SIGABRT (abort() was called)"),
];

/// What the report says about a fault raised while std's stack-overflow check ran (below).
const STACK_OVERFLOW: &str = "SIGSEGV (a stack overflow)";

/// Set while a run is in progress: a crash or an `exit()` then names the run's plugins.
static IN_RUN: AtomicBool = AtomicBool::new(false);
/// Set once a run started: a crash afterwards names the plugins that ran.
static RAN: AtomicBool = AtomicBool::new(false);
/// The run's plugins, formatted when the run starts.
static PLUGINS: SignalText<4096> = SignalText::new();
/// Whether the run's report is still to be written: set when a run with a report starts, cleared
/// once it is written.
static REPORT_PENDING: AtomicBool = AtomicBool::new(false);
/// What the line says of the report, formatted when the run starts: not written yet, or written.
static REPORT_NOT_WRITTEN: SignalText<2048> = SignalText::new();
static REPORT_WRITTEN: SignalText<2048> = SignalText::new();
/// The line being reported, assembled by the one thread that reports.
static LINE: SignalText<8192> = SignalText::new();
/// The thread reporting a crash (`pthread_self`), or 0.
static REPORTER: AtomicUsize = AtomicUsize::new(0);
/// The signal being reported.
static FIRST_SIGNAL: AtomicI32 = AtomicI32::new(0);
/// Per entry of [`SIGNALS`], the `SA_SIGINFO` handler it replaced, or 0.
static PREVIOUS: [AtomicUsize; SIGNALS.len()] = [const { AtomicUsize::new(0) }; SIGNALS.len()];

/// Installs the crash handlers and the `exit()` report, once per process; later calls do nothing.
/// A handler that cannot be installed is left out (the crash is then reported by the system).
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for (at, &(signal, _)) in SIGNALS.iter().enumerate() {
            PREVIOUS[at].store(replace_handler(signal), Ordering::Relaxed);
        }
        // SAFETY: `report_exit` is a plain function that neither unwinds nor calls `exit`.
        unsafe { libc::atexit(report_exit) };
    });
}

/// A run in progress, for the reports: started with the run's plugins, ended when dropped.
pub struct RunInProgress(());

impl RunInProgress {
    /// Formats the plugins' names and paths for the reports, and what they say of the run's
    /// `report` file (if it writes one), then marks the run in progress.
    pub fn start(scheduler: &SchedulerPlugin, kernels: &KernelSet, report: Option<&std::path::Path>) -> RunInProgress {
        let (not_written, written) = match report {
            Some(path) => (
                format!("; no report was written (--report {})", path.display()),
                format!("; the report ({}) was written before the crash", path.display()),
            ),
            None => (String::new(), String::new()),
        };
        REPORT_NOT_WRITTEN.set(&not_written);
        REPORT_WRITTEN.set(&written);
        REPORT_PENDING.store(report.is_some(), Ordering::SeqCst);
        let libraries: Vec<String> = kernels.libraries().iter().map(|l| l.path.display().to_string()).collect();
        let kernels = match libraries.len() {
            0 => String::new(),
            1 => format!(" or the kernel library {}", libraries[0]),
            _ => format!(" or one of the kernel libraries {}", libraries.join(", ")),
        };
        PLUGINS.set(&format!("the scheduler {:?} ({}){kernels}", scheduler.name, scheduler.path.display()));
        RAN.store(true, Ordering::SeqCst);
        IN_RUN.store(true, Ordering::SeqCst);
        RunInProgress(())
    }
}

/// The run's report is written: a crash from now on says so.
pub fn report_written() {
    REPORT_PENDING.store(false, Ordering::SeqCst);
}

impl Drop for RunInProgress {
    fn drop(&mut self) {
        IN_RUN.store(false, Ordering::SeqCst);
    }
}

/// Ends the process from the host's own code (a run stuck in a plugin), without the report that
/// an `exit()` during a run gets: that report is for plugins.
pub fn exit_from_host(status: i32) -> ! {
    IN_RUN.store(false, Ordering::SeqCst);
    std::process::exit(status)
}

/// Installs [`on_crash`] for `signal` on the alternate signal stack; returns the previous handler
/// if it was an `SA_SIGINFO` function (std's stack-overflow check), else 0.
fn replace_handler(signal: c_int) -> usize {
    // SAFETY: a zeroed `sigaction` is a valid value (no handler, no flags, empty mask).
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    let mut previous: libc::sigaction = action;
    let handler: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) = on_crash;
    action.sa_sigaction = handler as usize;
    action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
    // SAFETY: both structs are valid and live for the calls; `on_crash` only does what a signal
    // handler may (module doc).
    let installed = unsafe {
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(signal, &action, &mut previous)
    };
    let is_function = previous.sa_sigaction != libc::SIG_DFL && previous.sa_sigaction != libc::SIG_IGN;
    if installed == 0 && is_function && previous.sa_flags & libc::SA_SIGINFO != 0 { previous.sa_sigaction } else { 0 }
}

/// The crash handler: reports once, from the first thread that crashed, then exits with
/// 128 + the signal. Another thread crashing meanwhile waits for that exit.
extern "C" fn on_crash(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    // SAFETY: `pthread_self` reads the thread pointer; it does not allocate or lock.
    let me = unsafe { libc::pthread_self() } as usize;
    match REPORTER.compare_exchange(0, me, Ordering::SeqCst, Ordering::SeqCst) {
        Ok(_) => {
            FIRST_SIGNAL.store(signal, Ordering::SeqCst);
            chain(signal, info, context);
            report_crash(meaning(signal));
            exit_now(128 + signal)
        }
        // Raised on this thread by the handler it chained to: std found a stack overflow, said
        // so, and aborted.
        Err(reporter) if reporter == me => {
            let first = FIRST_SIGNAL.load(Ordering::SeqCst);
            report_crash(STACK_OVERFLOW);
            exit_now(128 + first)
        }
        Err(_) => loop {
            // SAFETY: waits for a signal; the reporting thread's `_exit` ends this thread too.
            unsafe { libc::pause() };
        },
    }
}

/// Calls the handler that `signal`'s replaced, if any: Rust's std installs one for SIGSEGV and
/// SIGBUS that reports a stack overflow (a fault in a thread's guard page) and aborts, and
/// otherwise resets the signal to its default and returns. Without this, a stack overflow would
/// be reported as a mere invalid memory access.
fn chain(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    let Some(at) = SIGNALS.iter().position(|&(s, _)| s == signal) else { return };
    let previous = PREVIOUS[at].load(Ordering::Relaxed);
    if previous == 0 || (signal != libc::SIGSEGV && signal != libc::SIGBUS) {
        return;
    }
    // SAFETY: `previous` is the `SA_SIGINFO` handler `sigaction` returned for this signal
    // (`replace_handler`), so it has this signature; it gets the arguments the kernel gave us.
    let handler: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) = unsafe { std::mem::transmute(previous) };
    handler(signal, info, context);
}

/// The name and meaning of `signal`, as the report shows it.
fn meaning(signal: c_int) -> &'static str {
    SIGNALS.iter().find(|&&(s, _)| s == signal).map_or("a fatal signal", |&(_, text)| text)
}

/// Writes the crash line: the signal, the thread, and who is to blame ([`push_crash`]).
fn report_crash(what: &str) {
    let mut line = LINE.writer();
    let when = When::now();
    push_crash(&mut line, what, when);
    line.write_to_stderr();
}

/// When a crash came, as the line tells it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum When {
    /// During a run, in the run's plugins or (`host_allocating`) in the host making its state.
    Run { host_allocating: bool },
    /// After a run, whose plugins stay loaded and may have corrupted memory.
    AfterRun,
    /// Before any run.
    BeforeRun,
}

impl When {
    fn now() -> When {
        if IN_RUN.load(Ordering::SeqCst) {
            When::Run { host_allocating: crate::engine::memory::host_allocating() }
        } else if RAN.load(Ordering::SeqCst) {
            When::AfterRun
        } else {
            When::BeforeRun
        }
    }
}

/// The crash line of `what` (a signal's meaning) at `when`, on the calling thread.
fn push_crash(line: &mut LineWriter, what: &str, when: When) {
    line.push(if matches!(when, When::Run { .. }) {
        "error: the run crashed with "
    } else {
        "error: tomii crashed with "
    });
    line.push(what);
    push_thread(line);
    match when {
        When::Run { host_allocating: true } => {
            line.push(
                ", in the host (not in a plugin) while it made the run's state: most likely an allocation failed \
                 (the line above says how much); use fewer slots (--slots)",
            );
        }
        When::Run { host_allocating: false } => {
            line.push(", in a plugin: ");
            line.push_text(&PLUGINS);
            line.push("; a crash inside a plugin cannot be contained in the process: test it with tomii.check");
        }
        When::AfterRun => {
            line.push(" after the run, which ran ");
            line.push_text(&PLUGINS);
            line.push(
                ": a plugin may have corrupted memory that was found only now (a message of the C library above, \
                 such as \"double free or corruption\", says so); test it with tomii.check",
            );
        }
        When::BeforeRun => {
            line.push("; if it was loading a plugin, the crash may be inside it (test it with tomii.check)");
        }
    }
    push_report(line, when != When::BeforeRun);
    line.push("\n");
}

/// What the line says of the run's report, if the run has one: written or not.
fn push_report(line: &mut LineWriter, ran: bool) {
    if !ran {
        return;
    }
    if REPORT_PENDING.load(Ordering::SeqCst) {
        line.push_text(&REPORT_NOT_WRITTEN);
    } else {
        line.push_text(&REPORT_WRITTEN);
    }
}

/// The `atexit` hook: an `exit()` while a run is in progress came from a plugin (the host's own
/// exits go through [`exit_from_host`] or `_exit`). The exit status stays the plugin's.
extern "C" fn report_exit() {
    if !IN_RUN.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut line = LINE.writer();
    line.push("error: exit() was called during the run");
    push_thread(&mut line);
    line.push(", from a plugin: ");
    line.push_text(&PLUGINS);
    line.push("; the run did not finish");
    push_report(&mut line, true);
    line.push("\n");
    line.write_to_stderr();
}

/// " on thread NAME": the calling thread's name as the kernel knows it (`prctl`, a system call).
fn push_thread(line: &mut LineWriter) {
    #[cfg(target_os = "linux")]
    {
        let mut name = [0u8; 16];
        // SAFETY: PR_GET_NAME writes at most 16 bytes, NUL included, into `name`.
        if unsafe { libc::prctl(libc::PR_GET_NAME, name.as_mut_ptr()) } == 0 {
            let len = name.iter().position(|&b| b == 0).unwrap_or(name.len());
            line.push(" on thread ");
            line.push_bytes(&name[..len]);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = line;
}

fn exit_now(status: c_int) -> ! {
    // SAFETY: `_exit` ends the process at once, without running any more of its code.
    unsafe { libc::_exit(status) }
}

/// Bytes that a signal handler may read while another thread rewrites them: every byte is an
/// atomic, so there is no data race to speak of, only possibly mixed text. Writes are rare (once
/// per run); reads happen only in a crash.
struct SignalText<const N: usize> {
    len: AtomicUsize,
    bytes: [AtomicU8; N],
}

impl<const N: usize> SignalText<N> {
    const fn new() -> Self {
        SignalText { len: AtomicUsize::new(0), bytes: [const { AtomicU8::new(0) }; N] }
    }

    /// Replaces the text with `text`, cut to the capacity.
    fn set(&self, text: &str) {
        self.len.store(0, Ordering::SeqCst);
        let mut writer = self.writer();
        writer.push(text);
        self.len.store(writer.len, Ordering::SeqCst);
    }

    /// A writer that fills the text from its start.
    fn writer(&self) -> LineWriter<'_> {
        LineWriter { bytes: &self.bytes, len: 0 }
    }
}

/// Appends to a [`SignalText`]'s bytes; what does not fit is dropped, but a line keeps its final
/// newline.
struct LineWriter<'t> {
    bytes: &'t [AtomicU8],
    len: usize,
}

impl LineWriter<'_> {
    fn push(&mut self, text: &str) {
        self.push_bytes(text.as_bytes());
    }

    /// Appends `bytes`, or what fits of them; the last byte is kept for a lone "\n".
    fn push_bytes(&mut self, bytes: &[u8]) {
        let end = if bytes == b"\n" { self.bytes.len() } else { self.bytes.len().saturating_sub(1) };
        let room = end.saturating_sub(self.len);
        for (slot, &byte) in self.bytes[self.len..].iter().zip(bytes).take(room) {
            slot.store(byte, Ordering::Relaxed);
            self.len += 1;
        }
    }

    fn push_text<const N: usize>(&mut self, text: &SignalText<N>) {
        let len = text.len.load(Ordering::SeqCst).min(N);
        for byte in &text.bytes[..len] {
            self.push_bytes(&[byte.load(Ordering::Relaxed)]);
        }
    }

    /// Writes the line with `write(2)`, retrying after a partial write or an interruption.
    fn write_to_stderr(&self) {
        let mut done = 0;
        while done < self.len {
            // SAFETY: `AtomicU8` has the layout of `u8`, and `done..len` is inside `bytes`; only
            // this thread writes these bytes while it reports.
            let written = unsafe { libc::write(2, self.bytes[done..].as_ptr().cast(), self.len - done) };
            match written {
                n if n > 0 => done += n as usize,
                _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
                _ => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_too_long_is_cut_and_keeps_its_newline() {
        static TEXT: SignalText<8> = SignalText::new();
        let mut line = TEXT.writer();
        line.push("0123456789");
        line.push("\n");
        let bytes: Vec<u8> = TEXT.bytes[..line.len].iter().map(|b| b.load(Ordering::Relaxed)).collect();
        assert_eq!(bytes, b"0123456\n");
    }

    #[test]
    fn the_line_blames_the_host_or_the_plugins_by_when_the_crash_came() {
        static OUT: SignalText<8192> = SignalText::new();
        let line = |when: When| {
            let mut line = OUT.writer();
            push_crash(&mut line, "SIGABRT (abort() was called)", when);
            let bytes: Vec<u8> = OUT.bytes[..line.len].iter().map(|b| b.load(Ordering::Relaxed)).collect();
            String::from_utf8(bytes).expect("text")
        };
        let host = line(When::Run { host_allocating: true });
        assert!(host.starts_with("error: the run crashed with SIGABRT (abort() was called)"), "{host}");
        assert!(host.contains("in the host (not in a plugin) while it made the run's state"), "{host}");
        assert!(host.contains("use fewer slots (--slots)") && !host.contains("the scheduler"), "{host}");
        let plugin = line(When::Run { host_allocating: false });
        assert!(plugin.contains(", in a plugin: ") && plugin.contains("cannot be contained"), "{plugin}");
        let after = line(When::AfterRun);
        assert!(after.starts_with("error: tomii crashed with SIGABRT"), "{after}");
        assert!(after.contains(" after the run, which ran ") && after.contains("double free or corruption"), "{after}");
        let before = line(When::BeforeRun);
        assert!(before.contains("if it was loading a plugin"), "{before}");
        assert!([host, plugin, after, before].iter().all(|line| line.ends_with('\n') && line.lines().count() == 1));
    }

    #[test]
    fn set_replaces_the_text() {
        static TEXT: SignalText<64> = SignalText::new();
        TEXT.set("a longer text");
        TEXT.set("short");
        static OUT: SignalText<64> = SignalText::new();
        let mut line = OUT.writer();
        line.push_text(&TEXT);
        let bytes: Vec<u8> = OUT.bytes[..line.len].iter().map(|b| b.load(Ordering::Relaxed)).collect();
        assert_eq!(bytes, b"short");
    }
}
