#!/usr/bin/env python3
"""Makes golden.tsv, the payloads `types::rdb`'s tests decode, with a real redis-server 7.0.

    redis-server --port 7690 --save "" &        # Debian bookworm's redis-server is 7.0.15
    python3 gen_golden.py 7690 > golden.tsv

Each line is `name <TAB> payload hex <TAB> what redis-server reads from it`. Two kinds of
payload:
  - made by redis-server: a value built with commands, then DUMPed;
  - made here by hand, in the encodings Redis no longer writes (ziplists, zipmaps, quicklist 1,
    the plain list/set/zset/hash types, the version-1 stream) or broken on purpose; each is
    checked by RESTOREing it into redis-server.
The third column is redis-server's reading of the restored key, rendered as `render` says (the
Rust test renders its decoded value the same way), or `error <reply>` when redis-server
refuses the payload (with `sanitize-dump-payload yes`: Redis's deep checks, which this server
always makes). The run fails if a hand-made payload is refused or taken unexpectedly.
"""
import hashlib
import socket
import struct
import sys


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.f = self.sock.makefile("rb")

    def cmd(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            if not isinstance(a, bytes):
                a = str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)
        return self.read()

    def read(self):
        line = self.f.readline()
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self.f.read(n + 2)[:-2]
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise RuntimeError("unexpected reply " + repr(line))


# --- the payload format, written by hand -------------------------------------------------

TABLE = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x95AC9329AC4BC9B5 if c & 1 else c >> 1
    TABLE.append(c)


def crc64(b):
    crc = 0
    for x in b:
        crc = TABLE[(crc ^ x) & 0xFF] ^ (crc >> 8)
    return crc


def seal(body, version=10):
    body = body + struct.pack("<H", version)
    return body + struct.pack("<Q", crc64(body))


def length(n):
    if n < 64:
        return bytes([n])
    if n < 16384:
        return bytes([0x40 | n >> 8, n & 0xFF])
    return b"\x80" + struct.pack(">I", n)


def string(s):
    return length(len(s)) + s


def zl_entry(prev, value):
    """A ziplist entry: `value` an int (in the narrowest integer encoding) or bytes."""
    head = bytes([prev]) if prev < 254 else b"\xfe" + struct.pack("<I", prev)
    if isinstance(value, int):
        if 0 <= value <= 12:
            enc = bytes([0xF1 + value])
        elif -128 <= value < 128:
            enc = b"\xfe" + struct.pack("<b", value)
        elif -32768 <= value < 32768:
            enc = b"\xc0" + struct.pack("<h", value)
        elif -(1 << 23) <= value < 1 << 23:
            enc = b"\xf0" + struct.pack("<i", value)[:3]
        elif -(1 << 31) <= value < 1 << 31:
            enc = b"\xd0" + struct.pack("<i", value)
        else:
            enc = b"\xe0" + struct.pack("<q", value)
    elif len(value) < 64:
        enc = bytes([len(value)]) + value
    elif len(value) < 16384:
        enc = bytes([0x40 | len(value) >> 8, len(value) & 0xFF]) + value
    else:
        enc = b"\x80" + struct.pack(">I", len(value)) + value
    return head + enc


def ziplist(values):
    entries, prev = [], 0
    for v in values:
        e = zl_entry(prev, v)
        entries.append(e)
        prev = len(e)
    body = b"".join(entries)
    tail = 10 + len(body) - (len(entries[-1]) if entries else 0)
    return struct.pack("<IIH", 10 + len(body) + 1, tail, len(values)) + body + b"\xff"


def zipmap(pairs):
    out = bytes([len(pairs)])
    for f, v in pairs:
        out += bytes([len(f)]) + f + bytes([len(v), 0]) + v
    return out + b"\xff"


def lp_backlen(n):
    if n <= 127:
        return bytes([n])
    return bytes([n >> 7, (n & 127) | 128])


def lp_entry(v):
    if isinstance(v, int):
        assert 0 <= v <= 127
        e = bytes([v])
    else:
        assert len(v) < 64
        e = bytes([0x80 | len(v)]) + v
    return e + lp_backlen(len(e))


