//! A graph's warnings summarised for people: one line per kind, with a count and an example node,
//! where a graph whose nodes each need the same warning would print one line per node (README.md,
//! "Warnings"). `CompiledGraph::warnings` and the report keep every line; this only shortens
//! what is printed. Never drops a kind.

/// One line per kind of warning in `warnings` (lines as `CompiledGraph::warnings` holds them):
/// a kind met once is its line unchanged; a kind met on n nodes is `FILE: n nodes: WHAT (e.g.
/// node "x"); --verbose lists each`, WHAT the first node's line without its node. Kinds keep the
/// order of their first line. Two lines are of one kind when they differ only in names and
/// numbers.
pub fn summarise(warnings: &[String]) -> Vec<String> {
    let mut kinds: Vec<(String, usize, usize)> = Vec::new();
    for (k, warning) in warnings.iter().enumerate() {
        let key = kind(warning);
        match kinds.iter_mut().find(|(other, _, _)| *other == key) {
            Some((_, _, count)) => *count += 1,
            None => kinds.push((key, k, 1)),
        }
    }
    kinds.into_iter().map(|(_, first, count)| line(&warnings[first], count)).collect()
}

/// The line of a kind met `count` times, `first` its first warning.
fn line(first: &str, count: usize) -> String {
    if count == 1 {
        return first.to_owned();
    }
    match split_node(first) {
        Some((file, node, what)) => {
            format!("{file}{count} nodes: {what} (e.g. node {node}); --verbose lists each")
        }
        None => format!("{first} ({count} times); --verbose lists each"),
    }
}

/// `FILE: node "x": WHAT` → (`FILE: `, `"x"`, `WHAT`).
fn split_node(warning: &str) -> Option<(&str, &str, &str)> {
    let at = warning.find("node \"")?;
    let name_start = at + "node ".len();
    let rest = &warning[name_start + 1..];
    let mut escaped = false;
    let close = rest.char_indices().find(|&(_, c)| {
        let end = c == '"' && !escaped;
        escaped = c == '\\' && !escaped;
        end
    })?;
    let name_end = name_start + 1 + close.0 + 1;
    let what = warning[name_end..].strip_prefix(": ")?;
    Some((&warning[..at], &warning[name_start..name_end], what))
}

/// The warning with every quoted text and every number replaced, so that lines about different
/// nodes and instances compare equal.
fn kind(warning: &str) -> String {
    let mut key = String::with_capacity(warning.len());
    let mut chars = warning.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                let mut escaped = false;
                for c in chars.by_ref() {
                    if c == '"' && !escaped {
                        break;
                    }
                    escaped = c == '\\' && !escaped;
                }
                key.push_str("\"_\"");
            }
            c if c.is_ascii_digit() => {
                while chars.peek().is_some_and(char::is_ascii_digit) {
                    chars.next();
                }
                key.push('#');
            }
            c => key.push(c),
        }
    }
    key
}

#[cfg(test)]
mod tests {
    use super::summarise;

    #[test]
    fn nodes_with_the_same_warning_make_one_line_with_a_count() {
        let wavefront: Vec<String> = (1..512)
            .map(|k| {
                format!(
                    "w.json: node \"diag_{k}\": args[0] reads \"diag_{}\" with indexes \"0-1\": Tomii 1.2 read the \
                     literal end inclusively: offsets 0..=1 (2 instances)",
                    k - 1
                )
            })
            .chain(["w.json: node \"odd\": its condition Gt was always false".to_owned()])
            .collect();
        let lines = summarise(&wavefront);
        assert_eq!(lines.len(), 2, "{lines:#?}");
        assert!(lines[0].starts_with("w.json: 511 nodes: args[0] reads \"diag_0\""), "{}", lines[0]);
        assert!(lines[0].ends_with("(e.g. node \"diag_1\"); --verbose lists each"), "{}", lines[0]);
        assert_eq!(lines[1], wavefront[511]);
    }

    #[test]
    fn a_single_warning_is_kept_as_it_is() {
        let one = vec!["g.json: node \"a\": something".to_owned()];
        assert_eq!(summarise(&one), one);
        assert!(summarise(&[]).is_empty());
    }
}
