package org.strata.ycsb;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;
import java.util.zip.CRC32;

import site.ycsb.DBException;

/**
 * The oracle of bench/server-kill.sh: one line {@code key TAB digest} per insert the server
 * acknowledged, appended by every client thread of the process to one file. A line is written
 * (to the OS, unbuffered) only after the server replied OK to both commands of the insert, so
 * after the server is killed every line names a write the server promised to keep. Only the
 * server is killed, never the client, so the file needs no fsync.
 */
final class AckLog {
  private static final Map<String, AckLog> OPEN = new TreeMap<>();

  private final OutputStream out;

  private AckLog(OutputStream out) {
    this.out = out;
  }

  /** The log at {@code path}, shared by every thread that names the same path. */
  static synchronized AckLog open(String path) throws DBException {
    AckLog log = OPEN.get(path);
    if (log == null) {
      try {
        log = new AckLog(new FileOutputStream(path, true));
      } catch (IOException e) {
        throw new DBException("redis.acklog '" + path + "': cannot open for append: " + e, e);
      }
      OPEN.put(path, log);
    }
    return log;
  }

  /**
   * A digest of a record: CRC-32 over its fields in name order, each as name, NUL, value, NUL,
   * in hexadecimal.
   */
  static String digest(Map<String, String> fields) {
    CRC32 crc = new CRC32();
    for (Map.Entry<String, String> f : new TreeMap<>(fields).entrySet()) {
      crc.update(f.getKey().getBytes(StandardCharsets.UTF_8));
      crc.update(0);
      crc.update(f.getValue().getBytes(StandardCharsets.UTF_8));
      crc.update(0);
    }
    return Long.toHexString(crc.getValue());
  }

  synchronized void acknowledged(String key, String digest) {
    try {
      out.write((key + "\t" + digest + "\n").getBytes(StandardCharsets.UTF_8));
    } catch (IOException e) {
      // The oracle must not silently miss a write: stop the load.
      throw new IllegalStateException("cannot append to the acknowledged-write log: " + e, e);
    }
  }
}
