package org.strata.ycsb;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;

import java.util.HashSet;

import org.apache.commons.pool2.impl.GenericObjectPoolConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisCluster;
import redis.clients.jedis.JedisCommands;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.exceptions.JedisException;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;
import site.ycsb.StringByteIterator;

/**
 * A YCSB binding for any server speaking the Redis protocol (strata-server, redis-server).
 *
 * <p>Data model: a record is a hash at its key, field name to value. Every key is also a member
 * of the sorted set {@value #INDEX}, scored by {@link #score(String)}, so that a scan can walk
 * keys in score order from the start key's score.
 *
 * <ul>
 *   <li>insert: HMSET key fields, then ZADD index score key
 *   <li>read: HGETALL key (all fields) or HMGET key fields (a subset)
 *   <li>update: HMSET key fields
 *   <li>scan: ZRANGEBYSCORE index score(start) +inf LIMIT 0 count, then a read per key
 *   <li>delete: DEL key, then ZREM index key
 * </ul>
 *
 * <p>Properties: {@code redis.host} (default 127.0.0.1), {@code redis.port} (6379),
 * {@code redis.password} (none), {@code redis.timeout} (socket timeout in ms, 10000),
 * {@code redis.acklog} (none: a file to which every insert the server acknowledged, both
 * commands, is appended as a line {@code key TAB digest} for {@link AckCheck}),
 * {@code redis.scanindex} (true: keep the {@value #INDEX} sorted set; false leaves it out, so
 * an insert is one HMSET and a delete one DEL, and scans fail: for workloads without scans,
 * where the one index key would otherwise take a write of every insert).
 *
 * <p>Cluster mode, {@code redis.cluster=true}: the commands go through Jedis's
 * {@link JedisCluster}, which reads the slot map with {@code CLUSTER SLOTS} from the seed
 * nodes and sends each command to the node serving its key's slot, following {@code MOVED}
 * and {@code ASK}. Seeds: {@code redis.nodes} ({@code host:port,host:port,...}), else
 * {@code redis.host}:{@code redis.port}. {@code redis.maxattempts} (5) bounds the tries of a
 * command across redirections and broken connections. The data model is the same, and the
 * scan index lives in the one slot of {@value #INDEX}.
 *
 * <p>Each YCSB client thread gets its own instance and so its own connection (in cluster mode,
 * its own connection per node). An error reply or a broken connection is reported as
 * {@link Status#ERROR} with the reason on stderr, so YCSB's output counts it under the
 * operation's {@code Return=ERROR} line.
 */
public final class RedisClient extends DB {
  /** The sorted set indexing every key for scans. */
  static final String INDEX = "_indices";

  private JedisCommands jedis;
  private java.io.Closeable connection;
  private boolean scanIndex = true;
  private AckLog ackLog;

  @Override
  public void init() throws DBException {
    Properties p = getProperties();
    String host = p.getProperty("redis.host", "127.0.0.1");
    int port = intProperty(p, "redis.port", Protocol.DEFAULT_PORT);
    int timeout = intProperty(p, "redis.timeout", 10000);
    String password = p.getProperty("redis.password");
    String ackPath = p.getProperty("redis.acklog");
    if (ackPath != null && !ackPath.isEmpty()) {
      ackLog = AckLog.open(ackPath);
    }
    scanIndex = Boolean.parseBoolean(p.getProperty("redis.scanindex", "true").trim());
    boolean cluster = Boolean.parseBoolean(p.getProperty("redis.cluster", "false").trim());
    if (password != null && password.isEmpty()) {
      password = null;
    }
    if (cluster) {
      Set<HostAndPort> seeds = new HashSet<>();
      String nodes = p.getProperty("redis.nodes", "").trim();
      if (nodes.isEmpty()) {
        seeds.add(new HostAndPort(host, port));
      } else {
        for (String node : nodes.split(",")) {
          seeds.add(hostAndPort(node.trim()));
        }
      }
      int maxAttempts = intProperty(p, "redis.maxattempts", 5);
      try {
        JedisCluster c = new JedisCluster(seeds, timeout, timeout, maxAttempts, password,
            new GenericObjectPoolConfig());
        jedis = c;
        connection = c;
      } catch (JedisException e) {
        throw new DBException("cannot reach the cluster at " + seeds + ": " + e.getMessage(), e);
      }
      return;
    }
    try {
      Jedis j = new Jedis(host, port, timeout);
      j.connect();
      if (password != null) {
        j.auth(password);
      }
      jedis = j;
      connection = j;
    } catch (JedisException e) {
      throw new DBException("cannot connect to " + host + ":" + port + ": " + e.getMessage(), e);
    }
  }

