//! One set of permissions: the commands a user may run, the keys and the channels it may
//! name (Redis 7's selector). A user has its root selector and any number of others; a
//! command line is allowed when one of them allows all of it.
//!
//! Rules are Redis's words, applied left to right (`+get`, `-@write`, `+config|get`,
//! `+select|0`, `~key:*`, `%R~cache:*`, `&news.*`, `allkeys`, `resetchannels`, ...). The
//! commands are bits indexed by the [`Catalog`]'s ids; `+@all` also sets the bit of commands
//! to come (Redis's reserved bit), which a later `-cmd` leaves alone but `-@all` clears.

use super::Catalog;

/// Permission a key pattern gives: reading the key's data.
pub const READ: u8 = 1;
/// Permission a key pattern gives: changing the key.
pub const WRITE: u8 = 2;
/// Both (`~pattern`).
pub const ALL: u8 = READ | WRITE;

/// Command ids a selector can hold (Redis's `USER_COMMAND_BITS_COUNT`); the last bit is that
/// of commands to come, so catalogs have fewer ids than this.
pub const MAX_IDS: usize = 1024;

/// Why a rule was refused; each is Redis's text after `Error in ACL SETUSER modifier '...': `.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleError {
    /// The rule's word, or a pattern with a space in it, is not understood.
    Syntax,
    /// `+`/`-` names no command or category this server has.
    Unknown,
    /// A key pattern after `allkeys`.
    AfterAllKeys,
    /// A channel pattern after `allchannels`.
    AfterAllChannels,
    /// `<password` or `!hash` names no password of the user.
    NoSuchPassword,
    /// `#hash` or `!hash` that is not 64 lower-case hexadecimal characters.
    BadHash,
    /// `+container|sub|arg`: a first argument of a subcommand.
    SubcommandFirstArg,
    /// A second definition of a user in a configuration or ACL file.
    Duplicate,
}

impl RuleError {
    /// Redis's description of the error.
    pub fn text(self) -> &'static str {
        match self {
            RuleError::Syntax => "Syntax error",
            RuleError::Unknown => "Unknown command or category name in ACL",
            RuleError::AfterAllKeys => {
                "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and \
                 does not have any effect. Try 'resetkeys' to start with an empty list of \
                 patterns"
            }
            RuleError::AfterAllChannels => {
                "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid \
                 and does not have any effect. Try 'resetchannels' to start with an empty list \
                 of channels"
            }
            RuleError::NoSuchPassword => {
                "The password you are trying to remove from the user does not exist"
            }
            RuleError::BadHash => {
                "The password hash must be exactly 64 characters and contain only lowercase \
                 hexadecimal characters"
            }
            RuleError::SubcommandFirstArg => "Allowing first-arg of a subcommand is not supported",
            RuleError::Duplicate => {
                "Duplicate user found. A user can only be defined once in config files"
            }
        }
    }
}

/// What a command line asks of a selector, as the command layer finds it.
pub struct Line<'a> {
    /// The command's id (its subcommand's, for a container's listed subcommand).
    pub id: usize,
    /// Runs without authentication (AUTH, HELLO, ...): always allowed.
    pub no_auth: bool,
    /// The argument a `+cmd|arg` rule compares: the first after the command (after the
    /// subcommand, for a subcommand).
    pub first_arg: Option<&'a [u8]>,
    /// The keys, each with its argument index and the permissions it needs ([`READ`],
    /// [`WRITE`]).
    pub keys: Vec<(usize, &'a [u8], u8)>,
    /// The channels, each with its argument index and whether it is a pattern
    /// (PSUBSCRIBE's, compared literally).
    pub channels: Vec<(usize, &'a [u8], bool)>,
}

/// Why a selector (or a user) refuses a command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Denied {
    /// The command. Ranked lowest: a user's answer names a key or channel when some
    /// selector allowed the command (Redis's order of its reasons).
    Command,
    /// The key at this argument index.
    Key(usize),
    /// The channel at this argument index.
    Channel(usize),
}

impl Denied {
    /// Redis's rank of the reason (`ACL_DENIED_CMD` 1, `_KEY` 2, `_CHANNEL` 4).
    fn rank(self) -> u8 {
        match self {
            Denied::Command => 1,
            Denied::Key(_) => 2,
            Denied::Channel(_) => 4,
        }
    }

