// pgjdbc's DatabaseMetaData against `augur serve`: getTables and getColumns, which pgjdbc
// answers with its own queries on pg_catalog (joins, LEFT JOINs, a window function, regular
// expressions, `'pg_class'::regclass`). Usage: java Metadata PORT; exits non-zero on the first
// failed check, prints "pgjdbc: ok" at the end.

import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

public class Metadata {
  static void check(boolean ok, String what) {
    if (!ok) {
      System.err.println("check failed: " + what);
      System.exit(1);
    }
  }

  public static void main(String[] args) throws SQLException {
    String url = "jdbc:postgresql://127.0.0.1:" + args[0] + "/augur?user=augur";
    try (Connection c = DriverManager.getConnection(url)) {
      try (Statement s = c.createStatement()) {
        s.execute("create table jd_items (id int primary key, name varchar(30) not null, price float8)");
        s.execute("create table jd_tags (label text primary key)");
      }
      DatabaseMetaData md = c.getMetaData();

      List<String> tables = new ArrayList<>();
      try (ResultSet rs = md.getTables(null, "public", "jd%", new String[] {"TABLE"})) {
        while (rs.next()) {
          tables.add(rs.getString("TABLE_NAME") + ":" + rs.getString("TABLE_TYPE"));
        }
      }
      check(tables.equals(List.of("jd_items:TABLE", "jd_tags:TABLE")), "getTables " + tables);

      List<String> cols = new ArrayList<>();
      try (ResultSet rs = md.getColumns(null, "public", "jd_items", "%")) {
        while (rs.next()) {
          cols.add(rs.getString("COLUMN_NAME") + ":" + rs.getString("TYPE_NAME") + ":"
              + rs.getInt("COLUMN_SIZE") + ":" + rs.getInt("NULLABLE") + ":"
              + rs.getInt("ORDINAL_POSITION"));
        }
      }
      List<String> want = List.of("id:int4:10:0:1", "name:varchar:30:0:2", "price:float8:17:1:3");
      check(cols.equals(want), "getColumns " + cols);

      try (Statement s = c.createStatement()) {
        s.execute("drop table jd_items");
        s.execute("drop table jd_tags");
      }
    }
    System.out.println("pgjdbc: ok");
  }
}
