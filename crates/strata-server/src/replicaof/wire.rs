//! The link's connection: a blocking socket whose reads wake at least every tenth of a second
//! to look whether the link was stopped and whether the master has been silent for
//! `repl-timeout`, with a buffer of what came and was not used yet.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::LinkError;
use crate::master_link::LinkState;
use crate::resp::Out;
use crate::state::Shared;

/// How long a read waits before the link looks at its stop flag and timeout.
const POLL: Duration = Duration::from_millis(100);
/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The most one read takes.
const READ_SIZE: usize = 64 * 1024;
/// The most a reply line of the handshake may hold.
const MAX_LINE: usize = 64 * 1024;

/// A connection to the master.
pub struct Wire {
    sock: TcpStream,
    /// What came and was not consumed yet.
    pub buf: Vec<u8>,
    /// Where a read lands before it joins `buf` (allocated once).
    scratch: Box<[u8]>,
    link: Arc<LinkState>,
    /// `repl-timeout`.
    timeout: Duration,
}

impl Wire {
    /// Connects to `link`'s master.
    pub fn connect(sh: &Shared, link: &Arc<LinkState>) -> Result<Wire, LinkError> {
        let t = &link.target;
        let addrs = (t.host.as_str(), t.port)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {}:{}: {e}", t.host, t.port))?;
        let mut last = format!("{}:{} resolves to no address", t.host, t.port);
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
                Ok(sock) => {
                    sock.set_nodelay(true)?;
                    sock.set_read_timeout(Some(POLL))?;
                    sock.set_write_timeout(Some(CONNECT_TIMEOUT))?;
                    let secs = sh
                        .params
                        .read()
                        .get("repl-timeout")
                        .and_then(|v| v.parse::<u64>().ok())
                        .filter(|&s| s > 0)
                        .unwrap_or(60);
                    link.heard();
                    return Ok(Wire {
                        sock,
                        buf: Vec::new(),
                        scratch: vec![0; READ_SIZE].into_boxed_slice(),
                        link: link.clone(),
                        timeout: Duration::from_secs(secs),
                    });
                }
                Err(e) => last = format!("cannot connect to {addr}: {e}"),
            }
        }
        Err(LinkError::Failed(last))
    }

    /// Sends `args` as a RESP command (an array of bulk strings, as a client sends one).
    pub fn send(&mut self, args: &[&[u8]]) -> Result<(), LinkError> {
        let mut frame = Out::default();
        frame.array(args.len());
        for a in args {
            frame.bulk(a);
        }
        self.sock.write_all(&frame.buf)?;
        Ok(())
    }

    /// Reads more into [`Wire::buf`]: how many bytes came (0: none within the poll, which
    /// lets the caller do its periodic work). Fails when the master closed the connection,
    /// the link was stopped, or the master has been silent for `repl-timeout`.
    pub fn read_more(&mut self) -> Result<usize, LinkError> {
        if self.link.stopped() {
            return Err(LinkError::Stopped);
        }
        match self.sock.read(&mut self.scratch) {
            Ok(0) => Err(LinkError::Failed("the master closed the connection".into())),
            Ok(n) => {
                self.buf.extend_from_slice(&self.scratch[..n]);
                self.link.heard();
                Ok(n)
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) =>
            {
                let last = self.link.last_io_ms.load(Ordering::Relaxed);
                let silent = crate::types::keyspace::now_ms().saturating_sub(last);
                if silent > self.timeout.as_millis() as u64 {
                    return Err(LinkError::Failed(format!(
                        "no data from the master for {} s (repl-timeout)",
                        silent / 1000
                    )));
                }
                Ok(0)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// One reply line (without its CRLF), waiting for it. Empty lines (the newlines a master
    /// sends to keep the link alive while it prepares a sync) are skipped.
    pub fn line(&mut self) -> Result<String, LinkError> {
        loop {
            while self.buf.first() == Some(&b'\n') {
                self.buf.remove(0);
            }
            if let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
                let mut line: Vec<u8> = self.buf.drain(..=end).collect();
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                if line.is_empty() {
                    continue;
                }
                return Ok(String::from_utf8_lossy(&line).into_owned());
            }
            if self.buf.len() > MAX_LINE {
                return Err(LinkError::Failed(format!(
                    "the master sent a line longer than {MAX_LINE} bytes"
                )));
            }
            self.read_more()?;
        }
    }

    /// The socket (its addresses, a handle that can shut it).
    pub fn sock(&self) -> &TcpStream {
        &self.sock
    }
}
