//! ACL users, as Redis 6 and 7 have them: who a connection is (AUTH, HELLO AUTH), and what
//! it may do: the commands it may run, the keys and the pub/sub channels it may name.
//!
//! Every server has the `default` user, which a connection starts as: on, every command,
//! key and channel, and no password unless `requirepass` gives one (`requirepass` sets the
//! default user's password, as in Redis). `ACL SETUSER` creates and changes others from
//! Redis's rules ([`selector`] for the permission rules; `on`/`off`, `>pass`, `<pass`,
//! `#hash`, `!hash`, `nopass`, `resetpass`, `(selector rules)`, `clearselectors`, `reset`
//! here): all of a SETUSER's rules or none. Passwords are kept as their SHA-256, in hex.
//!
//! A user is held in a [`UserCell`] that its connections share, so a change applies to
//! their next command, as in Redis; its `unrestricted` flag lets the check skip a user that
//! may do anything (the default user unless restricted) without taking its lock.
//!
//! This module knows commands only through a [`Catalog`] the command layer provides (ids,
//! names, subcommands, categories, and the glob matcher); the command layer finds each
//! line's keys and channels and turns a refusal into Redis's replies and log entries.
//!
//! Key permissions: Redis 7 gives each key of a command its own access flags; here a key of
//! a write command needs both read and write permission, and a key of any other command
//! read permission (`%R~`, `%W~` patterns), which is never more permissive than Redis.

pub mod describe;
pub mod log;
pub mod selector;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::{RwLock, RwLockReadGuard};
use sha2::{Digest, Sha256};

pub use selector::{Denied, Line, RuleError, Selector};

/// What this module needs to know of the commands (module doc). Ids are below
/// `selector::MAX_IDS - 1`.
pub trait Catalog {
    /// The id of a lower-case command name or `container|sub`.
    fn id(&self, name: &str) -> Option<usize>;
    /// Whether a name without an id is one of Redis's commands (or subcommands) that this
    /// server does not serve: rules naming it are taken and change nothing (a configuration
    /// written for Redis, `+@all -debug`, loads), as nothing can run it here.
    fn elsewhere(&self, name: &str) -> bool;
    /// The full name of `id` (`get`, `config|get`).
    fn name(&self, id: usize) -> &str;
    /// The container of a subcommand.
    fn parent(&self, id: usize) -> Option<usize>;
    /// The subcommands of a container (empty for others).
    fn subcommands(&self, id: usize) -> &[usize];
    /// The commands that are not subcommands, in the order rules are written.
    fn top_level(&self) -> &[usize];
    /// The ACL categories, without `@`, in Redis's order.
    fn categories(&self) -> &[&'static str];
    /// Whether `id` is in `category`.
    fn in_category(&self, id: usize, category: &str) -> bool;
    /// Redis's glob match, for key and channel patterns.
    fn matches(&self, pattern: &[u8], s: &[u8]) -> bool;
}

/// The default user's name.
pub const DEFAULT_USER: &[u8] = b"default";

/// A user's flags and permissions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    /// `on`: may authenticate (connections already authenticated keep working when `off`).
    pub enabled: bool,
    /// `nopass`: any password authenticates.
    pub nopass: bool,
    /// `sanitize-payload` (Some(true)) or `skip-sanitize-payload` (Some(false)): recorded
    /// for RESTORE (this server checks every payload it restores either way).
    pub sanitize: Option<bool>,
    /// SHA-256 of each password, lower-case hex, in the order added.
    pub passwords: Vec<String>,
    /// The root selector first, then the others in the order added.
    pub selectors: Vec<Selector>,
}

impl User {
    /// A new user: off, no password, no command, key or channel (every channel if
    /// `all_channels`: `acl-pubsub-default allchannels`).
    pub fn new(all_channels: bool) -> User {
        User {
            enabled: false,
            nopass: false,
            sanitize: None,
            passwords: Vec::new(),
            selectors: vec![Selector::new(all_channels)],
        }
    }

    /// The default user of a fresh server (`+@all ~* &* on`), with the password
    /// `requirepass` gives (none: `nopass`).
    pub fn default_user(password: Option<&[u8]>) -> User {
        let mut u = User {
            enabled: true,
            selectors: vec![Selector::unrestricted_root()],
            ..User::new(true)
        };
        u.set_password(password);
        u
    }

    /// Makes `password` the only one (`requirepass`), or none with `nopass`.
    pub fn set_password(&mut self, password: Option<&[u8]>) {
        self.passwords.clear();
        match password {
            Some(p) => {
                self.nopass = false;
                self.passwords.push(hash_password(p));
            }
            None => self.nopass = true,
        }
    }

