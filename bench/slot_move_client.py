"""Clients of one slot for bench/slot-move.sh, over the Redis protocol (no library needed).

  python3 slot_move_client.py load PORT TAG RECORDS VALUE_SIZE
      writes RECORDS keys `{TAG}r<i>` of VALUE_SIZE bytes, pipelined, at the node that
      serves the slot (found by following MOVED from PORT); prints how many.
  python3 slot_move_client.py write PORT TAG STOPFILE THREADS
      THREADS connections SET `{TAG}w<thread>-<i>` (100 bytes) one at a time until the file
      STOPFILE exists (600 s at most), following MOVED and ASK (with ASKING) and retrying TRYAGAIN; prints the operations,
      the errors, and the latency median, p99 and maximum in ms.
"""
import os
import socket
import sys
import threading
import time


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.file = self.sock.makefile("rb")

    def send(self, *args):
        out = ["*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append("$%d\r\n" % len(a))
            out.append(a.decode("latin-1") + "\r\n")
        self.sock.sendall("".join(out).encode("latin-1"))

    def reply(self):
        line = self.file.readline().decode("latin-1").rstrip("\r\n")
        if line.startswith("$"):
            n = int(line[1:])
            return None if n < 0 else self.file.read(n + 2)[:-2].decode("latin-1")
        return line

    def cmd(self, *args):
        self.send(*args)
        return self.reply()


def serving_port(port, key):
    """The port of the node that serves `key`'s slot, from `port` on."""
    for _ in range(10):
        r = Conn(port).cmd("GET", key)
        if isinstance(r, str) and r.startswith("-MOVED"):
            port = int(r.rsplit(":", 1)[1])
            continue
        return port
    raise SystemExit("no node serves %s" % key)


def load(port, tag, records, size):
    port = serving_port(port, "{%s}" % tag)
    c, value, batch = Conn(port), "x" * size, 1000
    for start in range(0, records, batch):
        n = min(batch, records - start)
        for i in range(start, start + n):
            c.send("SET", "{%s}r%d" % (tag, i), value)
        for _ in range(n):
            r = c.reply()
            if r != "+OK":
                raise SystemExit("load: SET replied %r" % r)
    print("loaded %d records of %d bytes at port %d" % (records, size, port))


def write(port, tag, stopfile, threads):
    lat, errors, lock = [], [], threading.Lock()
    home = serving_port(port, "{%s}" % tag)

    def run(t):
        conns, mine, i, at = {}, [], 0, home
        end = time.time() + 600
        while time.time() < end and not (i % 16 == 0 and os.path.exists(stopfile)):
            key, t0, p, asking, r = "{%s}w%d-%d" % (tag, t, i), time.time(), at, False, None
            for _ in range(50):
                c = conns.get(p) or conns.setdefault(p, Conn(p))
                if asking:
                    c.cmd("ASKING")
                r = c.cmd("SET", key, "v" * 100)
                if r.startswith("-MOVED"):
                    p, at, asking = int(r.rsplit(":", 1)[1]), int(r.rsplit(":", 1)[1]), False
                elif r.startswith("-ASK"):
                    p, asking = int(r.rsplit(":", 1)[1]), True
                elif r.startswith("-TRYAGAIN"):
                    time.sleep(0.01)
                else:
                    break
            if r != "+OK":
                with lock:
                    errors.append(r)
            mine.append(time.time() - t0)
            i += 1
        with lock:
            lat.extend(mine)

    ts = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    lat.sort()
    ms = lambda q: lat[min(len(lat) - 1, int(len(lat) * q))] * 1e3
    print("writes %d errors %d p50 %.1f ms p99 %.1f ms max %.1f ms"
          % (len(lat), len(errors), ms(0.5), ms(0.99), lat[-1] * 1e3))
    for e in errors[:3]:
        print("error: %s" % e)


if __name__ == "__main__":
    a = sys.argv[1:]
    if len(a) == 5 and a[0] == "load":
        load(int(a[1]), a[2], int(a[3]), int(a[4]))
    elif len(a) == 5 and a[0] == "write":
        write(int(a[1]), a[2], a[3], int(a[4]))
    else:
        sys.exit(__doc__)