  private static HostAndPort hostAndPort(String node) throws DBException {
    int colon = node.lastIndexOf(':');
    try {
      if (colon > 0) {
        return new HostAndPort(node.substring(0, colon),
            Integer.parseInt(node.substring(colon + 1)));
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw new DBException("property redis.nodes: '" + node + "': expected host:port");
  }

  private static int intProperty(Properties p, String name, int dflt) throws DBException {
    String v = p.getProperty(name);
    if (v == null) {
      return dflt;
    }
    try {
      return Integer.parseInt(v.trim());
    } catch (NumberFormatException e) {
      throw new DBException("property " + name + "='" + v + "': expected an integer");
    }
  }

  @Override
  public void cleanup() throws DBException {
    if (connection != null) {
      try {
        connection.close();
      } catch (java.io.IOException | JedisException e) {
        throw new DBException("closing the connection: " + e.getMessage(), e);
      }
    }
  }

  /** The key's position in the scan index: its Java string hash, as a double. */
  static double score(String key) {
    return key.hashCode();
  }

  private static Status failed(String op, String key, JedisException e) {
    System.err.println("RedisClient: " + op + " " + key + ": " + e.getMessage());
    return Status.ERROR;
  }

  @Override
  public Status read(String table, String key, Set<String> fields,
      Map<String, ByteIterator> result) {
    try {
      if (fields == null) {
        Map<String, String> all = jedis.hgetAll(key);
        if (all.isEmpty()) {
          return Status.NOT_FOUND;
        }
        StringByteIterator.putAllAsByteIterators(result, all);
      } else {
        String[] names = fields.toArray(new String[0]);
        List<String> values = jedis.hmget(key, names);
        boolean any = false;
        for (int i = 0; i < names.length; i++) {
          String v = values.get(i);
          if (v != null) {
            result.put(names[i], new StringByteIterator(v));
            any = true;
          }
        }
        if (!any) {
          return Status.NOT_FOUND;
        }
      }
      return Status.OK;
    } catch (JedisException e) {
      return failed("read", key, e);
    }
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    try {
      Map<String, String> fields = StringByteIterator.getStringMap(values);
      String reply = jedis.hmset(key, fields);
      if (!"OK".equals(reply)) {
        System.err.println("RedisClient: insert " + key + ": HMSET replied " + reply);
        return Status.ERROR;
      }
      if (scanIndex) {
        jedis.zadd(INDEX, score(key), key);
      }
      if (ackLog != null) {
        ackLog.acknowledged(key, AckLog.digest(fields));
      }
      return Status.OK;
    } catch (JedisException e) {
      return failed("insert", key, e);
    }
  }

  @Override
  public Status delete(String table, String key) {
    try {
      long deleted = jedis.del(key);
      if (scanIndex) {
        jedis.zrem(INDEX, key);
      }
      return deleted == 0 ? Status.NOT_FOUND : Status.OK;
    } catch (JedisException e) {
      return failed("delete", key, e);
    }
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    try {
      String reply = jedis.hmset(key, StringByteIterator.getStringMap(values));
      if (!"OK".equals(reply)) {
        System.err.println("RedisClient: update " + key + ": HMSET replied " + reply);
        return Status.ERROR;
      }
      return Status.OK;
    } catch (JedisException e) {
      return failed("update", key, e);
    }
  }

  @Override
  public Status scan(String table, String startkey, int recordcount, Set<String> fields,
      Vector<HashMap<String, ByteIterator>> result) {
    if (!scanIndex) {
      System.err.println("RedisClient: scan " + startkey + ": redis.scanindex=false keeps no index");
      return Status.NOT_IMPLEMENTED;
    }
    try {
      Set<String> keys = jedis.zrangeByScore(INDEX, score(startkey), Double.POSITIVE_INFINITY,
          0, recordcount);
      List<String> order = new ArrayList<>(keys);
      for (String key : order) {
        HashMap<String, ByteIterator> row = new HashMap<>();
        Status s = read(table, key, fields, row);
        if (s == Status.ERROR) {
          return s;
        }
        result.add(row);
      }
      return Status.OK;
    } catch (JedisException e) {
      return failed("scan", startkey, e);
    }
  }
}