    /// Applies one rule (module doc; `all_channels` is what `reset` gives new selectors'
    /// channels); on an error nothing changed.
    pub fn apply(
        &mut self,
        catalog: &dyn Catalog,
        op: &[u8],
        all_channels: bool,
    ) -> Result<(), RuleError> {
        if op.is_empty() {
            return Ok(());
        }
        match op.to_ascii_lowercase().as_slice() {
            b"on" => self.enabled = true,
            b"off" => self.enabled = false,
            b"skip-sanitize-payload" => self.sanitize = Some(false),
            b"sanitize-payload" => self.sanitize = Some(true),
            b"nopass" => {
                self.nopass = true;
                self.passwords.clear();
            }
            b"resetpass" => {
                self.nopass = false;
                self.passwords.clear();
            }
            b"clearselectors" => self.selectors.truncate(1),
            b"reset" => {
                let root = &mut self.selectors[0];
                *root = Selector::new(all_channels);
                self.selectors.truncate(1);
                self.passwords.clear();
                self.nopass = false;
                self.enabled = false;
                self.sanitize = Some(true);
            }
            _ => return self.apply_other(catalog, op, all_channels),
        }
        Ok(())
    }

    fn apply_other(
        &mut self,
        catalog: &dyn Catalog,
        op: &[u8],
        all_channels: bool,
    ) -> Result<(), RuleError> {
        match op[0] {
            b'>' | b'#' => {
                let hash =
                    if op[0] == b'>' { hash_password(&op[1..]) } else { valid_hash(&op[1..])? };
                if !self.passwords.contains(&hash) {
                    self.passwords.push(hash);
                }
                self.nopass = false;
            }
            b'<' | b'!' => {
                let hash =
                    if op[0] == b'<' { hash_password(&op[1..]) } else { valid_hash(&op[1..])? };
                let at = self.passwords.iter().position(|p| *p == hash);
                self.passwords.remove(at.ok_or(RuleError::NoSuchPassword)?);
            }
            b'(' if op.last() == Some(&b')') => {
                let mut s = Selector::new(all_channels);
                let inner = &op[1..op.len() - 1];
                for rule in crate::resp::args::split_args(inner).ok_or(RuleError::Syntax)? {
                    s.apply(catalog, &rule)?;
                }
                self.selectors.push(s);
            }
            _ => self.selectors[0].apply(catalog, op)?,
        }
        Ok(())
    }

    /// Whether one of the selectors allows `line`, or the reason Redis would give.
    pub fn check(&self, catalog: &dyn Catalog, line: &Line<'_>) -> Result<(), Denied> {
        let mut relevant = Denied::Command;
        for s in &self.selectors {
            match s.check(catalog, line) {
                Ok(()) => return Ok(()),
                Err(d) => relevant = relevant.more_relevant(d),
            }
        }
        Err(relevant)
    }

    /// Whether a selector that allows `line` also reaches every key with the permissions
    /// `needs` ([`selector::READ`], ...): what SORT's BY and GET patterns, which name keys the
    /// line does not, need (Redis's unrestricted key access).
    pub fn reaches_every_key(&self, catalog: &dyn Catalog, line: &Line<'_>, needs: u8) -> bool {
        self.selectors.iter().any(|s| s.check(catalog, line).is_ok() && s.reaches_every_key(needs))
    }

    /// Whether one of the selectors lets the user subscribe to `channel` (a pattern when
    /// `pattern`).
    pub fn allows_channel(&self, catalog: &dyn Catalog, channel: &[u8], pattern: bool) -> bool {
        self.selectors.iter().any(|s| s.allows_channel(catalog, channel, pattern))
    }

    /// Whether `password` authenticates this user (which must also be on).
    pub fn password_ok(&self, password: &[u8]) -> bool {
        if self.nopass {
            return true;
        }
        let hash = hash_password(password);
        // Every stored hash is compared whole, found or not.
        self.passwords.iter().fold(false, |found, p| found | same_in_constant_time(p, &hash))
    }

