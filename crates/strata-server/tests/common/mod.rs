//! Test support: starts the `strata-server` binary on a free loopback port and talks to it
//! with the `redis` crate or a raw RESP client.
#![allow(dead_code)]

pub mod fake_master;
pub mod redis_peer;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running server child process.
pub struct Server {
    pub child: Child,
    pub port: u16,
    pub dir: PathBuf,
    tmp_dir: Option<tempfile::TempDir>,
}

impl Server {
    /// Starts a server on a fresh temporary directory.
    pub fn start(args: &[&str]) -> Server {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let mut s = Server::start_in(&dir, args);
        s.tmp_dir = Some(tmp);
        s
    }

    /// Starts a server on `dir`.
    pub fn start_in(dir: &Path, args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_strata-server"))
            .args(["--port", "0", "--dir"])
            .arg(dir)
            .args(["--write-buffer-size", "1048576"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap());
        let mut port = 0;
        let mut line = String::new();
        while lines.read_line(&mut line).unwrap() > 0 {
            if let Some(p) = line.trim().strip_prefix("Ready to accept connections on port ") {
                port = p.parse().unwrap();
                break;
            }
            line.clear();
        }
        assert!(port > 0, "server did not print its port");
        // Keep draining stdout so the child never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = lines.read_to_end(&mut sink);
        });
        Server { child, port, dir: dir.to_path_buf(), tmp_dir: None }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// A `redis` crate connection.
    pub fn conn(&self) -> redis::Connection {
        redis::Client::open(self.url()).unwrap().get_connection().unwrap()
    }

    /// A raw RESP connection.
    pub fn raw(&self) -> Raw {
        Raw::connect(self.port)
    }

    /// SIGTERM and wait: the graceful shutdown.
    pub fn stop(&mut self) {
        // SAFETY: signalling our own child by its pid.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let status = self.child.wait().unwrap();
        assert!(status.success(), "server exited with {status}");
    }

    /// Whether the process still runs, or how it ended (for a failure's message).
    pub fn state(&mut self) -> String {
        match self.child.try_wait() {
            Ok(None) => "is running".into(),
            Ok(Some(status)) => format!("exited ({status})"),
            Err(e) => format!("cannot be asked ({e})"),
        }
    }

    /// Takes the directory out so it outlives this server (for a restart).
    pub fn keep_dir(&mut self) -> tempfile::TempDir {
        self.tmp_dir.take().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A decoded reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Vec<u8>),
    Null,
    Array(Vec<Reply>),
    Map(Vec<(Reply, Reply)>),
    Set(Vec<Reply>),
    Double(String),
    Verbatim(String),
}

impl Reply {
    pub fn bulk(s: &str) -> Reply {
        Reply::Bulk(s.as_bytes().to_vec())
    }
}

/// A minimal RESP client that sends raw bytes and decodes RESP2/RESP3 replies.
pub struct Raw {
    pub stream: TcpStream,
    buf: Vec<u8>,
    /// Why the last read got no more bytes: the server closed the connection, or the read
    /// failed (a timeout: no reply within the stream's read timeout).
    ended: Option<String>,
}

impl Raw {
    /// A client over an accepted or connected `stream` (a test's fake peer).
    pub fn from_stream(stream: TcpStream) -> Raw {
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        stream.set_nodelay(true).unwrap();
        Raw { stream, buf: Vec::new(), ended: None }
    }

    pub fn connect(port: u16) -> Raw {
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        stream.set_nodelay(true).unwrap();
        Raw { stream, buf: Vec::new(), ended: None }
    }

    pub fn send_raw(&mut self, b: &[u8]) {
        self.stream.write_all(b).unwrap();
    }