    fn index(self) -> usize {
        match self {
            Denied::Command => 0,
            Denied::Key(i) | Denied::Channel(i) => i,
        }
    }

    /// The reason a user reports when every selector refused: the highest ranked, then the
    /// latest argument (Redis's choice).
    pub fn more_relevant(self, other: Denied) -> Denied {
        if other.rank() > self.rank()
            || (other.rank() == self.rank() && other.index() > self.index())
        {
            other
        } else {
            self
        }
    }
}

/// A selector (module doc).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selector {
    /// One bit per catalog id; the last one is the bit of commands to come.
    bits: [u64; MAX_IDS / 64],
    /// Every command allowed without looking at the bits (`+@all` since the last `-`).
    all_commands: bool,
    /// `+cmd|arg` rules of commands whose bit is clear: the first arguments allowed.
    first_args: Vec<(usize, Vec<Vec<u8>>)>,
    /// Key patterns with their permissions, in the order added.
    keys: Vec<(u8, Vec<u8>)>,
    all_keys: bool,
    /// Channel patterns, in the order added.
    channels: Vec<Vec<u8>>,
    all_channels: bool,
}

impl Selector {
    /// An empty selector (no command, key or channel); with every channel if `all_channels`
    /// (`acl-pubsub-default allchannels`).
    pub fn new(all_channels: bool) -> Selector {
        Selector {
            bits: [0; MAX_IDS / 64],
            all_commands: false,
            first_args: Vec::new(),
            keys: Vec::new(),
            all_keys: false,
            channels: Vec::new(),
            all_channels,
        }
    }

    /// Every command, key and channel (the default user's root selector).
    pub fn unrestricted_root() -> Selector {
        Selector {
            bits: [u64::MAX; MAX_IDS / 64],
            all_commands: true,
            all_keys: true,
            all_channels: true,
            ..Selector::new(true)
        }
    }

    /// The bit of commands to come.
    const FUTURE_BIT: usize = MAX_IDS - 1;

    /// Whether the bit of `id` is set.
    pub fn bit(&self, id: usize) -> bool {
        self.bits[id / 64] & (1 << (id % 64)) != 0
    }

    fn set_bit(&mut self, id: usize, on: bool) {
        if on {
            self.bits[id / 64] |= 1 << (id % 64);
        } else {
            self.bits[id / 64] &= !(1 << (id % 64));
            self.all_commands = false;
        }
    }

    /// Whether `+@all` set the bit of commands to come (and no `-@all` cleared it since).
    pub fn runs_future_commands(&self) -> bool {
        self.bit(Self::FUTURE_BIT)
    }

    /// Whether it allows every command, key and channel (the default user's state).
    pub fn unrestricted(&self) -> bool {
        self.all_commands && self.all_keys && self.all_channels
    }

    /// Allows or forbids command `id` and all its subcommands.
    fn change(&mut self, catalog: &dyn Catalog, id: usize, allow: bool) {
        self.set_bit(id, allow);
        self.first_args.retain(|(i, _)| *i != id);
        for &sub in catalog.subcommands(id) {
            self.set_bit(sub, allow);
        }
    }

    /// Sets every command of `category` (and every subcommand of it) as `allow` says;
    /// `false` when there is no such category.
    fn change_category(&mut self, catalog: &dyn Catalog, category: &str, allow: bool) -> bool {
        if !catalog.categories().contains(&category) {
            return false;
        }
        for id in super::every_id(catalog) {
            if catalog.in_category(id, category) {
                self.change(catalog, id, allow);
            }
        }
        true
    }

    /// The numbers of the commands of `category` this selector allows and forbids.
    pub fn count_category(&self, catalog: &dyn Catalog, category: &str) -> (usize, usize) {
        super::every_id(catalog)
            .filter(|&id| catalog.in_category(id, category))
            .fold((0, 0), |(on, off), id| if self.bit(id) { (on + 1, off) } else { (on, off + 1) })
    }

    /// The first arguments `+id|arg` rules allow.
    pub fn first_args_of(&self, id: usize) -> &[Vec<u8>] {
        self.first_args.iter().find(|(i, _)| *i == id).map_or(&[], |(_, a)| a.as_slice())
    }

    /// Whether the bits (and the bit of commands to come) are the same as `other`'s.
    pub fn same_commands(&self, other: &Selector) -> bool {
        self.bits == other.bits
    }