def listpack(values):
    body = b"".join(lp_entry(v) for v in values)
    return struct.pack("<IH", 6 + len(body) + 1, len(values)) + body + b"\xff"


def stream_v1():
    """Type 15 (Redis before 7.0): entries 1-1 (deleted) and 1-2 to 1-4, group g1 having
    read up to 1-3 with 1-2 and 1-3 pending for consumer c, group g2 at 0-0."""
    master = struct.pack(">QQ", 1, 1)
    items = [3, 1, 1, b"f", 0]
    for seq, val, flags in [(0, b"a", 3), (1, b"b", 2), (2, b"c", 2), (3, b"d", 2)]:
        items += [flags, 0, seq, val, 4]
    body = bytes([15]) + length(1) + string(master) + string(listpack(items))
    body += length(3) + length(1) + length(4)  # length, last id
    body += length(2)
    body += string(b"g1") + length(1) + length(3)
    body += length(2)
    for seq in (2, 3):
        body += struct.pack(">QQ", 1, seq) + struct.pack("<q", 1700000000000 + seq) + length(1)
    body += length(1) + string(b"c") + struct.pack("<q", 1700000000009) + length(2)
    body += struct.pack(">QQ", 1, 2) + struct.pack(">QQ", 1, 3)
    body += string(b"g2") + length(0) + length(0) + length(0) + length(0)
    return seal(body, version=9)


def flip_last(p):
    return p[:-1] + bytes([p[-1] ^ 1])


def hand_made():
    """(name, payload, whether redis-server should take it)."""
    nums = [b"a", 0, 12, -1, 127, -129, 32767, -32769, 8388607, -8388609, 2147483647,
            -2147483649, 9223372036854775807, b"x" * 100, b"y" * 16384]
    cases = [
        ("hand_list_ziplist", seal(bytes([10]) + string(ziplist(nums))), True),
        ("hand_list_quicklist1",
         seal(bytes([14]) + length(2) + string(ziplist(nums[:5])) + string(ziplist(nums[5:-1]))),
         True),
        ("hand_list_plain", seal(bytes([1]) + length(3) + string(b"a") + b"\xc0\x05"
                                 + b"\xc3" + length(5) + length(30) + b"\x00z\xe0\x14\x00"),
         True),
        ("hand_set_plain", seal(bytes([2]) + length(2) + string(b"m") + b"\xc1\x10\x27"), True),
        ("hand_zset_text_scores",
         seal(bytes([3]) + length(4) + string(b"a") + b"\x031.5" + string(b"b") + b"\xfe"
              + string(b"c") + b"\xff" + string(b"d") + b"\x02-2"), True),
        ("hand_hash_plain", seal(bytes([4]) + length(1) + string(b"f") + string(b"v")), True),
        ("hand_hash_zipmap",
         seal(bytes([9]) + string(zipmap([(b"f1", b"v1"), (b"f2", b""), (b"n", b"123")]))),
         True),
        ("hand_hash_ziplist",
         seal(bytes([13]) + string(ziplist([b"f", b"v", b"n", 5, b"big", b"z" * 300]))), True),
        ("hand_zset_ziplist",
         seal(bytes([12]) + string(ziplist([b"a", 1, b"b", b"2.5", b"c", b"inf"]))), True),
        ("hand_stream_v1", stream_v1(), True),
        # What redis-server refuses.
        ("bad_empty_list", seal(bytes([1]) + length(0)), False),
        ("bad_dup_set", seal(bytes([2]) + length(2) + string(b"a") + string(b"a")), False),
        ("bad_nan_zset", seal(bytes([5]) + length(1) + string(b"a") + struct.pack("<d", float("nan"))), False),
        ("bad_dup_hash_ziplist", seal(bytes([13]) + string(ziplist([b"f", b"v", b"f", b"w"]))), False),
        ("bad_odd_hash_listpack", seal(bytes([16]) + string(listpack([b"f", b"v", b"g"]))), False),
        ("bad_module", seal(bytes([7]) + length(12345)), False),
        ("bad_type_8", seal(bytes([8]) + string(b"x")), False),
        ("bad_type_20", seal(bytes([20]) + string(b"x")), False),
        ("bad_ziplist_count", seal(bytes([10]) + string(ziplist([b"a"])[:8] + b"\x02\x00" + ziplist([b"a"])[10:])), False),
        ("bad_version_11", seal(bytes([0]) + string(b"x"), version=11), False),
        ("bad_checksum", flip_last(seal(bytes([0]) + string(b"x"))), False),
    ]
    return cases