    pub fn encode(args: &[&[u8]]) -> Vec<u8> {
        let mut v = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            v.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            v.extend_from_slice(a);
            v.extend_from_slice(b"\r\n");
        }
        v
    }

    pub fn cmd(&mut self, args: &[&str]) -> Reply {
        let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
        self.send_raw(&Self::encode(&a));
        self.read()
    }

    /// MULTI, then each of `cmds`, each answered QUEUED; the EXEC (or DISCARD) is the
    /// caller's.
    pub fn multi(&mut self, cmds: &[&[&str]]) {
        assert_eq!(self.cmd(&["MULTI"]), Reply::Simple("OK".into()));
        for c in cmds {
            assert_eq!(self.cmd(c), Reply::Simple("QUEUED".into()), "{c:?}");
        }
    }

    fn fill(&mut self) -> bool {
        let mut tmp = [0u8; 16384];
        loop {
            // A read with a timeout is never restarted after a signal handler ran (socket(7)):
            // it is tried again here.
            let why = match self.stream.read(&mut tmp) {
                Ok(0) => "the server closed the connection".to_string(),
                Ok(n) => {
                    self.buf.extend_from_slice(&tmp[..n]);
                    return true;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let limit = self.stream.read_timeout().ok().flatten();
                    format!("the read failed ({e}; read timeout {limit:?})")
                }
            };
            self.ended = Some(why);
            return false;
        }
    }

    fn line(&mut self) -> Option<String> {
        loop {
            if let Some(p) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let l = String::from_utf8_lossy(&self.buf[..p]).into_owned();
                self.buf.drain(..p + 2);
                return Some(l);
            }
            if !self.fill() {
                return None;
            }
        }
    }

    /// Reads one reply; `None` when the server closed the connection or none came within the
    /// read timeout.
    pub fn try_read(&mut self) -> Option<Reply> {
        let l = self.line()?;
        let (t, rest) = l.split_at(1);
        Some(match t {
            "+" => Reply::Simple(rest.into()),
            "-" => Reply::Error(rest.into()),
            ":" => Reply::Int(rest.parse().unwrap()),
            "_" => Reply::Null,
            "," => Reply::Double(rest.into()),
            "$" | "=" => {
                let n: i64 = rest.parse().unwrap();
                if n < 0 {
                    return Some(Reply::Null);
                }
                let n = n as usize;
                while self.buf.len() < n + 2 {
                    assert!(self.fill(), "closed inside a bulk");
                }
                let b = self.buf[..n].to_vec();
                self.buf.drain(..n + 2);
                if t == "=" {
                    Reply::Verbatim(String::from_utf8_lossy(&b[4..]).into_owned())
                } else {
                    Reply::Bulk(b)
                }
            }
            "*" | "~" | ">" => {
                let n: i64 = rest.parse().unwrap();
                if n < 0 {
                    return Some(Reply::Null);
                }
                let v = (0..n).map(|_| self.read()).collect();
                if t == "~" {
                    Reply::Set(v)
                } else {
                    Reply::Array(v)
                }
            }
            "%" => {
                let n: usize = rest.parse().unwrap();
                Reply::Map((0..n).map(|_| (self.read(), self.read())).collect())
            }
            other => panic!("unexpected reply type {other:?}"),
        })
    }

    /// [`Raw::read`] from `srv`, whose state a failure names (a crash or a hang).
    pub fn read_from(&mut self, srv: &mut Server) -> Reply {
        self.try_read().unwrap_or_else(|| panic!("{}; the server {}", self.no_reply(), srv.state()))
    }

    pub fn read(&mut self) -> Reply {
        self.try_read().unwrap_or_else(|| panic!("{}", self.no_reply()))
    }

    /// Why the last read found no reply.
    fn no_reply(&self) -> String {
        format!("no reply: {}", self.ended.as_deref().unwrap_or("?"))
    }
}

/// How many clients INFO says are blocked.
pub fn blocked_clients(c: &mut Raw) -> usize {
    let info = match c.cmd(&["INFO", "clients"]) {
        Reply::Bulk(b) => String::from_utf8(b).unwrap(),
        Reply::Verbatim(s) => s,
        other => panic!("INFO replied {other:?}"),
    };
    let line = info.lines().find(|l| l.starts_with("blocked_clients:")).unwrap();
    line["blocked_clients:".len()..].parse().unwrap()
}