    /// Applies one rule (module doc); on an error nothing changed.
    pub fn apply(&mut self, catalog: &dyn Catalog, op: &[u8]) -> Result<(), RuleError> {
        let lower = op.to_ascii_lowercase();
        match lower.as_slice() {
            b"allkeys" | b"~*" => {
                self.all_keys = true;
                self.keys.clear();
            }
            b"resetkeys" => {
                self.all_keys = false;
                self.keys.clear();
            }
            b"allchannels" | b"&*" => {
                self.all_channels = true;
                self.channels.clear();
            }
            b"resetchannels" => {
                self.all_channels = false;
                self.channels.clear();
            }
            b"allcommands" | b"+@all" => {
                self.bits.iter_mut().for_each(|w| *w = u64::MAX);
                self.all_commands = true;
                self.first_args.clear();
            }
            b"nocommands" | b"-@all" => {
                self.bits.iter_mut().for_each(|w| *w = 0);
                self.all_commands = false;
                self.first_args.clear();
            }
            _ => return self.apply_pattern_or_command(catalog, op),
        }
        Ok(())
    }

    fn apply_pattern_or_command(
        &mut self,
        catalog: &dyn Catalog,
        op: &[u8],
    ) -> Result<(), RuleError> {
        let has_space = |s: &[u8]| s.iter().any(|&c| c == b' ' || c == 0);
        match op.first() {
            Some(b'~' | b'%') => {
                if self.all_keys {
                    return Err(RuleError::AfterAllKeys);
                }
                let (flags, pattern) = key_rule(op)?;
                if has_space(pattern) {
                    return Err(RuleError::Syntax);
                }
                match self.keys.iter_mut().find(|(_, p)| p == pattern) {
                    Some((f, _)) => *f |= flags,
                    None => self.keys.push((flags, pattern.to_vec())),
                }
            }
            Some(b'&') => {
                if self.all_channels {
                    return Err(RuleError::AfterAllChannels);
                }
                let pattern = &op[1..];
                if has_space(pattern) {
                    return Err(RuleError::Syntax);
                }
                if !self.channels.iter().any(|p| p == pattern) {
                    self.channels.push(pattern.to_vec());
                }
            }
            Some(&sign @ (b'+' | b'-')) if op.get(1) == Some(&b'@') => {
                let category = String::from_utf8_lossy(&op[2..]).to_ascii_lowercase();
                if !self.change_category(catalog, &category, sign == b'+') {
                    return Err(RuleError::Unknown);
                }
            }
            Some(b'+') => self.allow_command(catalog, &op[1..])?,
            Some(b'-') => {
                let name = lower_str(&op[1..]);
                match catalog.id(&name) {
                    Some(id) => self.change(catalog, id, false),
                    None if catalog.elsewhere(&name) => {}
                    None => return Err(RuleError::Unknown),
                }
            }
            _ => return Err(RuleError::Syntax),
        }
        Ok(())
    }

    /// `+name`, `+container|sub` or `+command|first-arg`.
    fn allow_command(&mut self, catalog: &dyn Catalog, name: &[u8]) -> Result<(), RuleError> {
        let known = |n: &str| catalog.id(n).ok_or(RuleError::Unknown);
        let Some(bar) = name.iter().rposition(|&c| c == b'|') else {
            let full = lower_str(name);
            if catalog.id(&full).is_none() && catalog.elsewhere(&full) {
                return Ok(());
            }
            let id = known(&full)?;
            self.change(catalog, id, true);
            return Ok(());
        };
        let (command, arg) = (&name[..bar], &name[bar + 1..]);
        let command_name = lower_str(command);
        if catalog.id(&command_name).is_none() && catalog.elsewhere(&command_name) {
            return if arg.is_empty() { Err(RuleError::Syntax) } else { Ok(()) };
        }
        let id = known(&command_name)?;
        if catalog.parent(id).is_some() {
            return Err(RuleError::SubcommandFirstArg);
        }
        if arg.is_empty() {
            return Err(RuleError::Syntax);
        }
        if !catalog.subcommands(id).is_empty() {
            let full = lower_str(name);
            match catalog.id(&full) {
                Some(sub) => self.change(catalog, sub, true),
                None if catalog.elsewhere(&full) => {}
                None => return Err(RuleError::Unknown),
            }
            return Ok(());
        }
        // A first argument of a command without subcommands (SELECT|0): kept beside the bit.
        let arg = arg.to_ascii_lowercase();
        match self.first_args.iter_mut().find(|(i, _)| *i == id) {
            Some((_, args)) if args.contains(&arg) => {}
            Some((_, args)) => args.push(arg),
            None => self.first_args.push((id, vec![arg])),
        }
        Ok(())
    }

