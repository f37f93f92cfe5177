//! The info LOG's level and destination (`Options::set_log_level`, `Options::set_info_logger`).

use std::sync::Arc;

/// Verbosity of the info LOG (RocksDB's `InfoLogLevel`; the discriminants are its values).
#[derive(Debug, Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Default)]
#[repr(i32)]
pub enum LogLevel {
    /// Everything.
    Debug = 0,
    /// Normal operation (the level of every line Strata writes). Default.
    #[default]
    Info,
    /// Warnings and above.
    Warn,
    /// Errors and above.
    Error,
    /// Fatal errors only.
    Fatal,
    /// Headers only.
    Header,
}

/// A callback receiving the LOG's lines.
type LogCallback = dyn Fn(LogLevel, &str) + Send + Sync + 'static;

#[derive(Clone)]
enum Sink {
    /// The DB's `LOG` file (what a DB without a logger writes to).
    LogFile,
    /// Lines go to standard error, after an optional prefix.
    Stderr(Option<String>),
    /// Lines go to a callback.
    Callback(Arc<LogCallback>),
}

/// Where the info LOG's lines go instead of the `LOG` file (RocksDB's `Logger`): standard
/// error or a callback. Lines below the logger's level are dropped; every line Strata writes
/// is at `Info` level. Clones share the callback.
#[derive(Clone)]
pub struct InfoLogger {
    level: LogLevel,
    sink: Sink,
}

impl std::fmt::Debug for InfoLogger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sink = match &self.sink {
            Sink::Stderr(p) => format!("stderr (prefix {p:?})"),
            Sink::Callback(_) => "callback".to_string(),
            Sink::LogFile => "the LOG file".to_string(),
        };
        f.debug_struct("InfoLogger").field("level", &self.level).field("sink", &sink).finish()
    }
}

impl InfoLogger {
    /// Lines at `log_level` and above go to standard error, each after `prefix` when given.
    pub fn new_stderr_logger<S: AsRef<str>>(log_level: LogLevel, prefix: Option<S>) -> Self {
        InfoLogger { level: log_level, sink: Sink::Stderr(prefix.map(|p| p.as_ref().to_string())) }
    }

    /// Lines at `level` and above are passed to `cb` with their level (from the thread that
    /// logs them, the DB's own threads included: keep it short).
    pub fn new_callback_logger<F: Fn(LogLevel, &str) + Sync + Send + 'static>(
        level: LogLevel,
        cb: F,
    ) -> Self {
        InfoLogger { level, sink: Sink::Callback(Arc::new(cb)) }
    }

    /// The default destination: the DB's `LOG` file (what `Options::get_info_logger`
    /// returns when no logger was set; giving it to `set_info_logger` changes nothing).
    pub(crate) fn log_file() -> Self {
        InfoLogger { level: LogLevel::Info, sink: Sink::LogFile }
    }

    /// Whether lines go to the `LOG` file rather than elsewhere.
    pub fn is_log_file(&self) -> bool {
        matches!(self.sink, Sink::LogFile)
    }

    /// The lowest level passed on.
    pub fn level(&self) -> LogLevel {
        self.level
    }

    /// Passes `line` at `level` on, unless below the logger's level.
    pub fn log(&self, level: LogLevel, line: &str) {
        if level < self.level {
            return;
        }
        match &self.sink {
            Sink::Stderr(None) => eprintln!("{line}"),
            Sink::Stderr(Some(p)) => eprintln!("{p}{line}"),
            Sink::Callback(cb) => cb(level, line),
            Sink::LogFile => {}
        }
    }
}
