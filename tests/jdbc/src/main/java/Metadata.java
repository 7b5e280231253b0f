// pgjdbc's DatabaseMetaData against `augur serve`: getTables, getColumns, getPrimaryKeys,
// getImportedKeys and getExportedKeys, which pgjdbc answers with its own queries on pg_catalog
// (joins, LEFT JOINs, a window function, regular expressions, `'pg_class'::regclass`,
// `generate_series(1, 32) pos(n)` in FROM, array subscripts `con.conkey[pos.n]`, the
// set-returning `information_schema._pg_expandarray(i.indkey)` in a select list and its record's
// fields `(keys).x`). Usage: java Metadata PORT; exits non-zero on the first failed check, prints
// "pgjdbc: ok" at the end.

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
        s.execute("create table jd_links (id int primary key, item int references jd_items"
            + " on delete cascade, tag text, kind int,"
            + " constraint jd_links_tag foreign key (tag) references jd_tags (label) on update restrict)");
        s.execute("create table jp_pairs (a int, b text, c int, primary key (b, a))");
      }
      DatabaseMetaData md = c.getMetaData();

      List<String> tables = new ArrayList<>();
      try (ResultSet rs = md.getTables(null, "public", "jd%", new String[] {"TABLE"})) {
        while (rs.next()) {
          tables.add(rs.getString("TABLE_NAME") + ":" + rs.getString("TABLE_TYPE"));
        }
      }
      check(tables.equals(List.of("jd_items:TABLE", "jd_links:TABLE", "jd_tags:TABLE")),
          "getTables " + tables);

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

      // Foreign keys: (referenced table.column, referencing table.column, KEY_SEQ, UPDATE_RULE,
      // DELETE_RULE, FK_NAME, PK_NAME), as pgjdbc reports them from PostgreSQL 15.
      List<String> fks = new ArrayList<>();
      try (ResultSet rs = md.getImportedKeys(null, "public", "jd_links")) {
        while (rs.next()) {
          fks.add(rs.getString("PKTABLE_NAME") + "." + rs.getString("PKCOLUMN_NAME") + "<-"
              + rs.getString("FKTABLE_NAME") + "." + rs.getString("FKCOLUMN_NAME") + ":"
              + rs.getInt("KEY_SEQ") + ":" + rs.getInt("UPDATE_RULE") + ":"
              + rs.getInt("DELETE_RULE") + ":" + rs.getString("FK_NAME") + ":"
              + rs.getString("PK_NAME"));
        }
      }
      List<String> wantFks = List.of(
          "jd_items.id<-jd_links.item:1:3:0:jd_links_item_fkey:jd_items_pkey",
          "jd_tags.label<-jd_links.tag:1:1:3:jd_links_tag:jd_tags_pkey");
      check(fks.equals(wantFks), "getImportedKeys " + fks);
      List<String> exported = new ArrayList<>();
      try (ResultSet rs = md.getExportedKeys(null, "public", "jd_items")) {
        while (rs.next()) {
          exported.add(rs.getString("FKTABLE_NAME") + "." + rs.getString("FKCOLUMN_NAME") + ":"
              + rs.getString("FK_NAME"));
        }
      }
      check(exported.equals(List.of("jd_links.item:jd_links_item_fkey")), "getExportedKeys " + exported);
      try (ResultSet rs = md.getImportedKeys(null, "public", "jd_items")) {
        check(!rs.next(), "getImportedKeys of a table without foreign keys");
      }

      // Primary keys: (COLUMN_NAME, KEY_SEQ, PK_NAME) in key order, not column order.
      List<String> pks = new ArrayList<>();
      for (String t : List.of("jp_pairs", "jd_items")) {
        try (ResultSet rs = md.getPrimaryKeys(null, "public", t)) {
          while (rs.next()) {
            pks.add(rs.getString("TABLE_NAME") + "." + rs.getString("COLUMN_NAME") + ":"
                + rs.getInt("KEY_SEQ") + ":" + rs.getString("PK_NAME"));
          }
        }
      }
      check(pks.equals(List.of("jp_pairs.b:1:jp_pairs_pkey", "jp_pairs.a:2:jp_pairs_pkey",
          "jd_items.id:1:jd_items_pkey")), "getPrimaryKeys " + pks);

      try (Statement s = c.createStatement()) {
        s.execute("drop table jp_pairs");
        s.execute("drop table jd_links");
        s.execute("drop table jd_items");
        s.execute("drop table jd_tags");
      }
    }
    System.out.println("pgjdbc: ok");
  }
}