    /// Whether this selector allows `line` (module doc), or the first thing it refuses.
    /// Whether every key is allowed with the permissions `needs`: `allkeys`, or a `*` pattern
    /// with them.
    pub fn reaches_every_key(&self, needs: u8) -> bool {
        self.all_keys || self.keys.iter().any(|(flags, p)| flags & needs == needs && p == b"*")
    }

    pub fn check(&self, catalog: &dyn Catalog, line: &Line<'_>) -> Result<(), Denied> {
        if !self.all_commands && !line.no_auth && !self.bit(line.id) {
            let allowed = line.first_arg.is_some_and(|a| {
                self.first_args_of(line.id).iter().any(|f| f.eq_ignore_ascii_case(a))
            });
            if !allowed {
                return Err(Denied::Command);
            }
        }
        if !self.all_keys {
            for &(i, key, needs) in &line.keys {
                let ok = self
                    .keys
                    .iter()
                    .any(|(flags, p)| flags & needs == needs && catalog.matches(p, key));
                if !ok {
                    return Err(Denied::Key(i));
                }
            }
        }
        if !self.all_channels {
            for &(i, channel, pattern) in &line.channels {
                if !self.allows_channel(catalog, channel, pattern) {
                    return Err(Denied::Channel(i));
                }
            }
        }
        Ok(())
    }

    /// Whether `channel` (a PSUBSCRIBE pattern if `pattern`, compared literally) may be used.
    pub fn allows_channel(&self, catalog: &dyn Catalog, channel: &[u8], pattern: bool) -> bool {
        self.all_channels
            || self.channels.iter().any(|p| {
                if pattern {
                    p == channel
                } else {
                    catalog.matches(p, channel)
                }
            })
    }

    /// Its keys as ACL LIST and GETUSER write them: `~*`, or each pattern with its
    /// permissions (`~p`, `%R~p`, `%W~p`), space-separated.
    pub fn describe_keys(&self) -> Vec<u8> {
        if self.all_keys {
            return b"~*".to_vec();
        }
        let mut out = Vec::new();
        for (flags, p) in &self.keys {
            if !out.is_empty() {
                out.push(b' ');
            }
            out.extend_from_slice(match *flags {
                READ => b"%R~".as_slice(),
                WRITE => b"%W~",
                _ => b"~",
            });
            out.extend_from_slice(p);
        }
        out
    }

    /// Its channels as GETUSER writes them: `&*`, or each pattern after `&`.
    pub fn describe_channels(&self) -> Vec<u8> {
        if self.all_channels {
            return b"&*".to_vec();
        }
        let mut out = Vec::new();
        for p in &self.channels {
            if !out.is_empty() {
                out.push(b' ');
            }
            out.push(b'&');
            out.extend_from_slice(p);
        }
        out
    }

    /// Whether it allows every channel.
    pub fn all_channels(&self) -> bool {
        self.all_channels
    }

    /// Its channel patterns (none when it allows every channel).
    pub fn channel_patterns(&self) -> &[Vec<u8>] {
        &self.channels
    }
}

/// A key rule's permissions and pattern: `~p` both, `%R~p`, `%W~p`, `%RW~p`.
fn key_rule(op: &[u8]) -> Result<(u8, &[u8]), RuleError> {
    if op[0] == b'~' {
        return Ok((ALL, &op[1..]));
    }
    let mut flags = 0;
    for (i, &c) in op.iter().enumerate().skip(1) {
        match c.to_ascii_uppercase() {
            b'R' if flags & READ == 0 => flags |= READ,
            b'W' if flags & WRITE == 0 => flags |= WRITE,
            b'~' if flags != 0 => return Ok((flags, &op[i + 1..])),
            _ => return Err(RuleError::Syntax),
        }
    }
    Err(RuleError::Syntax)
}

