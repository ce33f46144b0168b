//! The knob catalog: every run option, declared once ([`CATALOG`], in `catalog.rs`), with its type,
//! default, domain, role, description and search hint, which entry points take it and how it
//! applies to a run. `tomii knobs` prints it; the CLI's flags are made from it (`cli/options.rs`),
//! the launcher applies it (`launch/`), and the Python binding reads the same table, so an option
//! has one name, one default and one domain everywhere.
//!
//! Data, its checks and its rendering: no clap, no I/O, no run.

mod catalog;

use std::path::PathBuf;
use std::time::Duration;

use serde::ser::{Serialize, SerializeMap, SerializeStruct, Serializer};

pub use catalog::CATALOG;

use crate::launch::{RecordAt, Settings};

/// The version of the JSON shape `tomii knobs --json` prints; bumped when a field changes meaning.
pub const FORMAT_VERSION: u32 = 1;

/// One option of a run.
#[derive(Clone, Copy, Debug)]
pub struct Knob {
    /// The option's name in Python (`run(workers=4)`) and in JSON: snake_case.
    pub name: &'static str,
    /// The `tomii run` flag. A bool knob's flag flips it from its default: `--quiet` sets `quiet`
    /// (default false), `--no-task-timing` clears `task_timing` (default true).
    pub cli: &'static str,
    pub kind: Kind,
    pub default: Preset,
    pub domain: Domain,
    pub role: Role,
    pub description: &'static str,
    /// How to search the knob, for a tuner (a person, a script or an agent).
    pub search_hint: &'static str,
    /// The entry points that take it.
    pub takes: Takes,
    /// How the command line spells it, beyond `cli`.
    pub flag: Flag,
    /// How it applies: sets a value (already checked against `kind` and `domain`) in a run's
    /// settings.
    pub apply: fn(&mut Settings, Value),
    /// Its default in a simulation, where that differs from `default`.
    pub simulate_default: Option<Preset>,
}

/// The launcher's entry points (`launch/`), each taking the knobs whose [`Takes`] names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    /// A run over frames: `tomii run`, `run_graph`, `tomii replay`.
    Run,
    /// A run kept open and fed by a program: `tomii.Session`.
    Session,
    /// A run on virtual workers: `tomii simulate`, `tomii.simulate`.
    Simulate,
}

impl Entry {
    /// The entry point as a message names it.
    pub fn name(self) -> &'static str {
        match self {
            Entry::Run => "a run",
            Entry::Session => "a session",
            Entry::Simulate => "a simulation",
        }
    }
}

/// Which entry points take a knob.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Takes {
    pub run: bool,
    pub session: bool,
    pub simulate: bool,
}

impl Takes {
    pub const RUN: Takes = Takes { run: true, session: false, simulate: false };
    pub const SESSION: Takes = Takes { run: false, session: true, simulate: false };
    pub const SIMULATE: Takes = Takes { run: false, session: false, simulate: true };
    pub const ALL: Takes = Takes { run: true, session: true, simulate: true };

    /// Both sets of entry points.
    pub const fn and(self, other: Takes) -> Takes {
        Takes {
            run: self.run || other.run,
            session: self.session || other.session,
            simulate: self.simulate || other.simulate,
        }
    }

    pub fn entry(self, entry: Entry) -> bool {
        match entry {
            Entry::Run => self.run,
            Entry::Session => self.session,
            Entry::Simulate => self.simulate,
        }
    }
}

/// How the command line spells a knob beyond its long flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flag {
    /// The value's placeholder in `--help` (`--workers <N>`); empty for a bool knob.
    pub value_name: &'static str,
    /// Tomii 1.2's spellings of the flag, accepted as hidden aliases (`cli::legacy::SPELLINGS`
    /// lists them with their meaning).
    pub aliases: &'static [&'static str],
    pub short: Option<char>,
    /// The flag may stand without its value (`--record`), which then gives [`Value::Bare`].
    pub bare: bool,
    /// The knob is given only together with this one (`--trace-format` needs `--trace`).
    pub requires: Option<&'static str>,
    /// The knob is not given together with this one.
    pub conflicts_with: Option<&'static str>,
}

impl Flag {
    /// A flag with nothing beyond its long name.
    pub const PLAIN: Flag =
        Flag { value_name: "", aliases: &[], short: None, bare: false, requires: None, conflicts_with: None };
}

