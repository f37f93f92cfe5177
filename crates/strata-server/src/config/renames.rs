//! `rename-command`: the names clients reach commands by, when a configuration file (or
//! `--rename-command`) gives some commands other names or takes them away, as redis-server's
//! `rename-command old new` does (`new` empty: the command is no longer served).
//!
//! The lines apply in order, each to the names the earlier ones left: `old` is a name served
//! now (a command's own name not renamed yet, or an earlier line's new name), else the start
//! stops with Redis's "No such command in rename-command"; a `new` name already served stops
//! it with "Target command name already exists". A renamed command keeps its own name
//! everywhere it reports one (COMMAND INFO, INFO commandstats, ACL rules, which name commands
//! as Redis's ACL does, by their own names); only the name a client sends it by changes.
//!
//! Names are compared without case. The table is read for every command a client sends only
//! when it holds a rename ([`Renames::is_empty`]).

use std::collections::{HashMap, HashSet};

/// One `rename-command old new` line: where it was (`None`: the command line), and its names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rename {
    /// The configuration file's line number (1-based), or `None` for `--rename-command`.
    pub line: Option<usize>,
    /// The name the command is served by before this line.
    pub old: String,
    /// The name it is served by after it; empty: not served.
    pub new: String,
}

/// Why a configuration file's `rename-command` line cannot be read.
pub const ARITY: &str = "wrong number of arguments (rename-command takes the command and its \
                         new name, \"\" to disable it)";

/// The `rename-command` lines of a configuration file's `text`, in order; a line that does not
/// hold exactly two names is an error naming it.
pub fn directives(text: &str) -> Result<Vec<Rename>, String> {
    let mut out = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        let Some(words) = crate::resp::args::split_args(line.as_bytes()) else {
            continue; // `parse_file` reports the unbalanced quotes.
        };
        if !words.first().is_some_and(|k| k.eq_ignore_ascii_case(b"rename-command")) {
            continue;
        }
        let [_, old, new] = words.as_slice() else {
            return Err(format!("line {}: `{line}`: {ARITY}", n + 1));
        };
        let text = |w: &[u8]| String::from_utf8_lossy(w).into_owned();
        out.push(Rename { line: Some(n + 1), old: text(old), new: text(new) });
    }
    Ok(out)
}

/// The names commands are served by (module doc). Empty: every command by its own name.
#[derive(Clone, Debug, Default)]
pub struct Renames {
    /// A name given by a rename (lower case) -> the command's own name.
    given: HashMap<Vec<u8>, String>,
    /// Own names (lower case) no longer served under themselves.
    taken: HashSet<Vec<u8>>,
}

impl Renames {
    /// The names after `lines`, applied in order (module doc); `exists(own)` says whether a
    /// command's own name is `own` (lower case). An error names the line it stopped at.
    pub fn build(lines: &[Rename], exists: impl Fn(&str) -> bool) -> Result<Renames, String> {
        let mut r = Renames::default();
        for l in lines {
            let old = l.old.to_ascii_lowercase();
            let new = l.new.to_ascii_lowercase();
            let own = match r.given.remove(old.as_bytes()) {
                Some(own) => own,
                None if !r.taken.contains(old.as_bytes()) && exists(&old) => {
                    r.taken.insert(old.clone().into_bytes());
                    old
                }
                None => return Err(l.error("No such command in rename-command")),
            };
            if new.is_empty() {
                continue;
            }
            let served = r.given.contains_key(new.as_bytes())
                || (!r.taken.contains(new.as_bytes()) && exists(&new));
            if served {
                return Err(l.error("Target command name already exists"));
            }
            r.given.insert(new.into_bytes(), own);
        }
        Ok(r)
    }

    /// Whether every command is served by its own name.
    pub fn is_empty(&self) -> bool {
        self.given.is_empty() && self.taken.is_empty()
    }

    /// The own name of the command served as `lower` (a lower-case name), if one is: `lower`
    /// itself unless a rename took it or gave it.
    pub fn resolve<'a>(&'a self, lower: &'a [u8]) -> Option<&'a [u8]> {
        match self.given.get(lower) {
            Some(own) => Some(own.as_bytes()),
            None if self.taken.contains(lower) => None,
            None => Some(lower),
        }
    }

