package org.strata.ycsb;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;

import redis.clients.jedis.Jedis;
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
 * commands, is appended as a line {@code key TAB digest} for {@link AckCheck}). Each
 * YCSB client thread gets its own instance and so its own connection. An error reply or a
 * broken connection is reported as {@link Status#ERROR} with the reason on stderr, so YCSB's
 * output counts it under the operation's {@code Return=ERROR} line.
 */
public final class RedisClient extends DB {
  /** The sorted set indexing every key for scans. */
  static final String INDEX = "_indices";

  private Jedis jedis;
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
    try {
      jedis = new Jedis(host, port, timeout);
      jedis.connect();
      if (password != null && !password.isEmpty()) {
        jedis.auth(password);
      }
    } catch (JedisException e) {
      throw new DBException("cannot connect to " + host + ":" + port + ": " + e.getMessage(), e);
    }
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
    if (jedis != null) {
      try {
        jedis.close();
      } catch (JedisException e) {
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
      jedis.zadd(INDEX, score(key), key);
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
      jedis.zrem(INDEX, key);
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
