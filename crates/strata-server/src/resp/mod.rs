//! RESP, the Redis serialization protocol: an incremental request parser ([`parser`]), a
//! reply writer for RESP2 and RESP3 ([`writer`]), and the words of a text line as Redis
//! splits and quotes them ([`args`]: inline requests, configuration and ACL files).
//!
//! Contract: the parser never panics on any input; a malformed frame is a [`ProtocolError`]
//! after which the connection must be closed (the stream cannot be resynchronised).

pub mod args;
pub mod parser;
pub mod writer;

pub use parser::{parse_command, ParseOutcome, ProtocolError};
pub use writer::Out;
