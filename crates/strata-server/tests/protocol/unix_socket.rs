//! The Unix socket (`unixsocket`, `unixsocketperm`): served beside TCP, its clients named
//! `<path>:0` with the flag `U`, the file's mode set and the file removed at exit; a file
//! left at the path is replaced.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use crate::common::{Reply, Server};

/// One command's reply over `r`'s socket: a status line, or a bulk string's text.
fn ask(r: &mut BufReader<UnixStream>, line: &str) -> String {
    r.get_mut().write_all(format!("{line}\r\n").as_bytes()).unwrap();
    let mut head = String::new();
    r.read_line(&mut head).unwrap();
    let Some(len) = head.trim_end().strip_prefix('$') else { return head.trim_end().into() };
    let mut body = vec![0u8; len.parse::<usize>().unwrap() + 2];
    r.read_exact(&mut body).unwrap();
    body.truncate(body.len() - 2);
    String::from_utf8(body).unwrap()
}

#[test]
fn a_unix_socket_is_served_beside_tcp_and_its_file_goes_at_exit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("strata.sock");
    std::fs::write(&path, b"left by an earlier process").unwrap();
    let p = path.to_str().unwrap();
    let mut s = Server::start(&["--unixsocket", p, "--unixsocketperm", "700"]);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
    let sock = UnixStream::connect(&path).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut u = BufReader::new(sock);
    assert_eq!(ask(&mut u, "PING"), "+PONG");
    assert_eq!(ask(&mut u, "SET k over-unix"), "+OK");
    let info = ask(&mut u, "CLIENT INFO");
    let field = |name: &str| {
        let key = format!("{name}=");
        info.split(' ').find_map(|f| f.strip_prefix(key.as_str())).unwrap().to_string()
    };
    assert_eq!(field("addr"), format!("{p}:0"));
    assert_eq!(field("laddr"), format!("{p}:0"));
    assert_eq!(field("flags"), "U");
    // TCP sees the same data, and CLIENT KILL ADDR finds the Unix client by its name.
    let mut c = s.raw();
    assert_eq!(c.cmd(&["GET", "k"]), Reply::bulk("over-unix"));
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "unixsocket"]),
        Reply::Array(vec![Reply::bulk("unixsocket"), Reply::bulk(p),])
    );
    assert_eq!(c.cmd(&["CLIENT", "KILL", "ADDR", &format!("{p}:0")]), Reply::Int(1));
    let mut rest = Vec::new();
    assert_eq!(u.read_to_end(&mut rest).unwrap(), 0, "closed");
    s.stop();
    assert!(!path.exists(), "the socket file stays after the exit");
}

#[test]
fn a_bad_unixsocketperm_stops_the_start_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata-server"))
        .args(["--port", "0", "--dir"])
        .arg(dir.path())
        .args(["--unixsocket"])
        .arg(dir.path().join("s.sock"))
        .args(["--unixsocketperm", "999"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unixsocketperm `999`: expected octal"), "{err}");
}
