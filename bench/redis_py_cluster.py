#!/usr/bin/env python3
"""redis-py's RedisCluster against a cluster: each check runs one client call and compares
its answer with what a Redis Cluster answers (the expectations below were read from
redis-server 7.0's cluster through the same client). Prints one line per check, `ok` or
`FAIL` with what came back, then the count; exits 1 if any check failed.

    python3 bench/redis_py_cluster.py HOST:PORT

Run by bench/redis-py-cluster.sh, which installs the client and starts the clusters.
"""
import sys
import time

from redis.cluster import LoadBalancingStrategy, RedisCluster


def main():
    host, port = sys.argv[1].rsplit(":", 1)
    rc = RedisCluster(host=host, port=int(port), decode_responses=True)
    rc.flushall(target_nodes=RedisCluster.PRIMARIES)
    results = []

    def check(name, call, want):
        try:
            got = call()
        except Exception as e:  # a check's failure is reported, not raised
            got = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        results.append((name, got == want, got))

    def pipeline():
        p = rc.pipeline()
        for i in range(20):
            p.set(f"k{i}", i)
        for i in range(20):
            p.get(f"k{i}")
        return p.execute()[20:]

    def transaction():
        p = rc.pipeline(transaction=True)
        p.set("{tx}a", 1)
        p.incr("{tx}a")
        p.get("{tx}a")
        return p.execute()

    def message(subscribe, publish, read, kind, channel):
        ps = rc.pubsub()
        subscribe(ps, channel)
        time.sleep(0.2)
        read(ps, 1.0)  # the subscription's confirmation
        n = publish(channel, "hi")
        got = None
        for _ in range(20):
            m = read(ps, 0.2)
            if m and m["type"] == kind:
                got = m["data"]
                break
        ps.close()
        return n, got

    replicas = RedisCluster(host=host, port=int(port), decode_responses=True,
                            load_balancing_strategy=LoadBalancingStrategy.ROUND_ROBIN)
    primaries = RedisCluster.PRIMARIES
    check("ping", rc.ping, True)
    check("set, get", lambda: (rc.set("a", "1"), rc.get("a"))[1], "1")
    check("mset, mget in one slot", lambda: (rc.mset({"{t}a": 1, "{t}b": 2}),
                                             rc.mget("{t}a", "{t}b"))[1], ["1", "2"])
    check("mget_nonatomic across slots", lambda: rc.mget_nonatomic("a", "b", "c"),
          ["1", None, None])
    check("delete across slots", lambda: rc.delete("x1", "x2", "x3"), 0)
    check("exists across slots", lambda: rc.exists("a", "b"), 1)
    check("hset, hgetall", lambda: (rc.hset("h", mapping={"f": "v", "g": "w"}),
                                    rc.hgetall("h"))[1], {"f": "v", "g": "w"})
    check("rpush, lrange", lambda: (rc.rpush("l", 1, 2, 3), rc.lrange("l", 0, -1))[1],
          ["1", "2", "3"])
    check("sadd, smembers", lambda: (rc.sadd("s", "x", "y"), rc.smembers("s"))[1], {"x", "y"})
    check("zadd, zrange", lambda: (rc.zadd("z", {"m": 1, "n": 2}),
                                   rc.zrange("z", 0, -1, withscores=True))[1],
          [("m", 1.0), ("n", 2.0)])
    check("zunionstore in one slot", lambda: (rc.zadd("{z}a", {"p": 1}),
                                              rc.zunionstore("{z}d", ["{z}a", "{z}b"]))[1], 1)
    check("sinterstore in one slot", lambda: (rc.sadd("{s}a", "q"),
                                              rc.sinterstore("{s}d", ["{s}a"]))[1], 1)
    check("rename in one slot", lambda: (rc.set("{r}a", "v"), rc.rename("{r}a", "{r}b"),
                                         rc.get("{r}b"))[2], "v")
    check("incr, incrby", lambda: (rc.incr("c"), rc.incrby("c", 5))[1], 6)
    check("expire, ttl", lambda: (rc.expire("a", 100), rc.ttl("a") > 0)[1], True)
    check("copy in one slot", lambda: rc.copy("{t}a", "{t}c", replace=True), True)
    check("object encoding", lambda: rc.object("encoding", "{t}a"), "int")
    check("memory usage", lambda: rc.memory_usage("{t}a") > 0, True)
    check("xadd, xrange", lambda: (rc.xadd("st", {"f": "v"}), len(rc.xrange("st")))[1], 1)
    check("geoadd, geopos", lambda: (rc.geoadd("g", (13.36, 38.11, "P")),
                                     rc.geopos("g", "P") is not None)[1], True)
    check("pfadd, pfcount", lambda: (rc.pfadd("hll", "a", "b"), rc.pfcount("hll"))[1], 2)
    check("lmpop in one slot", lambda: (rc.rpush("{l}a", 1),
                                        rc.lmpop(2, "{l}a", "{l}b", direction="LEFT"))[1],
          ["{l}a", ["1"]])
    check("blpop times out", lambda: rc.blpop(["{b}x"], timeout=1), None)
    check("sort", lambda: (rc.rpush("so", 3, 1, 2), rc.sort("so"))[1], ["1", "2", "3"])
    check("eval with a key", lambda: rc.eval("return redis.call('get', KEYS[1])", 1, "{t}a"),
          "1")
    check("eval_ro", lambda: rc.eval_ro("return redis.call('get', KEYS[1])", 1, "{t}a"), "1")
    check("script load, evalsha", lambda: rc.evalsha(rc.script_load("return 7"), 0), 7)
    check("function load, fcall", lambda: (rc.function_load(
        "#!lua name=lib\nredis.register_function('f', function(k, a) return 1 end)",
        replace=True), rc.fcall("f", 0))[1], 1)
    check("publish", lambda: rc.publish("ch", "m"), 0)
    check("spublish", lambda: rc.spublish("ch", "m"), 0)
    check("pubsub numsub", lambda: rc.pubsub_numsub("ch"), [("ch", 0)])
    check("pubsub channels", lambda: rc.pubsub_channels(), [])
    check("subscribe, publish", lambda: message(lambda p, c: p.subscribe(c), rc.publish,
                                                lambda p, t: p.get_message(timeout=t),
                                                "message", "news"), (1, "hi"))
    check("ssubscribe, spublish", lambda: message(lambda p, c: p.ssubscribe(c), rc.spublish,
                                                  lambda p, t: p.get_sharded_message(timeout=t),
                                                  "smessage", "snews"), (1, "hi"))
    check("pipeline across slots", pipeline, [str(i) for i in range(20)])
    check("transaction in one slot", transaction, ["OK", 2, "2"])
    check("reads spread over replicas", lambda: replicas.get("{t}a"), "1")
    check("keys on every primary", lambda: sorted(rc.keys("*", target_nodes=primaries))[:3],
          ["a", "c", "g"])
    check("scan_iter over every primary", lambda: len(set(rc.scan_iter(match="k*"))), 20)
    check("dbsize of every primary", lambda: rc.dbsize(target_nodes=primaries), 39)
    check("cluster info", lambda: rc.cluster_info()["cluster_state"], "ok")
    check("cluster keyslot", lambda: rc.cluster_keyslot("a"), 15495)
    check("cluster countkeysinslot", lambda: rc.cluster_countkeysinslot(15495), 1)
    check("client setname, getname", lambda: (rc.client_setname("me"),
                                              rc.client_getname())[1], "me")
    check("config get", lambda: "maxmemory" in rc.config_get("maxmemory"), True)
    check("flushall, dbsize", lambda: (rc.flushall(target_nodes=primaries),
                                      rc.dbsize(target_nodes=primaries))[1], 0)
    failed = 0
    for name, ok, got in results:
        failed += not ok
        print("ok  " if ok else "FAIL", name, "" if ok else f"-> {got!r}")
    print(f"{len(results) - failed}/{len(results)} passed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
