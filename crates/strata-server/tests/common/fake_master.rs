//! A fake Redis master for the replica tests: it answers a replica's handshake up to PSYNC
//! and lets the test send the sync and the command stream by hand.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use super::{Raw, Reply};

/// The replication id the fake master gives.
pub const REPLID: &str = "8f3b2d9c0e1a4b5c6d7e8f90a1b2c3d4e5f60718";

/// The arguments of a command the replica sent.
pub fn words(r: Reply) -> Vec<String> {
    match r {
        Reply::Array(v) => v
            .into_iter()
            .map(|x| match x {
                Reply::Bulk(b) => String::from_utf8(b).unwrap(),
                other => panic!("{other:?}"),
            })
            .collect(),
        other => panic!("expected a command, got {other:?}"),
    }
}

/// Accepts the replica's connection and answers its handshake up to PSYNC; returns the
/// connection and PSYNC's arguments.
pub fn handshake(fake: &TcpListener, replica_port: u16) -> (Raw, Vec<String>) {
    let (sock, _) = fake.accept().unwrap();
    let mut m = Raw::from_stream(sock);
    assert_eq!(words(m.read()), ["PING"]);
    m.send_raw(b"+PONG\r\n");
    assert_eq!(words(m.read()), ["REPLCONF", "listening-port", &replica_port.to_string()]);
    m.send_raw(b"+OK\r\n");
    assert_eq!(words(m.read()), ["REPLCONF", "capa", "eof", "capa", "psync2"]);
    m.send_raw(b"+OK\r\n");
    let psync = words(m.read());
    assert_eq!(psync[0], "PSYNC");
    (m, psync[1..].to_vec())
}

/// Sends `args` as a command of the stream; its length in bytes (what it adds to the offset).
pub fn send_cmd(m: &mut Raw, args: &[&str]) -> usize {
    let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
    let frame = Raw::encode(&a);
    m.send_raw(&frame);
    frame.len()
}

/// Waits until `f` holds (20 s at most).
pub fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Reads the replica's REPLCONF ACKs until one says `offset`.
pub fn until_ack(m: &mut Raw, offset: i64) {
    loop {
        let w = words(m.read());
        assert_eq!(&w[..2], ["REPLCONF", "ACK"], "{w:?}");
        if w[2].parse::<i64>().unwrap() == offset {
            return;
        }
        assert!(w[2].parse::<i64>().unwrap() < offset, "ACK past {offset}: {w:?}");
    }
}