# --- values made by redis-server -----------------------------------------------------------

def made_by_redis(c):
    """(name, setup commands) for values redis-server builds and DUMPs."""
    big = b"abcdefghij" * 50
    return [
        ("str_short", [("set", "k", "hello")]),
        ("str_empty", [("set", "k", "")]),
        ("str_int8", [("set", "k", "-100")]),
        ("str_int16", [("set", "k", "30000")]),
        ("str_int32", [("set", "k", "-2000000000")]),
        ("str_int64_text", [("set", "k", "9223372036854775807")]),
        ("str_lzf", [("set", "k", big)]),
        ("str_binary", [("set", "k", bytes(range(256)))]),
        ("list_small", [("rpush", "k", "a", "1", "-70000", "x" * 80, "b")]),
        ("list_nodes", [("rpush", "k", *[b"element-%d" % i for i in range(700)])]),
        ("list_big_elem", [("rpush", "k", "s", b"q" * 5000, "t")]),
        ("set_intset16", [("sadd", "k", 1, 2, -3)]),
        ("set_intset32", [("sadd", "k", 1, 70000, -70000)]),
        ("set_intset64", [("sadd", "k", 1, 9223372036854775807, -9223372036854775808)]),
        ("set_hashtable", [("sadd", "k", "a", "b", "3")]),
        ("set_large_ints", [("sadd", "k", *range(600))]),
        ("zset_listpack", [("zadd", "k", 1, "a", 2.5, "b", "-inf", "c", "inf", "d", "1e300", "e", -0.125, "f", 0, "g")]),
        ("zset_skiplist", [("zadd", "k", *sum(([i * 0.25, b"m%d" % i] for i in range(300)), []))]),
        ("zset_long_member", [("zadd", "k", 3, "x" * 100, 4, "y")]),
        ("hash_listpack", [("hset", "k", "f1", "v1", "n", "-5", "big", "12345678901")]),
        ("hash_hashtable", [("hset", "k", *sum(([b"f%d" % i, b"v%d" % i] for i in range(600)), []))]),
        ("hash_long_value", [("hset", "k", "f", "v" * 300, "g", "w")]),
        ("stream_simple", [("xadd", "k", "1-1", "a", "1", "b", "2"),
                           ("xadd", "k", "1-2", "a", "3", "b", "4"),
                           ("xadd", "k", "2-0", "c", "5")]),
        ("stream_groups", [("xadd", "k", "1-1", "f", "v1"), ("xadd", "k", "1-2", "f", "v2"),
                           ("xadd", "k", "1-3", "g", "v3", "h", "v4"), ("xadd", "k", "1-4", "f", "v5"),
                           ("xdel", "k", "1-2"),
                           ("xgroup", "create", "k", "g1", "0"), ("xgroup", "create", "k", "g2", "$"),
                           ("xreadgroup", "group", "g1", "alice", "count", "2", "streams", "k", ">"),
                           ("xreadgroup", "group", "g1", "bob", "count", "1", "streams", "k", ">"),
                           ("xgroup", "createconsumer", "k", "g2", "carol")]),
        ("stream_nodes", [("xadd", "k", "%d-0" % (i + 1), "field", i, "other", "x") for i in range(250)]
                         + [("xdel", "k", "5-0", "150-0"), ("xtrim", "k", "maxlen", "200")]),
        ("stream_empty", [("xadd", "k", "7-7", "a", "b"), ("xdel", "k", "7-7"),
                          ("xgroup", "create", "k", "g", "$")]),
    ]