    /// Whether the command whose own name is `own` is still served (under some name).
    pub fn serves(&self, own: &str) -> bool {
        !self.taken.contains(own.as_bytes()) || self.given.values().any(|o| o == own)
    }
}

impl Rename {
    fn error(&self, why: &str) -> String {
        let (old, new) = (&self.old, &self.new);
        match self.line {
            Some(n) => format!("line {n}: `rename-command {old} {new}`: {why}"),
            None => format!("--rename-command {old} {new:?}: {why}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n_str(n: &[u8]) -> &str {
        std::str::from_utf8(n).unwrap()
    }

    fn exists(n: &str) -> bool {
        ["get", "set", "flushdb", "flushall", "config"].contains(&n)
    }

    fn build(pairs: &[(&str, &str)]) -> Result<Renames, String> {
        let lines: Vec<Rename> = pairs
            .iter()
            .enumerate()
            .map(|(i, (o, n))| Rename { line: Some(i + 1), old: (*o).into(), new: (*n).into() })
            .collect();
        Renames::build(&lines, exists)
    }

    fn served(r: &Renames, name: &str) -> Option<String> {
        let lower = name.to_ascii_lowercase();
        let own = r.resolve(lower.as_bytes())?;
        exists(n_str(own)).then(|| n_str(own).to_string())
    }

    #[test]
    fn renamed_and_removed_commands_are_served_by_their_new_names_only() {
        let r = build(&[("flushdb", "badger"), ("FLUSHALL", "")]).unwrap();
        assert_eq!(served(&r, "BADGER").as_deref(), Some("flushdb"));
        assert_eq!(served(&r, "flushdb"), None);
        assert_eq!(served(&r, "flushall"), None);
        assert_eq!(served(&r, "get").as_deref(), Some("get"));
        assert!(r.serves("flushdb") && !r.serves("flushall") && r.serves("get"));
        assert!(build(&[]).unwrap().is_empty());
    }

    #[test]
    fn lines_apply_to_the_names_the_earlier_ones_left() {
        // A chain, and a freed own name given to another command.
        let r = build(&[("get", "fetch"), ("fetch", "take"), ("set", "get")]).unwrap();
        assert_eq!(served(&r, "take").as_deref(), Some("get"));
        assert_eq!(served(&r, "fetch"), None);
        assert_eq!(served(&r, "get").as_deref(), Some("set"));
        assert_eq!(served(&r, "set"), None);
        // Renamed back to its own name.
        let r = build(&[("get", "x"), ("x", "get")]).unwrap();
        assert_eq!(served(&r, "get").as_deref(), Some("get"));
        assert_eq!(served(&r, "x"), None);
    }

    #[test]
    fn a_line_naming_no_served_command_or_a_taken_name_stops_the_start() {
        let e = build(&[("nosuch", "x")]).unwrap_err();
        assert_eq!(e, "line 1: `rename-command nosuch x`: No such command in rename-command");
        let e = build(&[("get", ""), ("get", "x")]).unwrap_err();
        assert!(e.starts_with("line 2: ") && e.ends_with("No such command in rename-command"));
        let e = build(&[("get", "SET")]).unwrap_err();
        assert_eq!(e, "line 1: `rename-command get SET`: Target command name already exists");
        let e = build(&[("get", "x"), ("set", "x")]).unwrap_err();
        assert!(e.ends_with("Target command name already exists"), "{e}");
        let flag = Rename { line: None, old: "nosuch".into(), new: String::new() };
        let e = Renames::build(&[flag], exists).unwrap_err();
        assert_eq!(e, "--rename-command nosuch \"\": No such command in rename-command");
    }

    #[test]
    fn directives_are_read_in_order_with_quoted_empty_names() {
        let text = "port 1\nrename-command flushdb badger\n# x\nRENAME-COMMAND \"config\" \"\"\n";
        let got = directives(text).unwrap();
        assert_eq!(
            got,
            [
                Rename { line: Some(2), old: "flushdb".into(), new: "badger".into() },
                Rename { line: Some(4), old: "config".into(), new: String::new() },
            ]
        );
        let e = directives("rename-command get\n").unwrap_err();
        assert!(e.starts_with("line 1: `rename-command get`: wrong number"), "{e}");
    }
}
