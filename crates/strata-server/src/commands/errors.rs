//! Error replies: Redis's exact texts, and the one mapping from the data layer's errors
//! ([`TypeError`]) to them ([`type_error_reply`]). A handler fails with a [`CmdError`];
//! `dispatch` writes its text. Clients and tests compare these texts byte for byte.

use crate::types::hll::HllError;
use crate::types::stream::StreamError;
use crate::types::TypeError;
use std::borrow::Cow;

/// `WRONGTYPE ...`
/// The most elements SRANDMEMBER/ZRANDMEMBER draw with repeats (a negative count): Redis
/// would build any reply until memory runs out; past this the command is refused instead.
pub const MAX_DRAWS: u64 = 1 << 26;
/// The refusal of a larger draw.
pub const TOO_MANY_DRAWS: &str =
    "ERR count is too large: at most 67108864 elements may be drawn with repeats";

pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
/// `ERR syntax error`
pub const SYNTAX: &str = "ERR syntax error";
/// `ERR value is not an integer or out of range`
pub const NOT_INT: &str = "ERR value is not an integer or out of range";
/// `ERR value is not a valid float`
pub const NOT_FLOAT: &str = "ERR value is not a valid float";
/// `ERR increment or decrement would overflow`
pub const OVERFLOW: &str = "ERR increment or decrement would overflow";
/// `ERR value is out of range, must be positive` (a negative count)
pub const NOT_POSITIVE: &str = "ERR value is out of range, must be positive";
/// `NOAUTH Authentication required.`
pub const NOAUTH: &str = "NOAUTH Authentication required.";

/// Why a command failed.
#[derive(Debug)]
pub enum CmdError {
    /// The data layer refused or failed; replied with [`type_error_reply`]'s text.
    Type(TypeError),
    /// What the command found itself (its arguments, options, state), as the reply text.
    Reply(Cow<'static, str>),
}

impl CmdError {
    /// The error reply's text (it starts with the error code).
    pub fn reply_text(&self) -> Cow<'_, str> {
        match self {
            CmdError::Type(e) => type_error_reply(e),
            CmdError::Reply(text) => Cow::Borrowed(text),
        }
    }
}

/// Redis's reply text for a data-layer error.
pub fn type_error_reply(e: &TypeError) -> Cow<'static, str> {
    match e {
        TypeError::WrongType => WRONGTYPE.into(),
        TypeError::NotAnInteger => NOT_INT.into(),
        TypeError::HashValueNotAnInteger => "ERR hash value is not an integer".into(),
        TypeError::Overflow => OVERFLOW.into(),
        TypeError::NanScore => "ERR resulting score is not a number (NaN)".into(),
        TypeError::NoSuchKey => "ERR no such key".into(),
        TypeError::NotAFloat => NOT_FLOAT.into(),
        TypeError::NanOrInfinity => "ERR increment would produce NaN or Infinity".into(),
        TypeError::IncrNanOrInfinity => "ERR value is NaN or Infinity".into(),
        TypeError::HashValueNotAFloat => "ERR hash value is not a float".into(),
        TypeError::StringTooLong => {
            "ERR string exceeds maximum allowed size (proto-max-bulk-len)".into()
        }
        TypeError::LcsNotStrings => "ERR The specified keys must contain string values".into(),
        TypeError::IndexOutOfRange => "ERR index out of range".into(),
        TypeError::Corrupt(what) => format!("ERR corrupt {what}").into(),
        TypeError::Engine(e) => format!("ERR storage error: {e}").into(),
        TypeError::NotReplicated(reply) => reply.clone().into(),
        TypeError::NoSlot => "ERR this command is not supported in cluster mode".into(),
        TypeError::Stream(e) => stream_error_reply(*e).into(),
        TypeError::Hll(HllError::NotHll) => {
            "WRONGTYPE Key is not a valid HyperLogLog string value.".into()
        }
        TypeError::Hll(HllError::Corrupt(_)) => "INVALIDOBJ Corrupted HLL object detected".into(),
    }
}

/// Redis's reply text for a refused stream operation. `NoGroup`'s text names the key and
/// group and differs by command: the stream commands reply their own.
fn stream_error_reply(e: StreamError) -> &'static str {
    match e {
        StreamError::IdNotGreater => {
            "ERR The ID specified in XADD is equal or smaller than the target stream top item"
        }
        StreamError::Exhausted => {
            "ERR The stream has exhausted the last possible ID, unable to add more items"
        }
        StreamError::TooLarge => "ERR Elements are too large to be stored",
        StreamError::NoGroup => "NOGROUP No such key or consumer group",
        StreamError::GroupExists => "BUSYGROUP Consumer Group name already exists",
        StreamError::SetIdBelowTop => {
            "ERR The ID specified in XSETID is smaller than the target stream top item"
        }
        StreamError::EntriesAddedBelowLength => {
            "ERR The entries_added specified in XSETID is smaller than the target stream length"
        }
    }
}