    /// Its flags as ACL GETUSER lists them, in Redis's order.
    pub fn flags(&self) -> Vec<&'static str> {
        let mut f = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            f.push("nopass");
        }
        match self.sanitize {
            Some(false) => f.push("skip-sanitize-payload"),
            Some(true) => f.push("sanitize-payload"),
            None => {}
        }
        f
    }

    /// The user as ACL LIST and the ACL file write it (after `user NAME `): flags,
    /// password hashes, the root selector, then each other selector in parentheses.
    pub fn describe(&self, catalog: &dyn Catalog) -> Vec<u8> {
        let mut out: Vec<u8> = Vec::new();
        for f in self.flags() {
            out.extend_from_slice(f.as_bytes());
            out.push(b' ');
        }
        for p in &self.passwords {
            out.push(b'#');
            out.extend_from_slice(p.as_bytes());
            out.push(b' ');
        }
        for (i, s) in self.selectors.iter().enumerate() {
            let mut d = Vec::new();
            let keys = s.describe_keys();
            if !keys.is_empty() {
                d.extend_from_slice(&keys);
                d.push(b' ');
            }
            if !s.all_channels() {
                d.extend_from_slice(b"resetchannels ");
            }
            let channels = s.describe_channels();
            if !channels.is_empty() {
                d.extend_from_slice(&channels);
                d.push(b' ');
            }
            d.extend_from_slice(describe::command_rules(s, catalog).as_bytes());
            if i == 0 {
                out.extend_from_slice(&d);
            } else {
                out.extend_from_slice(b" (");
                out.extend_from_slice(&d);
                out.push(b')');
            }
        }
        out
    }

    /// Whether it may run every command on every key and channel.
    pub fn unrestricted(&self) -> bool {
        self.selectors[0].unrestricted()
    }
}

/// A user as its connections share it (module doc).
#[derive(Debug)]
pub struct UserCell {
    /// Its name.
    pub name: Vec<u8>,
    user: RwLock<User>,
    unrestricted: AtomicBool,
    /// Deleted (ACL DELUSER, ACL LOAD): its connections are being closed and may run
    /// nothing meanwhile.
    gone: AtomicBool,
}

impl UserCell {
    fn new(name: &[u8], user: User) -> Arc<UserCell> {
        Arc::new(UserCell {
            name: name.to_vec(),
            unrestricted: AtomicBool::new(user.unrestricted()),
            user: RwLock::new(user),
            gone: AtomicBool::new(false),
        })
    }

    /// Its flags and permissions now.
    pub fn read(&self) -> RwLockReadGuard<'_, User> {
        self.user.read()
    }

    /// Replaces its flags and permissions.
    fn set(&self, user: User) {
        let mut u = self.user.write();
        self.unrestricted.store(user.unrestricted(), Ordering::Release);
        *u = user;
    }

    /// Whether it may run anything (one load, without the lock; false once deleted).
    pub fn unrestricted(&self) -> bool {
        self.unrestricted.load(Ordering::Acquire)
    }

    /// Marks it deleted: it may run nothing from now on.
    fn delete(&self) {
        self.gone.store(true, Ordering::Release);
        self.unrestricted.store(false, Ordering::Release);
    }

    /// Whether it was deleted.
    pub fn gone(&self) -> bool {
        self.gone.load(Ordering::Acquire)
    }
}

/// Why ACL SETUSER (or a `user` line of a file) was refused: Redis's text after `ERR `.
pub type SetUserError = String;

/// The users of a server (module doc).
pub struct Users {
    table: RwLock<BTreeMap<Vec<u8>, Arc<UserCell>>>,
    /// ACL LOG.
    pub log: log::AclLog,
    /// `acl-pubsub-default allchannels`: new users (and `reset`) get every channel.
    pubsub_all: AtomicBool,
}

impl Users {
    /// A server's users at start: the default user, with `password` if `requirepass` sets
    /// one.
    pub fn new(password: Option<&[u8]>) -> Users {
        let default = UserCell::new(DEFAULT_USER, User::default_user(password));
        Users {
            table: RwLock::new(BTreeMap::from([(DEFAULT_USER.to_vec(), default)])),
            log: log::AclLog::default(),
            pubsub_all: AtomicBool::new(false),
        }
    }

    /// Sets what `acl-pubsub-default` gives new users.
    pub fn set_pubsub_default_all(&self, all: bool) {
        self.pubsub_all.store(all, Ordering::Relaxed);
    }

    fn pubsub_all(&self) -> bool {
        self.pubsub_all.load(Ordering::Relaxed)
    }

    /// The user called `name`.
    pub fn get(&self, name: &[u8]) -> Option<Arc<UserCell>> {
        self.table.read().get(name).cloned()
    }

    /// The default user.
    pub fn default_user(&self) -> Arc<UserCell> {
        self.get(DEFAULT_USER).expect("the default user is never deleted")
    }