/// A knob's value, as a front end gives it (parsed from the command line, converted from Python,
/// read from a decisions file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Int(u64),
    Bool(bool),
    Text(String),
    Path(PathBuf),
    Paths(Vec<PathBuf>),
    Pairs(Vec<(String, String)>),
    /// A flag given without its value, where the knob allows it ([`Flag::bare`]).
    Bare,
}

/// The accessors a row's `apply` uses. The launcher checks a value against its knob's kind before
/// it applies it, so a value of another kind here is a broken row: a panic, caught by any test.
impl Value {
    pub fn int(self) -> u64 {
        match self {
            Value::Int(value) => value,
            other => panic!("not an int: {other:?}"),
        }
    }

    /// An int whose domain lies within u32's.
    pub fn u32(self) -> u32 {
        let value = self.int();
        u32::try_from(value).unwrap_or_else(|_| panic!("{value} is outside its knob's u32 domain"))
    }

    pub fn millis(self) -> Duration {
        Duration::from_millis(self.int())
    }

    pub fn flag(self) -> bool {
        match self {
            Value::Bool(value) => value,
            other => panic!("not a bool: {other:?}"),
        }
    }

    pub fn text(self) -> String {
        match self {
            Value::Text(text) => text,
            other => panic!("not a string: {other:?}"),
        }
    }

    /// The word of a choice knob, as its enum.
    pub fn choice<T: Choice>(self) -> T {
        let word = self.text();
        T::from_word(&word).unwrap_or_else(|| panic!("{word:?} is not one of {:?}", T::WORDS))
    }

    pub fn path(self) -> PathBuf {
        match self {
            Value::Path(path) => path,
            other => panic!("not a path: {other:?}"),
        }
    }

    /// Where a knob that may stand bare points: the path given, or its default place.
    pub fn path_or_bare(self) -> RecordAt {
        match self {
            Value::Bare => RecordAt::Beside,
            other => RecordAt::Path(other.path()),
        }
    }

    pub fn paths(self) -> Vec<PathBuf> {
        match self {
            Value::Paths(paths) => paths,
            other => panic!("not a list of paths: {other:?}"),
        }
    }

    pub fn pairs(self) -> Vec<(String, String)> {
        match self {
            Value::Pairs(pairs) => pairs,
            other => panic!("not a list of KEY=VALUE pairs: {other:?}"),
        }
    }
}

/// An enum whose values a choice knob names by word: the words are declared once, with
/// [`choice!`], and are the catalog's domain, the CLI's possible values and the meaning of each.
pub trait Choice: Copy + 'static {
    /// Every word, in the catalog's order.
    const WORDS: &'static [&'static str];
    fn word(self) -> &'static str;
    fn from_word(word: &str) -> Option<Self>;
}

/// Declares the words of an enum's values: `choice!(FaultPolicy { Stop = "stop", ... })`.
macro_rules! choice {
    ($ty:ident { $($variant:ident = $word:literal),+ $(,)? }) => {
        impl $crate::knobs::Choice for $ty {
            const WORDS: &'static [&'static str] = &[$($word),+];
            fn word(self) -> &'static str {
                match self {
                    $($ty::$variant => $word,)+
                }
            }
            fn from_word(word: &str) -> Option<Self> {
                match word {
                    $($word => Some($ty::$variant),)+
                    _ => None,
                }
            }
        }
    };
}
use choice;

/// The type of a knob's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Int,
    Bool,
    String,
    Path,
    /// Several paths; on the CLI, the flag once per path.
    PathList,
    /// `KEY=VALUE` pairs; on the CLI, the flag once per pair.
    KeyValueList,
}

impl Kind {
    /// The name in the catalog's `type` field.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Int => "int",
            Kind::Bool => "bool",
            Kind::String => "string",
            Kind::Path => "path",
            Kind::PathList => "list<path>",
            Kind::KeyValueList => "list<key=value>",
        }
    }
}

/// A knob's default value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preset {
    /// Unset (JSON `null`): the option is off unless given.
    Unset,
    /// No items (JSON `[]`), for list knobs.
    Empty,
    Int(u64),
    Bool(bool),
    Text(&'static str),
}

