//! A client's socket: TCP, or a Unix domain socket when the configuration names one
//! (`unixsocket`, with `unixsocketperm`), as redis-server serves both. The connection loop,
//! SYNC's transfer and the replication stream read and write either through [`Sock`]; a
//! connection moves to its connection thread as a [`StdSock`].
//!
//! A Unix socket's client is named `<path>:0` (its address and its local address in CLIENT
//! LIST and CLIENT KILL ADDR, as Redis names it) and carries CLIENT LIST's flag `U`.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixStream};

/// An accepted connection's socket (module doc).
#[derive(Debug)]
pub enum Sock {
    /// A TCP connection.
    Tcp(TcpStream),
    /// A connection to the Unix socket at the path.
    Unix(UnixStream, String),
}

/// A [`Sock`] not yet registered with a runtime: how an accepted connection is handed to the
/// thread that serves it.
#[derive(Debug)]
pub enum StdSock {
    /// A TCP connection.
    Tcp(std::net::TcpStream),
    /// A connection to the Unix socket at the path.
    Unix(std::os::unix::net::UnixStream, String),
}

impl StdSock {
    /// Registers the socket with the current thread's runtime.
    pub fn into_async(self) -> io::Result<Sock> {
        Ok(match self {
            StdSock::Tcp(s) => Sock::Tcp(TcpStream::from_std(s)?),
            StdSock::Unix(s, path) => Sock::Unix(UnixStream::from_std(s)?, path),
        })
    }
}

impl Sock {
    /// The socket out of its runtime (blocking mode stays off), to hand to another thread.
    pub fn into_std(self) -> io::Result<StdSock> {
        Ok(match self {
            Sock::Tcp(s) => StdSock::Tcp(s.into_std()?),
            Sock::Unix(s, path) => StdSock::Unix(s.into_std()?, path),
        })
    }

    /// The peer's name: `ip:port`, or `<path>:0` for the Unix socket.
    pub fn peer_name(&self) -> String {
        match self {
            Sock::Tcp(s) => s.peer_addr().map(|a| a.to_string()).unwrap_or_default(),
            Sock::Unix(_, path) => format!("{path}:0"),
        }
    }

    /// The peer's address as INFO replication lists a replica's: its IP, or the socket's
    /// path.
    pub fn peer_ip(&self) -> String {
        match self {
            Sock::Tcp(s) => s.peer_addr().map(|a| a.ip().to_string()).unwrap_or_default(),
            Sock::Unix(_, path) => path.clone(),
        }
    }

    /// The local end's name: `ip:port`, or `<path>:0` for the Unix socket.
    pub fn local_name(&self) -> String {
        match self {
            Sock::Tcp(s) => s.local_addr().map(|a| a.to_string()).unwrap_or_default(),
            Sock::Unix(_, path) => format!("{path}:0"),
        }
    }

    /// Whether this is a Unix socket's connection.
    pub fn is_unix(&self) -> bool {
        matches!(self, Sock::Unix(..))
    }

    /// Waits until the socket is readable.
    pub async fn readable(&self) -> io::Result<()> {
        match self {
            Sock::Tcp(s) => s.readable().await,
            Sock::Unix(s, _) => s.readable().await,
        }
    }
}

impl AsRawFd for Sock {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Sock::Tcp(s) => s.as_raw_fd(),
            Sock::Unix(s, _) => s.as_raw_fd(),
        }
    }
}

impl AsyncRead for Sock {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Sock::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Sock::Unix(s, _) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Sock {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Sock::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Sock::Unix(s, _) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Sock::Tcp(s) => Pin::new(s).poll_flush(cx),
            Sock::Unix(s, _) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Sock::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Sock::Unix(s, _) => Pin::new(s).poll_shutdown(cx),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Sock::Tcp(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Sock::Unix(s, _) => Pin::new(s).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Sock::Tcp(s) => s.is_write_vectored(),
            Sock::Unix(s, _) => s.is_write_vectored(),
        }
    }
}

/// Listens on the Unix socket at `path` (a file left there by an earlier process is removed
/// first, as redis-server does) with the file's permission bits set to `perm` when not 0
/// (`unixsocketperm`, octal in the configuration).
pub fn bind_unix(path: &Path, perm: u32) -> io::Result<tokio::net::UnixListener> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let l = tokio::net::UnixListener::bind(path)?;
    if perm != 0 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(perm))?;
    }
    Ok(l)
}
