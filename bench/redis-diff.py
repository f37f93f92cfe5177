#!/usr/bin/env python3
"""Differential check of strata-server against redis-server: the same random commands (the
string and non-blocking list commands, with bad options and wrong types among them) go to
both, over a small key space; every reply is compared byte for byte. Prints the first
differences and a count; exits 1 if any.

    python3 bench/redis-diff.py --strata target/release/strata-server \
        --redis-server redis-server [--commands 20000] [--seed 1] [--resp3]

Replies that depend on the clock (TTL, PTTL) are left out of the mix. With --command-info it
compares instead what COMMAND INFO says of every command and subcommand strata-server serves:
its flags and ACL categories (clients route by them), in order, its tips and key
specifications (less their notes), and of a subcommand also its arity and key positions. Debian bookworm's
`redis-server` package is Redis 7.0.15, the reference of the Redis issue.
"""
import argparse
import random
import socket
import subprocess
import sys
import tempfile
import time


class Client:
    def __init__(self, port):
        # A server that stops answering fails the run instead of hanging it.
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.f = self.sock.makefile("rb")

    def cmd(self, args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a.encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)
        return self.read()

    def read(self):
        line = self.f.readline()
        t = line[:1]
        if t in (b"$", b"="):
            n = int(line[1:])
            return line if n < 0 else line + self.f.read(n + 2)
        if t in (b"*", b"~", b"%"):
            n = int(line[1:])
            if n < 0:
                return line
            n *= 2 if t == b"%" else 1
            return line + b"".join(self.read() for _ in range(n))
        return line


def parse(raw):
    """A raw reply as Python values: strings, integers and lists (maps and sets as lists)."""
    def at(i):
        end = raw.index(b"\r\n", i)
        t, body, nxt = raw[i:i + 1], raw[i + 1:end], end + 2
        if t in (b"+", b"-"):
            return body.decode(), nxt
        if t == b":":
            return int(body), nxt
        if t in (b"$", b"="):
            n = int(body)
            return (None, nxt) if n < 0 else (raw[nxt:nxt + n].decode(), nxt + n + 2)
        n = int(body) * (2 if t == b"%" else 1)
        items = []
        for _ in range(max(n, 0)):
            v, nxt = at(nxt)
            items.append(v)
        return items, nxt
    return at(0)[0]


def without_notes(specs):
    """Key specifications (flat maps) without their `notes` pair."""
    out = []
    for spec in specs:
        pairs = [spec[i:i + 2] for i in range(0, len(spec), 2)]
        out.append([x for k, v in pairs if k != "notes" for x in (k, v)])
    return out


def command_info_diff(a, b):
    """Differences in flags and categories between the two servers' COMMAND INFO."""
    names = parse(a.cmd(["COMMAND", "LIST"]))
    bad = 0
    for n in sorted(names):
        ia, ib = parse(a.cmd(["COMMAND", "INFO", n]))[0], parse(b.cmd(["COMMAND", "INFO", n]))[0]
        if ib is None:
            print("ONLY strata-server:", n)
            continue
        # Flags, categories, tips and key specifications (less the specs' `notes`, Redis's
        # prose, which strata-server leaves out).
        fa = (ia[2], ia[6], ia[7], without_notes(ia[8]))
        fb = (ib[2], ib[6], ib[7], without_notes(ib[8]))
        if "|" in n:
            # A subcommand's entry is the table's whole: its arity and key positions too.
            fa, fb = fa + (ia[1], ia[3:6]), fb + (ib[1], ib[3:6])
        if fa != fb:
            bad += 1
            print("DIFF", n, "\n  strata-server:", fa, "\n  redis-server: ", fb)
    print(f"{len(names)} commands, {bad} differences")
    return bad


def start_strata(binary, d):
    p = subprocess.Popen([binary, "--port", "0", "--dir", d], stdout=subprocess.PIPE, text=True)
    for line in p.stdout:
        if line.startswith("Ready to accept connections on port "):
            return p, int(line.split()[-1])
    sys.exit("strata-server did not start")


def start_redis(binary, d):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    p = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                          "--appendonly", "no", "--dir", d], stdout=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port)).close()
            return p, port
        except OSError:
            time.sleep(0.05)
    p.terminate()
    sys.exit("redis-server did not start")