impl Serialize for Preset {
    fn serialize<S: Serializer>(&self, out: S) -> Result<S::Ok, S::Error> {
        match *self {
            Preset::Unset => out.serialize_none(),
            Preset::Empty => out.collect_seq(std::iter::empty::<u8>()),
            Preset::Int(value) => out.serialize_u64(value),
            Preset::Bool(value) => out.serialize_bool(value),
            Preset::Text(value) => out.serialize_str(value),
        }
    }
}

impl Preset {
    /// The default as the CLI would print it; `-` when unset or empty.
    pub fn to_text(self) -> String {
        match self {
            Preset::Unset | Preset::Empty => "-".to_owned(),
            Preset::Int(value) => value.to_string(),
            Preset::Bool(value) => value.to_string(),
            Preset::Text(value) => value.to_owned(),
        }
    }
}

/// The values a knob accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Domain {
    /// An integer in `min..=max`, the values the runtime accepts (for an option without a limit of
    /// its own, its type's range); `scale` is how to step through it, the search hint where.
    Int {
        min: u64,
        max: u64,
        scale: Scale,
    },
    Bool,
    /// One of these words.
    Choice(&'static [&'static str]),
    /// The name of a scheduler installed where the binary looks (`tomii schedulers --json`).
    Scheduler,
    /// Options of the chosen scheduler: its keys and their domains are listed by
    /// `tomii schedulers --json`.
    SchedulerOptions,
    /// A file path.
    Path,
}

/// How to step through an integer domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    Linear,
    /// Powers of two.
    Pow2,
    /// Logarithmic: factors of ten or so.
    Log,
}

impl Scale {
    pub fn name(self) -> &'static str {
        match self {
            Scale::Linear => "linear",
            Scale::Pow2 => "pow2",
            Scale::Log => "log",
        }
    }
}

/// Where the installed schedulers and their options are listed.
const SCHEDULER_LISTING: &str = "tomii schedulers --json";

/// `{"kind": ..., ...}`, the catalog's `domain` field.
impl Serialize for Domain {
    fn serialize<S: Serializer>(&self, out: S) -> Result<S::Ok, S::Error> {
        let mut map = out.serialize_map(None)?;
        match *self {
            Domain::Int { min, max, scale } => {
                map.serialize_entry("kind", "int")?;
                map.serialize_entry("min", &min)?;
                map.serialize_entry("max", &max)?;
                map.serialize_entry("scale", scale.name())?;
            }
            Domain::Bool => map.serialize_entry("kind", "bool")?,
            Domain::Choice(values) => {
                map.serialize_entry("kind", "choice")?;
                map.serialize_entry("values", values)?;
            }
            Domain::Scheduler => {
                map.serialize_entry("kind", "scheduler")?;
                map.serialize_entry("listed_by", SCHEDULER_LISTING)?;
            }
            Domain::SchedulerOptions => {
                map.serialize_entry("kind", "scheduler_options")?;
                map.serialize_entry("listed_by", SCHEDULER_LISTING)?;
            }
            Domain::Path => map.serialize_entry("kind", "path")?,
        }
        map.end()
    }
}

impl Domain {
    /// A short rendering for the text table.
    pub fn to_text(self) -> String {
        match self {
            Domain::Int { min, max, scale } => format!("{min}..={max} ({})", scale.name()),
            Domain::Bool => "true|false".to_owned(),
            Domain::Choice(values) => values.join("|"),
            Domain::Scheduler => "installed scheduler".to_owned(),
            Domain::SchedulerOptions => "scheduler's options".to_owned(),
            Domain::Path => "path".to_owned(),
        }
    }
}

/// What a knob is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Changes how fast a run goes, never what it computes: what a tuner searches.
    Perf,
    /// Changes what a run does or when it stops.
    Behaviour,
    /// Inputs, outputs and what is recorded.
    Io,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Perf => "perf",
            Role::Behaviour => "behaviour",
            Role::Io => "io",
        }
    }
}

/// The knob called `name`, if any.
pub fn find(name: &str) -> Option<&'static Knob> {
    CATALOG.iter().find(|knob| knob.name == name)
}

/// The knobs `entry` takes, in the catalog's order.
pub fn taken_by(entry: Entry) -> impl Iterator<Item = &'static Knob> {
    CATALOG.iter().filter(move |knob| knob.takes.entry(entry))
}