fn lower_str(name: &[u8]) -> String {
    String::from_utf8_lossy(name).to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::acl::catalog;

    fn line<'a>(name: &str, keys: &[(&'a [u8], u8)], channels: &[(&'a [u8], bool)]) -> Line<'a> {
        Line {
            id: catalog().id(name).unwrap(),
            no_auth: false,
            first_arg: None,
            keys: keys.iter().enumerate().map(|(i, &(k, f))| (i + 1, k, f)).collect(),
            channels: channels.iter().enumerate().map(|(i, &(c, p))| (i + 1, c, p)).collect(),
        }
    }

    /// Key patterns need the permissions a key needs; channel patterns match channels, and
    /// a subscription pattern only as written.
    #[test]
    fn keys_and_channels_need_matching_patterns_with_the_permissions() {
        let cat = catalog();
        let mut s = Selector::new(false);
        for r in ["+@all", "~a*", "%R~r*", "%W~w*", "%RW~b*", "&news.*"] {
            s.apply(cat, r.as_bytes()).unwrap();
        }
        assert_eq!(s.describe_keys(), b"~a* %R~r* %W~w* ~b*");
        let get = |k: &'static [u8], f| s.check(cat, &line("get", &[(k, f)], &[]));
        assert_eq!(get(b"a1", ALL), Ok(()));
        assert_eq!(get(b"r1", READ), Ok(()));
        assert_eq!(get(b"r1", ALL), Err(Denied::Key(1)));
        assert_eq!(get(b"w1", WRITE), Ok(()));
        assert_eq!(get(b"w1", READ), Err(Denied::Key(1)));
        assert_eq!(get(b"b1", ALL), Ok(()));
        assert_eq!(get(b"x", 0), Err(Denied::Key(1)), "a key must match some pattern");
        let publish = |c: &'static [u8], p| s.check(cat, &line("publish", &[], &[(c, p)]));
        assert_eq!(publish(b"news.a", false), Ok(()));
        assert_eq!(publish(b"sports", false), Err(Denied::Channel(1)));
        assert_eq!(publish(b"news.*", true), Ok(()));
        assert_eq!(publish(b"news.a*", true), Err(Denied::Channel(1)));
        // `%R~p` then `%W~p` is `~p`; `allkeys` takes no pattern after it.
        let mut t = Selector::new(false);
        t.apply(cat, b"%R~p").unwrap();
        t.apply(cat, b"%w~p").unwrap();
        assert_eq!(t.describe_keys(), b"~p");
        for bad in [&b"%X~p"[..], b"%~p", b"%R", b"~a b"] {
            assert_eq!(
                t.apply(cat, bad),
                Err(RuleError::Syntax),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        t.apply(cat, b"allkeys").unwrap();
        assert_eq!(t.apply(cat, b"~q"), Err(RuleError::AfterAllKeys));
    }

    /// A container's rule covers its subcommands; `-cmd` keeps the bit of commands to come
    /// only until `-@all`; first arguments allow a command whose bit is clear.
    #[test]
    fn commands_subcommands_and_first_arguments() {
        let cat = catalog();
        let id = |n: &str| cat.id(n).unwrap();
        let mut s = Selector::new(false);
        s.apply(cat, b"+config").unwrap();
        assert!(s.bit(id("config|get")) && s.bit(id("config|set")));
        s.apply(cat, b"-config|set").unwrap();
        assert!(s.bit(id("config|get")) && !s.bit(id("config|set")));
        s.apply(cat, b"+@all").unwrap();
        s.apply(cat, b"-get").unwrap();
        assert!(s.runs_future_commands() && !s.unrestricted());
        s.apply(cat, b"-@all").unwrap();
        assert!(!s.runs_future_commands());
        s.apply(cat, b"+select|2").unwrap();
        let select = |arg: &'static [u8]| {
            s.check(cat, &Line { first_arg: Some(arg), ..line("select", &[], &[]) })
        };
        assert_eq!(select(b"2"), Ok(()));
        assert_eq!(select(b"3"), Err(Denied::Command));
        assert_eq!(s.apply(cat, b"+nosuch"), Err(RuleError::Unknown));
        assert_eq!(s.apply(cat, b"+@nosuch"), Err(RuleError::Unknown));
        assert_eq!(s.apply(cat, b"+select|"), Err(RuleError::Syntax));
        assert_eq!(s.apply(cat, b"-debug"), Ok(()), "Redis's, not served here");
        assert_eq!(s.apply(cat, b"+cluster|meet"), Ok(()));
    }
}