    /// ACL SETUSER: the user `name` (made anew if there is none) changed by every rule of
    /// `rules`, all or none: its cell and whether it existed, or the first refusal. Under
    /// the table's lock, so two SETUSERs of one user do not lose either's rules.
    pub fn set_user(
        &self,
        catalog: &dyn Catalog,
        name: &[u8],
        rules: &[Vec<u8>],
    ) -> Result<(Arc<UserCell>, bool), SetUserError> {
        if name.iter().any(|&c| c == b' ' || c == 0) {
            return Err("Usernames can't contain spaces or null characters".into());
        }
        let all = self.pubsub_all();
        let mut table = self.table.write();
        let mut user = match table.get(name) {
            Some(cell) => cell.read().clone(),
            None => User::new(all),
        };
        for rule in merge_selectors(rules)? {
            user.apply(catalog, &rule, all).map_err(|e| {
                let rule = String::from_utf8_lossy(&rule);
                format!("Error in ACL SETUSER modifier '{rule}': {}", e.text())
            })?;
        }
        Ok(put(&mut table, name, user))
    }

    /// Stores `user` as `name`, creating it or replacing its state (a configuration file's
    /// `user` line).
    pub fn store(&self, name: &[u8], user: User) {
        put(&mut self.table.write(), name, user);
    }

    /// Deletes the users named (ACL DELUSER; never the default user, which the caller
    /// refuses): the cells deleted.
    pub fn delete(&self, names: &[Vec<u8>]) -> Vec<Arc<UserCell>> {
        let mut table = self.table.write();
        let gone: Vec<_> = names.iter().filter_map(|n| table.remove(n.as_slice())).collect();
        for cell in &gone {
            cell.delete();
        }
        gone
    }

    /// Replaces every user but the default one's cell by `users` (ACL LOAD, which must
    /// include a default user or it is made anew), returning the cells deleted.
    pub fn replace_all(&self, mut users: BTreeMap<Vec<u8>, User>) -> Vec<Arc<UserCell>> {
        let default = users.remove(DEFAULT_USER).unwrap_or_else(|| User::default_user(None));
        let mut table = self.table.write();
        let old_default = table.remove(DEFAULT_USER).expect("the default user is never deleted");
        old_default.set(default);
        let gone: Vec<_> = std::mem::take(&mut *table).into_values().collect();
        for cell in &gone {
            cell.delete();
        }
        table.insert(DEFAULT_USER.to_vec(), old_default);
        for (name, user) in users {
            put(&mut table, &name, user);
        }
        gone
    }

    /// Every user, sorted by name.
    pub fn all(&self) -> Vec<Arc<UserCell>> {
        self.table.read().values().cloned().collect()
    }

    /// The user `name` if it is on and `password` authenticates it.
    pub fn authenticate(&self, name: &[u8], password: &[u8]) -> Option<Arc<UserCell>> {
        let cell = self.get(name)?;
        let ok = {
            let u = cell.read();
            u.enabled && u.password_ok(password)
        };
        ok.then_some(cell)
    }

    /// `requirepass` changed: the default user's only password, or `nopass` for none. Under
    /// the table's lock, as SETUSER's change of the same user is.
    pub fn set_default_password(&self, password: Option<&[u8]>) {
        let table = self.table.write();
        let cell = table.get(DEFAULT_USER).expect("the default user is never deleted");
        let mut u = cell.read().clone();
        u.set_password(password);
        cell.set(u);
    }

    /// Reads users from `user NAME RULES...` lines (each already split into words, with its
    /// 1-based number) of `source` (an ACL file's path, or the configuration file's): the
    /// users, or every problem found in Redis's words (ACL LOAD's error).
    pub fn parse_lines(
        &self,
        catalog: &dyn Catalog,
        source: &str,
        lines: &[(usize, Vec<Vec<u8>>)],
    ) -> Result<BTreeMap<Vec<u8>, User>, String> {
        let all = self.pubsub_all();
        let mut users = BTreeMap::new();
        let mut errors = String::new();
        for (n, args) in lines {
            let n = *n;
            if args.is_empty() {
                continue;
            }
            let (Some(name), true) = (args.get(1), args[0] == b"user") else {
                let _ = write!(
                    errors,
                    "{source}:{n} should start with user keyword followed by the username. "
                );
                continue;
            };
            let name_text = String::from_utf8_lossy(name);
            if name.iter().any(|&c| c == b' ' || c == 0) {
                let _ = write!(
                    errors,
                    "'{source}:{n}: username '{name_text}' contains invalid characters. "
                );
                continue;
            }
            if users.contains_key(name) {
                let _ = write!(errors, "WARNING: Duplicate user '{name_text}' found on line {n}. ");
                continue;
            }
            let Ok(rules) = merge_selectors(&args[2..]) else {
                let _ =
                    write!(errors, "{source}:{n}: Unmatched parenthesis in selector definition.");
                continue;
            };
            let mut user = User::new(all);
            let mut reported = false;
            for rule in &rules {
                if let Err(e) = user.apply(catalog, rule, all) {
                    if e == RuleError::Unknown {
                        let op = String::from_utf8_lossy(rule);
                        let _ = write!(
                            errors,
                            "{source}:{n}: Error in applying operation '{op}': {}. ",
                            e.text()
                        );
                    } else if !reported {
                        let _ = write!(errors, "{source}:{n}: {}. ", e.text());
                        reported = true;
                    }
                }
            }
            users.insert(name.clone(), user);
        }
        if errors.is_empty() {
            Ok(users)
        } else {
            errors += "WARNING: ACL errors detected, no change to the previously active ACL \
                       rules was performed";
            Err(errors)
        }
    }
}