impl From<TypeError> for CmdError {
    fn from(e: TypeError) -> Self {
        CmdError::Type(e)
    }
}

impl From<strata::Error> for CmdError {
    fn from(e: strata::Error) -> Self {
        CmdError::Type(TypeError::Engine(e))
    }
}

impl From<&'static str> for CmdError {
    fn from(text: &'static str) -> Self {
        CmdError::Reply(Cow::Borrowed(text))
    }
}

impl From<String> for CmdError {
    fn from(text: String) -> Self {
        CmdError::Reply(Cow::Owned(text))
    }
}

/// Redis's reply to a bad subcommand argument list (`addReplySubcommandSyntaxError`).
pub fn subcommand_syntax(a: &[Vec<u8>]) -> CmdError {
    try_help(a, "unknown subcommand or wrong number of arguments for")
}

/// Redis's reply to an unknown subcommand of a container command.
pub fn unknown_subcommand(a: &[Vec<u8>]) -> CmdError {
    try_help(a, "unknown subcommand")
}

/// `ERR <what> '<subcommand>'. Try <COMMAND> HELP.`, the subcommand cut at 128 characters
/// as Redis's `%.128s`.
fn try_help(a: &[Vec<u8>], what: &str) -> CmdError {
    let sub: String = String::from_utf8_lossy(&a[1]).chars().take(128).collect();
    let name = String::from_utf8_lossy(&a[0]).to_ascii_uppercase();
    format!("ERR {what} '{sub}'. Try {name} HELP.").into()
}

/// `ERR wrong number of arguments for 'name' command`
pub fn arity_err(name: &str) -> String {
    format!("ERR wrong number of arguments for '{name}' command")
}

/// `ERR unknown command 'x', with args beginning with: 'a' 'b' `
pub fn unknown_err(args: &[Vec<u8>]) -> String {
    let name = String::from_utf8_lossy(&args[0]);
    let name: String = name.chars().take(128).collect();
    let mut s = format!("ERR unknown command '{name}', with args beginning with: ");
    for a in args.iter().skip(1) {
        if s.len() > 256 {
            break;
        }
        let a = String::from_utf8_lossy(a);
        let a: String = a.chars().take(128).collect();
        s.push('\'');
        s.push_str(&a);
        s.push_str("' ");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_errors_reply_with_redis_texts() {
        let text = |e: TypeError| CmdError::from(e).reply_text().into_owned();
        assert_eq!(text(TypeError::WrongType), WRONGTYPE);
        assert_eq!(text(TypeError::NotAnInteger), "ERR value is not an integer or out of range");
        assert_eq!(text(TypeError::HashValueNotAnInteger), "ERR hash value is not an integer");
        assert_eq!(text(TypeError::Overflow), "ERR increment or decrement would overflow");
        assert_eq!(text(TypeError::NanScore), "ERR resulting score is not a number (NaN)");
        assert_eq!(text(TypeError::NoSuchKey), "ERR no such key");
        assert_eq!(text(TypeError::NotAFloat), "ERR value is not a valid float");
        assert_eq!(text(TypeError::NanOrInfinity), "ERR increment would produce NaN or Infinity");
        assert_eq!(
            text(TypeError::StringTooLong),
            "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
        );
        assert_eq!(
            text(TypeError::LcsNotStrings),
            "ERR The specified keys must contain string values"
        );
        assert_eq!(text(TypeError::IndexOutOfRange), "ERR index out of range");
        assert_eq!(
            text(TypeError::Hll(HllError::NotHll)),
            "WRONGTYPE Key is not a valid HyperLogLog string value."
        );
        let bad = crate::types::hll::sparse::BadOpcodes { offset: 2, why: "runs past" };
        assert_eq!(
            text(TypeError::Hll(HllError::Corrupt(bad))),
            "INVALIDOBJ Corrupted HLL object detected"
        );
        assert_eq!(
            text(TypeError::Corrupt("list: missing element".into())),
            "ERR corrupt list: missing element"
        );
        let engine = strata::Error::InvalidArgument("x".into());
        let shown = engine.to_string();
        assert_eq!(text(TypeError::Engine(engine)), format!("ERR storage error: {shown}"));
        assert_eq!(CmdError::from(SYNTAX).reply_text(), SYNTAX);
        assert_eq!(
            text(TypeError::Stream(StreamError::GroupExists)),
            "BUSYGROUP Consumer Group name already exists"
        );
    }
}
