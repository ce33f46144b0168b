//! The graph boundary's error type. Every message is one line that starts with the source name,
//! names the node, argument or field at fault, and says what to do.
//!
//! Internal passes report an [`Issue`] (no file name); `mod.rs` attaches the source name. User text
//! (names, paths) is always quoted or escaped here, so a newline in a name never splits a message.

use std::fmt;
use std::io;

/// Why a graph could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    /// The file could not be read.
    #[error("{file}: cannot read the graph file: {source}; check the path and its permissions")]
    Read {
        file: String,
        #[source]
        source: io::Error,
    },
    /// The text is not JSON.
    #[error("{file}: not valid JSON: {message}; fix the syntax there")]
    Syntax { file: String, message: String },
    /// The JSON does not describe a valid graph.
    #[error("{file}: {message}")]
    Invalid { file: String, message: String },
    /// The graph uses a part of the full format that this runtime does not implement yet.
    #[error("{file}: {what} is not supported by this runtime yet; remove it from the graph")]
    Unsupported { file: String, what: String },
    /// The instance graph has a cycle.
    #[error("{file}: the graph has a cycle: {cycle}; remove one of these edges")]
    Cycle { file: String, cycle: String },
    /// The graph is valid but exceeds a size limit of the runtime.
    #[error("{file}: {message}")]
    TooLarge { file: String, message: String },
}

impl GraphError {
    /// The source name (file) the error is about.
    pub fn file(&self) -> &str {
        match self {
            GraphError::Read { file, .. }
            | GraphError::Syntax { file, .. }
            | GraphError::Invalid { file, .. }
            | GraphError::Unsupported { file, .. }
            | GraphError::Cycle { file, .. }
            | GraphError::TooLarge { file, .. } => file,
        }
    }
}

/// A problem found by an internal pass, before the source name is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Issue {
    Invalid(String),
    Unsupported(String),
    Cycle(String),
    TooLarge(String),
}

impl Issue {
    /// The message alone.
    pub(crate) fn into_message(self) -> String {
        match self {
            Issue::Invalid(m) | Issue::Unsupported(m) | Issue::Cycle(m) | Issue::TooLarge(m) => m,
        }
    }

    /// Attaches the source name.
    pub(crate) fn into_error(self, file: &str) -> GraphError {
        let file = one_line(file);
        match self {
            Issue::Invalid(message) => GraphError::Invalid { file, message },
            Issue::Unsupported(what) => GraphError::Unsupported { file, what },
            Issue::Cycle(cycle) => GraphError::Cycle { file, cycle },
            Issue::TooLarge(message) => GraphError::TooLarge { file, message },
        }
    }
}

/// Where in the file a problem is; displayed only when an error is reported, so the passes never
/// format a location on the success path.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Place<'a> {
    Top,
    InitAt(usize),
    Init(&'a str),
    NodeAt(usize),
    Node(&'a str),
    InputAt(usize),
    Input(&'a str),
    Arg(&'a str, ArgGroup, usize),
    InitArg(&'a str, usize),
    Pred(&'a str, ArgGroup, usize),
    /// The `network_config` block.
    Network,
}

/// Which argument list of a node an argument belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ArgGroup {
    /// `args`: the kernel's arguments.
    Kernel,
    /// `loop_args`: what the first iteration of a loop receives after `args`.
    Loop,
    /// `condition.args`: the condition function's arguments.
    Condition,
}

impl fmt::Display for ArgGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ArgGroup::Kernel => "argument",
            ArgGroup::Loop => "loop argument",
            ArgGroup::Condition => "condition argument",
        })
    }
}

impl fmt::Display for Place<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Top => f.write_str("the top-level object"),
            Place::InitAt(k) => write!(f, "initializations[{k}]"),
            Place::Init(name) => write!(f, "initialization {}", quote(name)),
            Place::NodeAt(k) => write!(f, "nodes[{k}]"),
            Place::Node(name) => write!(f, "node {}", quote(name)),
            Place::InputAt(k) => write!(f, "inputs[{k}]"),
            Place::Input(name) => write!(f, "input {}", quote(name)),
            Place::Arg(name, group, k) => write!(f, "node {} {group} {k}", quote(name)),
            Place::InitArg(name, k) => write!(f, "initialization {} argument {k}", quote(name)),
            Place::Pred(name, group, k) => write!(f, "the predecessor of node {} {group} {k}", quote(name)),
            Place::Network => f.write_str("network_config"),
        }
    }
}

/// Shorthand for an [`Issue::Invalid`] error.
pub(crate) fn invalid<T>(message: String) -> Result<T, Issue> {
    Err(Issue::Invalid(message))
}

/// Names longer than this are shortened in messages.
const NAME_IN_MESSAGES: usize = 64;

/// `text` quoted and escaped as a JSON-ish string literal (`"a\nb"`), for names in messages; a
/// long one is cut (`"abc…" (a name of 1048576 bytes)`), so that a message stays a line.
pub fn quote(text: &str) -> String {
    if text.len() <= NAME_IN_MESSAGES {
        return format!("{text:?}");
    }
    let mut cut = NAME_IN_MESSAGES - 16;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{:?} (a name of {} bytes)", format!("{}…", &text[..cut]), text.len())
}

/// `text` with control characters escaped, so that it cannot break a one-line message.
pub(crate) fn one_line(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_owned();
    }
    text.chars().map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() }).collect()
}
