package org.strata.ycsb;

import java.io.BufferedReader;
import java.io.FileReader;
import java.io.IOException;
import java.util.Map;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.exceptions.JedisException;

/**
 * Checks an acknowledged-write log ({@link AckLog}) against a server: every key it names must
 * hold a hash whose digest is the logged one, and be in the scan index.
 *
 * <p>Usage: {@code AckCheck HOST PORT ACKLOG [PASSWORD]}. Prints the number of keys checked
 * and each key that is missing, differs or is not indexed (the first 20); exits 0 when all
 * are there, 1 when any is not, 2 on a usage or I/O error.
 */
public final class AckCheck {
  private AckCheck() {}

  public static void main(String[] args) {
    if (args.length < 3 || args.length > 4) {
      System.err.println("usage: AckCheck HOST PORT ACKLOG [PASSWORD]");
      System.exit(2);
    }
    int port;
    try {
      port = Integer.parseInt(args[1]);
    } catch (NumberFormatException e) {
      System.err.println("AckCheck: PORT '" + args[1] + "': expected an integer");
      System.exit(2);
      return;
    }
    long checked = 0;
    long bad = 0;
    int lineNo = 0;
    try (Jedis jedis = new Jedis(args[0], port, 30000);
        BufferedReader in = new BufferedReader(new FileReader(args[2]))) {
      if (args.length == 4) {
        jedis.auth(args[3]);
      }
      String line;
      while ((line = in.readLine()) != null) {
        lineNo++;
        int tab = line.indexOf('\t');
        if (tab <= 0) {
          System.err.println("AckCheck: " + args[2] + " line " + lineNo
              + ": expected 'key<TAB>digest', got '" + line + "'");
          System.exit(2);
        }
        String key = line.substring(0, tab);
        String want = line.substring(tab + 1);
        Map<String, String> fields = jedis.hgetAll(key);
        String problem = null;
        if (fields.isEmpty()) {
          problem = "missing";
        } else if (!AckLog.digest(fields).equals(want)) {
          problem = "differs (" + fields.size() + " fields, digest " + AckLog.digest(fields)
              + ", acknowledged " + want + ")";
        } else if (jedis.zscore(RedisClient.INDEX, key) == null) {
          problem = "not in the scan index " + RedisClient.INDEX;
        }
        checked++;
        if (problem != null) {
          bad++;
          if (bad <= 20) {
            System.out.println("AckCheck: acknowledged key " + key + " (line " + lineNo + "): "
                + problem);
          }
        }
      }
    } catch (IOException | JedisException e) {
      System.err.println("AckCheck: " + e);
      System.exit(2);
    }
    System.out.println("AckCheck: " + checked + " acknowledged inserts checked, " + bad
        + " lost or wrong");
    System.exit(bad == 0 ? 0 : 1);
  }
}
