//! The command line's run options, made from the knob catalog: one clap argument per knob an entry
//! point takes (its flag, placeholder, default, choices and Tomii 1.2 aliases, all from its row),
//! and the values given, read back as the launcher's (name, value) list. No option is declared
//! here.

use std::path::PathBuf;

use clap::builder::{OsStringValueParser, PossibleValuesParser, TypedValueParser};
use clap::{Arg, ArgAction, ArgMatches, Command, value_parser};

use crate::knobs::{self, Domain, Entry, Kind, Knob, Preset, Value};

/// `command` with an argument for every knob `entry` takes, in the catalog's order.
pub fn augment(command: Command, entry: Entry) -> Command {
    knobs::taken_by(entry).fold(command, |command, knob| command.arg(argument(knob, entry)))
}

/// The options given on the command line, defaults included, for the launcher.
pub fn given(matches: &ArgMatches, entry: Entry) -> Vec<(String, Value)> {
    knobs::taken_by(entry)
        .filter_map(|knob| value(matches, knob, entry).map(|value| (knob.name.to_owned(), value)))
        .collect()
}

fn argument(knob: &Knob, entry: Entry) -> Arg {
    let flag = &knob.flag;
    let mut arg = Arg::new(knob.name).long(knob.cli.trim_start_matches("--")).help(knob.description);
    if !flag.value_name.is_empty() {
        arg = arg.value_name(flag.value_name);
    }
    arg = flag.aliases.iter().fold(arg, |arg, alias| arg.alias(alias));
    if let Some(short) = flag.short {
        arg = arg.short(short);
    }
    if let Some(other) = flag.requires {
        arg = arg.requires(other);
    }
    if let Some(other) = flag.conflicts_with {
        arg = arg.conflicts_with(other);
    }
    let arg = match knob.default_for(entry) {
        Preset::Int(value) => arg.default_value(value.to_string()),
        Preset::Text(text) => arg.default_value(text),
        Preset::Unset | Preset::Empty | Preset::Bool(_) => arg,
    };
    match (knob.kind, knob.domain) {
        (Kind::Int, _) => arg.value_parser(value_parser!(u64)),
        (Kind::Bool, _) => arg.action(ArgAction::SetTrue),
        (Kind::String, Domain::Choice(words)) => arg.value_parser(PossibleValuesParser::new(words)),
        (Kind::String, _) => arg,
        // Empty when the flag stands alone: a path parser would refuse it.
        (Kind::Path, _) if flag.bare => {
            arg.value_parser(OsStringValueParser::new().map(PathBuf::from)).num_args(0..=1).default_missing_value("")
        }
        (Kind::Path, _) => arg.value_parser(value_parser!(PathBuf)),
        (Kind::PathList, _) => arg.value_parser(value_parser!(PathBuf)).action(ArgAction::Append),
        (Kind::KeyValueList, _) => arg.value_parser(parse_key_value).action(ArgAction::Append),
    }
}

/// The value of `knob` in `matches`: what was given, else its default; none for an unset path.
fn value(matches: &ArgMatches, knob: &Knob, entry: Entry) -> Option<Value> {
    let name = knob.name;
    Some(match knob.kind {
        Kind::Int => Value::Int(*matches.get_one::<u64>(name)?),
        // A bool knob's flag flips it from its default.
        Kind::Bool => Value::Bool(matches.get_flag(name) != (knob.default_for(entry) == Preset::Bool(true))),
        Kind::String => Value::Text(matches.get_one::<String>(name)?.clone()),
        Kind::Path => match matches.get_one::<PathBuf>(name)? {
            path if path.as_os_str().is_empty() && knob.flag.bare => Value::Bare,
            path => Value::Path(path.clone()),
        },
        Kind::PathList => Value::Paths(matches.get_many::<PathBuf>(name).into_iter().flatten().cloned().collect()),
        Kind::KeyValueList => {
            Value::Pairs(matches.get_many::<(String, String)>(name).into_iter().flatten().cloned().collect())
        }
    })
}

fn parse_key_value(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!("expected KEY=VALUE, got {text:?}")),
    }
}