/// SHA-256 of a password, lower-case hex (how users keep them).
pub fn hash_password(password: &[u8]) -> String {
    format!("{:x}", Sha256::digest(password))
}

/// Every command id, each command followed by its subcommands, in the order rules are
/// written.
pub fn every_id(catalog: &dyn Catalog) -> impl Iterator<Item = usize> + '_ {
    catalog
        .top_level()
        .iter()
        .flat_map(move |&id| std::iter::once(id).chain(catalog.subcommands(id).iter().copied()))
}

fn valid_hash(h: &[u8]) -> Result<String, RuleError> {
    if h.len() == 64 && h.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
        Ok(String::from_utf8_lossy(h).into_owned())
    } else {
        Err(RuleError::BadHash)
    }
}

fn same_in_constant_time(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// Stores `user` as `name` in `table`: the existing cell's state replaced (its connections
/// see the change), or a new cell. The cell, and whether it existed.
fn put(
    table: &mut BTreeMap<Vec<u8>, Arc<UserCell>>,
    name: &[u8],
    user: User,
) -> (Arc<UserCell>, bool) {
    match table.get(name) {
        Some(cell) => {
            cell.set(user);
            (cell.clone(), true)
        }
        None => {
            let cell = UserCell::new(name, user);
            table.insert(name.to_vec(), cell.clone());
            (cell, false)
        }
    }
}

/// Joins the arguments of a selector written over several (`(~x*`, `+get)`) into one rule,
/// as Redis does; an unclosed one is Redis's error.
fn merge_selectors(args: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, SetUserError> {
    let mut out = Vec::new();
    let mut open: Option<(usize, Vec<u8>)> = None;
    for (i, a) in args.iter().enumerate() {
        match open.as_mut() {
            Some((_, sel)) => {
                sel.push(b' ');
                sel.extend_from_slice(a);
                if a.last() == Some(&b')') {
                    out.push(open.take().map(|(_, s)| s).unwrap_or_default());
                }
            }
            None if a.first() == Some(&b'(') && a.last() != Some(&b')') => {
                open = Some((i, a.clone()));
            }
            None => out.push(a.clone()),
        }
    }
    match open {
        Some((i, _)) => Err(format!(
            "Unmatched parenthesis in acl selector starting at '{}'.",
            String::from_utf8_lossy(&args[i])
        )),
        None => Ok(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_kept_as_their_sha256_and_checked_whole() {
        let mut u = User::new(false);
        let cat = crate::commands::acl::catalog();
        u.apply(cat, b">secret", false).unwrap();
        assert_eq!(
            u.passwords,
            ["2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b"]
        );
        assert!(u.password_ok(b"secret"));
        assert!(!u.password_ok(b"secre"));
        u.apply(cat, b"nopass", false).unwrap();
        assert!(u.password_ok(b"anything") && u.passwords.is_empty());
        u.apply(cat, b"resetpass", false).unwrap();
        assert!(!u.password_ok(b"anything"));
    }

    /// A selector written over several arguments is one rule; an unclosed one is refused.
    #[test]
    fn selectors_over_several_arguments_are_joined() {
        let args = |xs: &[&str]| xs.iter().map(|x| x.as_bytes().to_vec()).collect::<Vec<_>>();
        assert_eq!(
            merge_selectors(&args(&["on", "(~a", "+get)", "(+set)"])),
            Ok(args(&["on", "(~a +get)", "(+set)"]))
        );
        assert!(merge_selectors(&args(&["(~a", "+get"])).is_err());
    }
}