/// Checks `value` of the integer knob `name` against the catalog's domain, which is therefore the
/// one statement of what the runtime accepts. The message names the knob, its value and range, then
/// its flag and what it is.
///
/// # Panics
/// If `name` is not an integer knob of the catalog: a caller's typo, caught by any test.
pub fn check_int(name: &str, value: u64) -> Result<(), String> {
    let knob = find(name).unwrap_or_else(|| panic!("{name} is not a knob of the catalog"));
    let Domain::Int { min, max, .. } = knob.domain else { panic!("{name} is not an integer knob") };
    if (min..=max).contains(&value) {
        return Ok(());
    }
    let range = if max == u64::MAX { format!("at least {min}") } else { format!("between {min} and {max}") };
    Err(format!("{name} is {value}: it must be {range}. {name} ({}): {}", knob.cli, knob.description))
}

impl Knob {
    /// Its default for `entry`.
    pub fn default_for(&self, entry: Entry) -> Preset {
        match (entry, self.simulate_default) {
            (Entry::Simulate, Some(preset)) => preset,
            _ => self.default,
        }
    }

    /// Refuses a value of another kind than the knob's, or outside its domain; the message names
    /// the knob, its value and what it accepts.
    pub fn check(&self, value: &Value) -> Result<(), String> {
        let fits = match (self.kind, value) {
            (Kind::Int, Value::Int(number)) => return check_int(self.name, *number),
            (Kind::Bool, Value::Bool(_)) | (Kind::PathList, Value::Paths(_)) => true,
            (Kind::KeyValueList, Value::Pairs(_)) => true,
            (Kind::Path, Value::Path(_)) => true,
            (Kind::Path, Value::Bare) => self.flag.bare,
            (Kind::String, Value::Text(word)) => match self.domain {
                Domain::Choice(words) if !words.contains(&word.as_str()) => {
                    let listed: Vec<String> = words.iter().map(|w| format!("{w:?}")).collect();
                    return Err(format!(
                        "{} is {word:?}: it must be one of {}. {} ({}): {}",
                        self.name,
                        listed.join(", "),
                        self.name,
                        self.cli,
                        self.description
                    ));
                }
                _ => true,
            },
            _ => false,
        };
        if fits {
            return Ok(());
        }
        Err(format!(
            "{} takes a value of type {}, not {value:?}. {} ({}): {}",
            self.name,
            self.kind.name(),
            self.name,
            self.cli,
            self.description
        ))
    }
}

/// One entry of `tomii knobs --json`: name, cli, type, default, domain, role, description,
/// search_hint, in that order.
impl Serialize for Knob {
    fn serialize<S: Serializer>(&self, out: S) -> Result<S::Ok, S::Error> {
        let mut knob = out.serialize_struct("Knob", 8)?;
        knob.serialize_field("name", self.name)?;
        knob.serialize_field("cli", self.cli)?;
        knob.serialize_field("type", self.kind.name())?;
        knob.serialize_field("default", &self.default)?;
        knob.serialize_field("domain", &self.domain)?;
        knob.serialize_field("role", self.role.name())?;
        knob.serialize_field("description", self.description)?;
        knob.serialize_field("search_hint", self.search_hint)?;
        knob.end()
    }
}

/// What `tomii knobs --json` prints: `{"version": 1, "knobs": [...]}`.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Listing {
    pub version: u32,
    pub knobs: &'static [Knob],
}

/// The whole catalog, ready to serialize.
pub const LISTING: Listing = Listing { version: FORMAT_VERSION, knobs: CATALOG };

/// The catalog as an aligned text table (one knob a line, the description last), what
/// `tomii knobs` prints.
pub fn to_table() -> String {
    let header = ["NAME", "CLI", "TYPE", "DEFAULT", "DOMAIN", "ROLE", "DESCRIPTION"].map(str::to_owned);
    let rows: Vec<[String; 7]> = CATALOG
        .iter()
        .map(|k| {
            [
                k.name.to_owned(),
                k.cli.to_owned(),
                k.kind.name().to_owned(),
                k.default.to_text(),
                k.domain.to_text(),
                k.role.name().to_owned(),
                k.description.to_owned(),
            ]
        })
        .collect();
    let mut widths = [0; 7];
    for row in std::iter::once(&header).chain(&rows) {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |row: &[String; 7]| {
        let cells: Vec<String> = row.iter().zip(widths).map(|(cell, width)| format!("{cell:<width$}")).collect();
        cells.join("  ").trim_end().to_owned() + "\n"
    };
    std::iter::once(&header).chain(&rows).map(line).collect()
}