def generator(rng):
    keys = ["k0", "k1", "k2", "h0"]
    vals = ["a", "b", "c", "1", "2.5", "-3", "", "abc"]

    def ix():
        return str(rng.randint(-6, 6))

    def side():
        return rng.choice(["LEFT", "RIGHT", "left", "UP"])

    def one():
        k, k2, v = rng.choice(keys), rng.choice(keys), rng.choice(vals)
        return rng.choice([
            lambda: ["RPUSH", k, v, rng.choice(vals)],
            lambda: ["LPUSH", k, v],
            lambda: ["LPUSHX", k, v],
            lambda: ["RPUSHX", k, v, v],
            lambda: ["LINSERT", k, rng.choice(["BEFORE", "AFTER", "after", "x"]), rng.choice(vals), v],
            lambda: ["LSET", k, rng.choice([ix(), "x"]), v],
            lambda: ["LREM", k, rng.choice([ix(), "0", "x"]), v],
            lambda: ["LTRIM", k, ix(), ix()],
            lambda: ["LPOS", k, v] + rng.choice([
                [], ["RANK", rng.choice(["1", "-1", "2", "-2", "0", "x"])],
                ["COUNT", rng.choice(["0", "1", "2", "-1"])], ["MAXLEN", rng.choice(["0", "2", "-1"])],
                ["RANK", "-1", "COUNT", "0", "MAXLEN", "3"], ["FOO"]]),
            lambda: ["LMOVE", k, k2, side(), side()],
            lambda: ["RPOPLPUSH", k, k2],
            lambda: ["LMPOP", rng.choice(["1", "2", "0", "3"]), k, k2, side()] + rng.choice([
                [], ["COUNT", rng.choice(["1", "3", "0", "x"])], ["COUNT", "1", "COUNT", "1"]]),
            lambda: ["LRANGE", k, "0", "-1"],
            lambda: ["LLEN", k],
            lambda: ["LINDEX", k, ix()],
            lambda: ["SET", k, v] + rng.choice([
                [], ["GET"], ["NX", "GET"], ["XX"], ["KEEPTTL"], ["EX", "100", "EX", "100"],
                ["EX", "100", "PX", "5"], ["PXAT", "1"], ["EX", "0"], ["GET", "KEEPTTL", "XX"]]),
            lambda: ["GET", k],
            lambda: ["GETEX", k] + rng.choice([
                [], ["PERSIST"], ["EX", "1000"], ["EXAT", "1"], ["EX", "-1"], ["PX", "x"], ["KEEPTTL"]]),
            lambda: ["GETRANGE", k, ix(), ix()],
            lambda: ["SUBSTR", k, ix(), ix()],
            lambda: ["SETRANGE", k, rng.choice(["0", "2", "5", "-1", "x"]), rng.choice(vals)],
            lambda: ["INCRBYFLOAT", k, rng.choice(vals + ["0.1", "1e3", "inf", "-0.75", "0x1p-3"])],
            lambda: ["LCS", k, k2] + rng.choice([
                [], ["LEN"], ["IDX"], ["IDX", "WITHMATCHLEN"], ["IDX", "MINMATCHLEN", "2"],
                ["LEN", "IDX"], ["FOO"]]),
            lambda: ["MSETNX", k, v, k2, v],
            lambda: ["APPEND", k, v],
            lambda: ["TYPE", k],
            lambda: ["HSET", "h0", "f", v],
            lambda: ["DEL", k],
        ])()
    return one


def random_diff(a, b, o):
    """Differences in the replies to `o.commands` random commands."""
    if o.resp3:
        a.cmd(["HELLO", "3"])  # its server version and client id differ
        b.cmd(["HELLO", "3"])
    gen = generator(random.Random(o.seed))
    bad = 0
    for _ in range(o.commands):
        args = gen()
        ra, rb = a.cmd(args), b.cmd(args)
        if ra != rb:
            bad += 1
            if bad <= 20:
                print("DIFF", args, "\n  strata-server:", ra[:200], "\n  redis-server: ", rb[:200])
    print(f"{o.commands} commands, {bad} differences")
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", required=True)
    ap.add_argument("--redis-server", default="redis-server")
    ap.add_argument("--commands", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--resp3", action="store_true", help="HELLO 3 first (replies in RESP3)")
    ap.add_argument("--command-info", action="store_true",
                    help="compare COMMAND INFO (flags, categories, tips, key specs) instead")
    o = ap.parse_args()
    with tempfile.TemporaryDirectory() as sd, tempfile.TemporaryDirectory() as rd:
        ps, sport = start_strata(o.strata, sd)
        pr, rport = start_redis(o.redis_server, rd)
        try:
            a, b = Client(sport), Client(rport)
            bad = command_info_diff(a, b) if o.command_info else random_diff(a, b, o)
        finally:
            ps.terminate()
            pr.terminate()
            ps.wait()
            pr.wait()
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