def short_hex(b):
    """An item of a rendering: its hex, `-` when empty, a digest when long."""
    if not b:
        return "-"
    if len(b) > 64:
        return "sha1-%d-%s" % (len(b), hashlib.sha1(b).hexdigest())
    return b.hex()


def render(c, key):
    """redis-server's reading of `key`, one line."""
    hx = short_hex
    t = c.cmd("type", key)
    if t == "string":
        return "string " + hx(c.cmd("get", key))
    if t == "list":
        return "list " + ",".join(hx(e) for e in c.cmd("lrange", key, 0, -1))
    if t == "set":
        return "set " + ",".join(hx(e) for e in sorted(c.cmd("smembers", key)))
    if t == "zset":
        r = c.cmd("zrange", key, 0, -1, "withscores")
        return "zset " + ",".join(hx(m) + ":" + s.decode() for m, s in zip(r[::2], r[1::2]))
    if t == "hash":
        r = c.cmd("hgetall", key)
        return "hash " + ",".join(hx(f) + "=" + hx(v) for f, v in sorted(zip(r[::2], r[1::2])))
    if t == "stream":
        full = c.cmd("xinfo", "stream", key, "full", "count", 0)
        d = dict(zip(full[::2], full[1::2]))
        out = "stream len=%d last=%s first=%s maxdel=%s added=%d" % (
            d[b"length"], d[b"last-generated-id"].decode(), d[b"recorded-first-entry-id"].decode(),
            d[b"max-deleted-entry-id"].decode(), d[b"entries-added"])
        out += " entries=" + "|".join(
            e[0].decode() + ":" + ",".join(hx(x) for x in e[1]) for e in d[b"entries"])
        for g in d[b"groups"]:
            g = dict(zip(g[::2], g[1::2]))
            read = g[b"entries-read"]
            out += " group=%s@%s/%s" % (hx(g[b"name"]), g[b"last-delivered-id"].decode(),
                                        "-" if read is None else read)
            out += " pel=" + "|".join("%s:%s:%d:%d" % (p[0].decode(), hx(p[1]), p[2], p[3])
                                      for p in g[b"pending"])
            out += " consumers=" + "|".join(
                "%s:%d" % (hx(dict(zip(k[::2], k[1::2]))[b"name"]),
                           dict(zip(k[::2], k[1::2]))[b"seen-time"])
                for k in g[b"consumers"])
        return out
    raise RuntimeError("type " + str(t))


def main():
    c = Conn(int(sys.argv[1]))
    assert c.cmd("flushall") == "OK"
    # Redis's deep checks of a payload, which this server always makes.
    assert c.cmd("config", "set", "sanitize-dump-payload", "yes") == "OK"
    for name, setup in made_by_redis(c):
        c.cmd("del", "k")
        for cmdline in setup:
            r = c.cmd(*cmdline)
            assert not isinstance(r, RuntimeError), (name, cmdline, r)
        payload = c.cmd("dump", "k")
        assert c.cmd("restore", "copy", 0, payload, "replace") == "OK", name
        print("%s\t%s\t%s" % (name, payload.hex(), render(c, "copy")))
    for name, payload, good in hand_made():
        r = c.cmd("restore", "copy", 0, payload, "replace")
        if isinstance(r, RuntimeError):
            assert not good, (name, r)
            print("%s\t%s\terror %s" % (name, payload.hex(), r))
        else:
            assert good, (name, "taken")
            print("%s\t%s\t%s" % (name, payload.hex(), render(c, "copy")))
    c.cmd("function", "flush")
    c.cmd("function", "load", "#!lua name=lib1\nredis.register_function('f1', function() return 1 end)")
    c.cmd("function", "load", "#!lua name=lib2\nredis.register_function('f2', function() return 2 end)")
    payload = c.cmd("function", "dump")
    codes = sorted(l[l.index(b"library_code") + 1] for l in c.cmd("function", "list", "withcode"))
    print("functions\t%s\tfunctions %s" % (payload.hex(), ",".join(short_hex(x) for x in codes)))
    c.cmd("function", "flush")


if __name__ == "__main__":
    main()