/// Waits (10 s at most) until `n` clients are blocked.
pub fn wait_blocked(c: &mut Raw, n: usize) {
    let start = std::time::Instant::now();
    while blocked_clients(c) != n {
        assert!(start.elapsed() < Duration::from_secs(10), "never {n} blocked clients");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A small deterministic PRNG for the randomized model tests.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E3779B97F4A7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Waits up to 10 s for `key` of database `db` on `c` to read `want` (`c` is left in `db`).
pub fn key_reaches(c: &mut Raw, db: &str, key: &str, want: Reply) {
    let until = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        c.cmd(&["SELECT", db]);
        if c.cmd(&["GET", key]) == want {
            return;
        }
        assert!(std::time::Instant::now() < until, "{key} of db {db} never reached {want:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `c` follows (REPLICAOF) the master on `port` of loopback, and the link is up.
pub fn follow(c: &mut Raw, port: u16) {
    let r = c.cmd(&["REPLICAOF", "127.0.0.1", &port.to_string()]);
    assert_eq!(r, Reply::Simple("OK".into()));
    replication_reaches(c, "master_link_status", "up");
}

/// Waits up to 10 s for INFO replication's `field` on `c` to read `want`.
pub fn replication_reaches(c: &mut Raw, field: &str, want: &str) {
    let until = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let got = info_field(c, "replication", field);
        if got == want {
            return;
        }
        assert!(std::time::Instant::now() < until, "{field} stayed {got:?}, not {want:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The value of `field` in INFO `section` (what follows `field:` on its line).
pub fn info_field(c: &mut Raw, section: &str, field: &str) -> String {
    let info = match c.cmd(&["INFO", section]) {
        Reply::Bulk(b) => String::from_utf8(b).unwrap(),
        Reply::Verbatim(s) => s,
        other => panic!("INFO {section}: {other:?}"),
    };
    let prefix = format!("{field}:");
    let line = info.lines().find_map(|l| l.strip_prefix(&prefix));
    line.unwrap_or_else(|| panic!("no {field} in {info}")).trim().to_string()
}

/// INFO's count of metadata writes stored as field deltas (`strata_field_deltas`).
pub fn field_deltas(c: &mut Raw) -> u64 {
    let Reply::Bulk(info) = c.cmd(&["INFO", "strata"]) else { panic!("INFO strata") };
    let info = String::from_utf8(info).unwrap();
    let line = info.lines().find_map(|l| l.strip_prefix("strata_field_deltas:"));
    line.expect("INFO strata has strata_field_deltas").trim().parse().unwrap()
}

/// A server's shared state in this process on `dir` (no listener, no sync), for the tests
/// that call the command layer directly.
pub fn in_process(dir: &Path) -> std::sync::Arc<strata_server::state::Shared> {
    use strata_server::config::{Config, Flags};
    let cfg = Config::resolve(Flags { dir: Some(dir.to_path_buf()), ..Flags::default() }).unwrap();
    let dbs = strata_server::types::open_databases(
        cfg.engine_options(),
        dir,
        strata_server::storage::SyncPolicy::No,
        1,
    )
    .unwrap();
    std::sync::Arc::new(strata_server::state::Shared::new(dbs, cfg, 0))
}

/// Runs `args` on `sh` as one client's command; its reply's bytes.
pub fn run_in(sh: &strata_server::state::Shared, args: &[&str]) -> Vec<u8> {
    let mut conn = strata_server::state::Conn::new(1, true);
    let mut out = strata_server::resp::Out::default();
    let a: Vec<Vec<u8>> = args.iter().map(|s| s.as_bytes().to_vec()).collect();
    strata_server::commands::dispatch(sh, &mut conn, &a, &mut out);
    out.buf
}

/// [`run_in`], failing the test on an error reply.
pub fn run_ok(sh: &strata_server::state::Shared, args: &[&str]) -> Vec<u8> {
    let reply = run_in(sh, args);
    assert!(!reply.starts_with(b"-"), "{args:?}: {}", String::from_utf8_lossy(&reply));
    reply
}
