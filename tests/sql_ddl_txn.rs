//! DDL inside a transaction block where Augur's answer is its own (the cases PostgreSQL shares
//! are in tests/slt/ddl_transactions.slt and alter_in_block.slt): ALTER TABLE of a table the
//! block did not create is undone by its rollback, its rewriting forms and DROP CONSTRAINT of
//! a UNIQUE too (the old incarnation kept until the block ends), CREATE OR REPLACE VIEW of a
//! view the block did not create is refused with 25001; a failed block,
//! a session that ends inside a block, and a failed COMMIT drop what the block created; a DROP
//! of an existing table is checked at once and carried out at COMMIT.

mod common;

use augur::{Session, TxStatus, Value};

use common::open_nosync as open;
use common::{sql_code as code, sql_ok as ok, sql_rows as rows};

/// The user relations pg_class lists, by name.
fn relations(s: &mut Session) -> Vec<String> {
    // The user's relations: pg_class also lists the catalog's own (in pg_catalog and
    // information_schema).
    rows(
        s,
        "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace ORDER BY 1",
    )
    .into_iter()
    .map(|r| r[0].to_string())
    .collect()
}

fn columns(s: &mut Session, table: &str) -> Vec<String> {
    rows(
        s,
        &format!("SELECT attname FROM pg_attribute WHERE attrelid = '{table}'::regclass ORDER BY attnum"),
    )
    .into_iter()
    .map(|r| r[0].to_string())
    .collect()
}

/// Table `t` of `alter_of_an_existing_table_...` as its catalog, rows and constraints show it.
fn check_existing_table(s: &mut Session) {
    assert_eq!(columns(s, "t"), ["id", "v", "n"]);
    assert_eq!(relations(s), ["t", "t_n_key", "t_pkey"]);
    assert_eq!(
        rows(s, "SELECT id, v, n FROM t ORDER BY id"),
        vec![vec![Value::Int(1), Value::from("a"), Value::Int(10)]]
    );
    assert_eq!(
        rows(
            s,
            "SELECT conname FROM pg_constraint WHERE conrelid = 't'::regclass ORDER BY 1"
        ),
        vec![
            vec![Value::from("c")],
            vec![Value::from("t_n_key")],
            vec![Value::from("t_pkey")]
        ]
    );
    ok(s, "BEGIN");
    // The DEFAULT, NOT NULL, CHECK and UNIQUE are as they were.
    ok(s, "INSERT INTO t (id) VALUES (2)");
    assert_eq!(
        rows(s, "SELECT v, n FROM t WHERE id = 2"),
        vec![vec![Value::from("x"), Value::Null]]
    );
    refused_in_savepoint(s, "INSERT INTO t VALUES (3, NULL, 1)", "23502");
    refused_in_savepoint(s, "INSERT INTO t VALUES (-3, 'c', 1)", "23514");
    refused_in_savepoint(s, "INSERT INTO t VALUES (3, 'c', 10)", "23505");
    ok(s, "INSERT INTO t VALUES (4, 'd', NULL)");
    ok(s, "ROLLBACK");
}

const EXISTING: &str =
    "CREATE TABLE t (id int PRIMARY KEY, v text NOT NULL DEFAULT 'x', n int UNIQUE, CONSTRAINT c CHECK (id > 0))";

/// The ALTERs that leave the rows where they are, each run in a block of its own after a
/// write of the block.
const NON_REWRITING: [&str; 14] = [
    "ALTER TABLE t ADD COLUMN w int",
    "ALTER TABLE t ADD COLUMN w int NOT NULL DEFAULT 5",
    "ALTER TABLE t ADD COLUMN w text DEFAULT 'q' CHECK (w <> '')",
    "ALTER TABLE t RENAME COLUMN v TO w",
    "ALTER TABLE t RENAME TO u",
    "ALTER TABLE t ALTER COLUMN v SET DEFAULT 'y'",
    "ALTER TABLE t ALTER COLUMN v DROP DEFAULT",
    "ALTER TABLE t ALTER COLUMN v DROP NOT NULL",
    "ALTER TABLE t ALTER COLUMN n SET NOT NULL",
    "ALTER TABLE t ADD CONSTRAINT c2 CHECK (n > 0)",
    "ALTER TABLE t DROP CONSTRAINT c",
    "ALTER TABLE t ADD CONSTRAINT f FOREIGN KEY (n) REFERENCES t (id)",
    "ALTER TABLE t ADD COLUMN w int, RENAME COLUMN v TO v2, ADD CONSTRAINT c3 CHECK (w IS NULL)",
    "ALTER TABLE t ADD CONSTRAINT v_u UNIQUE (v)",
];

#[test]
fn alter_of_an_existing_table_in_a_block_is_undone_by_its_rollback() {
    let (dir, db) = open();
    let mut s = Session::new(db.clone());
    ok(&mut s, EXISTING);
    ok(&mut s, "INSERT INTO t VALUES (1, 'a', 10)");
    check_existing_table(&mut s);
    for alter in NON_REWRITING {
        // UNIQUE builds its index from the committed rows: first in the block.
        let unique = alter.contains("UNIQUE");
        ok(&mut s, "BEGIN");
        if !unique {
            ok(&mut s, "UPDATE t SET n = 1 WHERE id = 1");
        }
        ok(&mut s, alter);
        // The block sees the new definition at once.
        let name = if alter.contains("RENAME TO u") { "u" } else { "t" };
        let _ = rows(&mut s, &format!("SELECT * FROM {name}"));
        ok(&mut s, "ROLLBACK");
        check_existing_table(&mut s);
    }
    // A failed block, ROLLBACK TO and the end of the session undo it too.
    ok(&mut s, "BEGIN");
    ok(&mut s, "ALTER TABLE t ADD COLUMN w int");
    assert_eq!(code(s.execute("SELECT 1/0", &[])), "22012");
    assert_eq!(code(s.execute("COMMIT", &[])), "ok");
    check_existing_table(&mut s);
    ok(&mut s, "BEGIN");
    ok(&mut s, "SAVEPOINT a");
    ok(&mut s, "ALTER TABLE t RENAME COLUMN v TO w");
    ok(&mut s, "ALTER TABLE t RENAME TO u");
    ok(&mut s, "ROLLBACK TO a");
    ok(&mut s, "COMMIT");
    check_existing_table(&mut s);
    let mut s2 = Session::new(db.clone());
    ok(&mut s2, "BEGIN");
    ok(
        &mut s2,
        "ALTER TABLE t ADD COLUMN w int, ALTER COLUMN v DROP NOT NULL",
    );
    ok(&mut s2, "UPDATE t SET w = 1");
    drop(s2);
    check_existing_table(&mut s);
    // Committed, each applies (and is durable).
    ok(&mut s, "BEGIN");
    ok(&mut s, "ALTER TABLE t ADD COLUMN w int DEFAULT 7");
    ok(&mut s, "UPDATE t SET w = w + 1");
    ok(&mut s, "ALTER TABLE t RENAME COLUMN w TO z");
    ok(&mut s, "COMMIT");
    drop(s);
    db.close().unwrap();
    drop(db);
    let db = common::open_nosync_at(dir.path());
    let mut s = Session::new(db);
    assert_eq!(columns(&mut s, "t"), ["id", "v", "n", "z"]);
    assert_eq!(rows(&mut s, "SELECT z FROM t"), vec![vec![Value::Int(8)]]);
}

#[test]
fn a_rewriting_alter_of_an_existing_table_in_a_block_is_undone_by_its_rollback() {
    // DROP COLUMN, ADD PRIMARY KEY and ADD COLUMN with a volatile default or of a serial type
    // rewrite the rows into a new incarnation of the table; in a block the old one is kept
    // (retired) for the rollback, which puts it back as it was, as PostgreSQL's does.
    let (_d, db) = open();
    let mut s = Session::new(db.clone());
    ok(&mut s, EXISTING);
    ok(&mut s, "INSERT INTO t VALUES (1, 'a', 10)");
    for (alter, cols) in [
        ("ALTER TABLE t DROP COLUMN v", &["id", "n"][..]),
        (
            "ALTER TABLE t ADD COLUMN w float8 DEFAULT random()",
            &["id", "v", "n", "w"],
        ),
        ("ALTER TABLE t ADD COLUMN w serial", &["id", "v", "n", "w"]),
        ("ALTER TABLE t ADD COLUMN w int, DROP COLUMN n", &["id", "v", "w"]),
    ] {
        ok(&mut s, "BEGIN");
        ok(&mut s, alter);
        assert_eq!(columns(&mut s, "t"), cols, "{alter}");
        // The block reads and writes the new incarnation.
        ok(&mut s, "INSERT INTO t (id) VALUES (7)");
        assert_eq!(
            rows(&mut s, "SELECT count(*) FROM t"),
            vec![vec![Value::Int(2)]],
            "{alter}"
        );
        assert_eq!(db.stats().retired_tables, 1, "{alter}");
        ok(&mut s, "ROLLBACK");
        assert_eq!(db.stats().retired_tables, 0, "{alter}");
        check_existing_table(&mut s);
    }
    // ROLLBACK TO a savepoint opened before the rewrite puts the table back; the block goes on.
    ok(&mut s, "BEGIN");
    ok(&mut s, "SAVEPOINT a");
    ok(&mut s, "ALTER TABLE t DROP COLUMN v");
    ok(&mut s, "INSERT INTO t (id, n) VALUES (8, 8)");
    ok(&mut s, "ROLLBACK TO a");
    assert_eq!(columns(&mut s, "t"), ["id", "v", "n"]);
    assert_eq!(rows(&mut s, "SELECT count(*) FROM t"), vec![vec![Value::Int(1)]]);
    ok(&mut s, "COMMIT");
    check_existing_table(&mut s);
    // DROP CONSTRAINT of a UNIQUE (Django's RemoveConstraint, Alembic's drop_constraint):
    // the block may then write duplicates; its rollback puts the index back, built as it
    // was, with the rows it held.
    ok(&mut s, "BEGIN");
    ok(&mut s, "ALTER TABLE t DROP CONSTRAINT t_n_key");
    assert_eq!(relations(&mut s), ["t", "t_pkey"]);
    ok(&mut s, "INSERT INTO t VALUES (4, 'd', 10)");
    assert_eq!(db.stats().retired_tables, 1);
    ok(&mut s, "ROLLBACK");
    assert_eq!(db.stats().retired_tables, 0);
    check_existing_table(&mut s);
    assert_eq!(code(s.execute("INSERT INTO t VALUES (4, 'd', 10)", &[])), "23505");
    // Still refused: a rewrite or a new UNIQUE once the block has written rows (both read
    // committed rows).
    for alter in [
        "ALTER TABLE t DROP COLUMN v",
        "ALTER TABLE t ADD UNIQUE (v)",
        "ALTER TABLE t DROP CONSTRAINT t_n_key",
    ] {
        ok(&mut s, "BEGIN");
        ok(&mut s, "INSERT INTO t VALUES (5, 'e', 5)");
        assert_eq!(code(s.execute(alter, &[])), "0A000", "{alter}");
        ok(&mut s, "ROLLBACK");
        check_existing_table(&mut s);
    }
    // ADD PRIMARY KEY of a table without one.
    ok(&mut s, "CREATE TABLE np (id int, v text)");
    ok(&mut s, "INSERT INTO np VALUES (1, 'a')");
    ok(&mut s, "BEGIN");
    ok(&mut s, "ALTER TABLE np ADD PRIMARY KEY (id)");
    assert_eq!(code(s.execute("INSERT INTO np VALUES (1, 'b')", &[])), "23505");
    ok(&mut s, "ROLLBACK");
    ok(&mut s, "INSERT INTO np VALUES (1, 'b')");
    assert_eq!(rows(&mut s, "SELECT count(*) FROM np"), vec![vec![Value::Int(2)]]);
    // Committed, the rewrite stays, with the rows the block wrote after it and the
    // constraints that did not use the dropped column.
    ok(&mut s, "BEGIN");
    ok(&mut s, "ALTER TABLE t DROP COLUMN v");
    ok(&mut s, "INSERT INTO t VALUES (2, 20)");
    ok(&mut s, "COMMIT");
    assert_eq!(db.stats().retired_tables, 0);
    assert_eq!(db.verify_integrity().unwrap(), 4);
    assert_eq!(columns(&mut s, "t"), ["id", "n"]);
    assert_eq!(
        rows(&mut s, "SELECT id, n FROM t ORDER BY id"),
        vec![
            vec![Value::Int(1), Value::Int(10)],
            vec![Value::Int(2), Value::Int(20)]
        ]
    );
    assert_eq!(code(s.execute("INSERT INTO t VALUES (3, 10)", &[])), "23505");
    assert_eq!(code(s.execute("INSERT INTO t VALUES (-3, 30)", &[])), "23514");
    assert_eq!(relations(&mut s), ["np", "t", "t_n_key", "t_pkey"]);
    // A committed DROP CONSTRAINT of a UNIQUE: the index is gone, duplicates may follow.
    ok(&mut s, "BEGIN");
    ok(&mut s, "ALTER TABLE t DROP CONSTRAINT t_n_key");
    ok(&mut s, "INSERT INTO t VALUES (3, 20)");
    ok(&mut s, "COMMIT");
    assert_eq!(db.stats().retired_tables, 0);
    assert_eq!(relations(&mut s), ["np", "t", "t_pkey"]);
    ok(&mut s, "INSERT INTO t VALUES (4, 20)");
    assert_eq!(
        rows(&mut s, "SELECT count(*) FROM t WHERE n = 20"),
        vec![vec![Value::Int(3)]]
    );
}

#[test]
fn a_rewrite_of_a_table_created_before_an_open_savepoint_goes_with_the_rollbacks() {
    let (_d, db) = open();
    let mut s = Session::new(db.clone());
    ok(&mut s, "BEGIN");
    ok(&mut s, "CREATE TABLE t2 (id int PRIMARY KEY, n int)");
    ok(&mut s, "SAVEPOINT a");
    ok(&mut s, "ALTER TABLE t2 DROP COLUMN n");
    ok(&mut s, "ROLLBACK TO a");
    assert_eq!(columns(&mut s, "t2"), ["id", "n"]);
    assert_eq!(db.stats().retired_tables, 0);
    ok(&mut s, "ALTER TABLE t2 DROP COLUMN n");
    assert_eq!(db.stats().retired_tables, 1);
    // The rollback drops the table the block created, and the incarnation it kept.
    ok(&mut s, "ROLLBACK");
    assert_eq!(db.stats().retired_tables, 0);
    assert!(relations(&mut s).is_empty());
}

#[test]
fn a_serial_column_dropped_in_a_block_keeps_its_sequence_until_commit() {
    let (_d, db) = open();
    let mut s = Session::new(db);
    ok(&mut s, "CREATE TABLE q (id int PRIMARY KEY, s serial)");
    ok(&mut s, "INSERT INTO q (id) VALUES (1), (2)");
    ok(&mut s, "BEGIN");
    ok(&mut s, "ALTER TABLE q DROP COLUMN s");
    ok(&mut s, "ROLLBACK");
    ok(&mut s, "INSERT INTO q (id) VALUES (3)");
    assert_eq!(
        rows(&mut s, "SELECT id, s FROM q ORDER BY id"),
        vec![
            vec![Value::Int(1), Value::Int(1)],
            vec![Value::Int(2), Value::Int(2)],
            vec![Value::Int(3), Value::Int(3)]
        ]
    );
    ok(&mut s, "BEGIN");
    ok(&mut s, "ALTER TABLE q DROP COLUMN s");
    assert_eq!(relations(&mut s), ["q", "q_pkey", "q_s_seq"]);
    ok(&mut s, "COMMIT");
    assert_eq!(relations(&mut s), ["q", "q_pkey"]);
}

#[test]
fn constraints_added_in_a_block_check_the_rows_the_block_sees() {
    let (_d, db) = open();
    let mut s = Session::new(db);
    ok(&mut s, "CREATE TABLE p (id int PRIMARY KEY)");
    ok(&mut s, "CREATE TABLE t (id int PRIMARY KEY, v int)");
    ok(&mut s, "INSERT INTO p VALUES (1)");
    ok(&mut s, "INSERT INTO t VALUES (1, NULL), (2, -1)");
    // The migration: a column filled in, then constrained; the committed rows would fail.
    ok(&mut s, "BEGIN");
    ok(&mut s, "UPDATE t SET v = 1");
    ok(&mut s, "ALTER TABLE t ALTER COLUMN v SET NOT NULL");
    ok(&mut s, "ALTER TABLE t ADD CHECK (v > 0)");
    ok(&mut s, "ALTER TABLE t ADD FOREIGN KEY (v) REFERENCES p (id)");
    ok(&mut s, "COMMIT");
    assert_eq!(code(s.execute("INSERT INTO t VALUES (3, NULL)", &[])), "23502");
    assert_eq!(code(s.execute("INSERT INTO t VALUES (3, 2)", &[])), "23503");
    // And the block's own rows fail them.
    for (alter, want) in [
        ("ALTER TABLE t ALTER COLUMN v DROP NOT NULL, ADD CHECK (v < 5)", "23514"),
        ("ALTER TABLE t ADD COLUMN w int NOT NULL DEFAULT 1, DROP CONSTRAINT t_v_fkey, ADD CONSTRAINT x CHECK (v = 1)", "23514"),
    ] {
        ok(&mut s, "BEGIN");
        ok(&mut s, "INSERT INTO p VALUES (7)");
        ok(&mut s, "INSERT INTO t VALUES (7, 7)");
        assert_eq!(code(s.execute(alter, &[])), want, "{alter}");
        ok(&mut s, "ROLLBACK");
        assert_eq!(columns(&mut s, "t"), ["id", "v"]);
        assert_eq!(code(s.execute("INSERT INTO t VALUES (3, NULL)", &[])), "23502");
        assert_eq!(code(s.execute("INSERT INTO t VALUES (3, 2)", &[])), "23503");
    }
}

#[test]
fn replacing_an_existing_view_in_a_block_is_refused() {
    let (_d, db) = open();
    let mut s = Session::new(db);
    ok(&mut s, "CREATE TABLE t (id int PRIMARY KEY, v text)");
    ok(&mut s, "CREATE VIEW w AS SELECT id FROM t");
    ok(&mut s, "BEGIN");
    assert_eq!(
        code(s.execute("CREATE OR REPLACE VIEW w AS SELECT id, v FROM t", &[])),
        "25001"
    );
    ok(&mut s, "ROLLBACK");
    assert_eq!(columns(&mut s, "w"), ["id"]);
    // A view the block made may be replaced in it, and goes with its rollback.
    ok(&mut s, "BEGIN");
    ok(&mut s, "CREATE VIEW w2 AS SELECT id FROM t");
    ok(&mut s, "CREATE OR REPLACE VIEW w2 AS SELECT id, v FROM t");
    ok(&mut s, "ROLLBACK");
    assert!(!relations(&mut s).contains(&"w2".to_string()));
}

#[test]
fn a_failed_block_and_an_ended_session_drop_what_the_block_created() {
    let (_d, db) = open();
    let mut s = Session::new(db.clone());
    ok(&mut s, "CREATE TABLE t (id int PRIMARY KEY)");
    let before = relations(&mut s);
    // An error later in the block: its COMMIT rolls back, DDL included.
    ok(&mut s, "BEGIN");
    ok(&mut s, "CREATE TABLE n1 (id serial PRIMARY KEY, u text UNIQUE)");
    ok(&mut s, "CREATE INDEX t_id ON t (id)");
    ok(&mut s, "CREATE SEQUENCE q1");
    assert_eq!(code(s.execute("SELECT * FROM nosuch", &[])), "42P01");
    let r = s.execute("COMMIT", &[]).unwrap();
    assert_eq!(r[0].tag(), "ROLLBACK");
    assert_eq!(relations(&mut s), before);
    // A CREATE TABLE that fails changes nothing.
    ok(&mut s, "BEGIN");
    assert_eq!(
        code(s.execute("CREATE TABLE t (id int PRIMARY KEY)", &[])),
        "42P07"
    );
    ok(&mut s, "ROLLBACK");
    assert_eq!(relations(&mut s), before);
    // A session that ends inside a block (a client that disconnects).
    ok(&mut s, "BEGIN");
    ok(&mut s, "CREATE TABLE n2 (id int PRIMARY KEY)");
    ok(&mut s, "INSERT INTO n2 VALUES (1)");
    drop(s);
    let mut s = Session::new(db);
    assert_eq!(relations(&mut s), before);
    // A DDL statement outside a block is not undone by a later ROLLBACK.
    ok(&mut s, "CREATE TABLE n3 (id int PRIMARY KEY)");
    ok(&mut s, "BEGIN");
    ok(&mut s, "ROLLBACK");
    assert!(relations(&mut s).contains(&"n3".to_string()));
}

#[test]
fn drop_of_an_existing_table_is_checked_at_once_and_done_at_commit() {
    let (_d, db) = open();
    let mut s = Session::new(db.clone());
    ok(&mut s, "CREATE TABLE p (id int PRIMARY KEY)");
    ok(
        &mut s,
        "CREATE TABLE c (id int PRIMARY KEY, p int REFERENCES p (id))",
    );
    ok(&mut s, "INSERT INTO p VALUES (1)");
    ok(&mut s, "BEGIN");
    // The dependent table is still there: 2BP01 at the statement, not at COMMIT.
    assert_eq!(code(s.execute("DROP TABLE p", &[])), "2BP01");
    ok(&mut s, "ROLLBACK");
    ok(&mut s, "BEGIN");
    assert_eq!(code(s.execute("DROP TABLE nosuch", &[])), "42P01");
    ok(&mut s, "ROLLBACK");
    // Dropped in dependency order, as SQLAlchemy's drop_all does.
    ok(&mut s, "BEGIN");
    ok(&mut s, "DROP TABLE c");
    ok(&mut s, "DROP TABLE p");
    // Dropping it twice in the block is 42P01, as in PostgreSQL.
    assert_eq!(code(s.execute("DROP TABLE p", &[])), "42P01");
    ok(&mut s, "ROLLBACK");
    assert_eq!(relations(&mut s), ["c", "c_pkey", "p", "p_pkey"]);
    ok(&mut s, "BEGIN");
    ok(&mut s, "DROP TABLE c");
    ok(&mut s, "DROP TABLE p");
    // Until COMMIT another session still sees both.
    let mut other = Session::new(db);
    assert_eq!(relations(&mut other).len(), 4);
    ok(&mut s, "COMMIT");
    assert!(relations(&mut s).is_empty());
    assert!(relations(&mut other).is_empty());
}

#[test]
fn truncate_in_a_block_commits_or_rolls_back_with_it() {
    let (_d, db) = open();
    let mut s = Session::new(db);
    ok(&mut s, "CREATE TABLE t (id int PRIMARY KEY)");
    ok(&mut s, "INSERT INTO t VALUES (1), (2), (3)");
    ok(&mut s, "BEGIN");
    ok(&mut s, "TRUNCATE t");
    ok(&mut s, "INSERT INTO t VALUES (7)");
    ok(&mut s, "ROLLBACK");
    assert_eq!(rows(&mut s, "SELECT count(*) FROM t"), vec![vec![Value::Int(3)]]);
    ok(&mut s, "BEGIN");
    ok(&mut s, "TRUNCATE t");
    ok(&mut s, "INSERT INTO t VALUES (7)");
    ok(&mut s, "COMMIT");
    assert_eq!(rows(&mut s, "SELECT id FROM t"), vec![vec![Value::Int(7)]]);
}

#[test]
fn a_rewrite_in_a_block_that_wrote_rows_is_refused_and_keeps_them() {
    // The rewrites of a volatile DEFAULT, DROP COLUMN and ADD PRIMARY KEY read committed rows
    // only: in a block that has written rows (its own, not committed) they are refused
    // (PostgreSQL runs them), where they used to leave those rows out and lose the table at
    // COMMIT.
    let (_dir, db) = open();
    let mut s = Session::new(db);
    for alter in [
        "ALTER TABLE vb ADD COLUMN g uuid DEFAULT gen_random_uuid()",
        "ALTER TABLE vb DROP COLUMN b",
        "ALTER TABLE vb ADD PRIMARY KEY (id)",
        "ALTER TABLE vb ADD COLUMN n serial",
    ] {
        ok(&mut s, "BEGIN");
        ok(&mut s, "CREATE TABLE vb (id int, b int)");
        ok(&mut s, "INSERT INTO vb VALUES (1, 1), (2, 2), (3, 3)");
        assert_eq!(code(s.execute(alter, &[])), "0A000", "{alter}");
        ok(&mut s, "ROLLBACK");
    }
    // Before the block writes, they run; rows written after them and at COMMIT are kept.
    ok(&mut s, "BEGIN");
    ok(&mut s, "CREATE TABLE vb (id int, b int)");
    ok(&mut s, "ALTER TABLE vb DROP COLUMN b");
    ok(&mut s, "ALTER TABLE vb ADD PRIMARY KEY (id)");
    ok(
        &mut s,
        "ALTER TABLE vb ADD COLUMN g uuid DEFAULT gen_random_uuid()",
    );
    ok(&mut s, "INSERT INTO vb (id) VALUES (1), (2), (3)");
    ok(&mut s, "ALTER TABLE vb ADD COLUMN k int DEFAULT 7");
    ok(&mut s, "COMMIT");
    assert_eq!(
        rows(&mut s, "SELECT count(*), sum(k), count(DISTINCT g) FROM vb"),
        vec![vec![Value::Int(3), Value::Int(21), Value::Int(3)]]
    );
    assert_eq!(columns(&mut s, "vb"), vec!["id", "g", "k"]);
}

#[test]
fn a_serial_column_added_in_a_block_goes_with_its_rollback() {
    // The sequence of a serial column added in a block is the block's: its ROLLBACK (and
    // ROLLBACK TO a savepoint before the table) drops it with the table; its COMMIT keeps it.
    let (_dir, db) = open();
    let mut s = Session::new(db);
    ok(&mut s, "BEGIN");
    ok(&mut s, "CREATE TABLE sb (id int)");
    ok(&mut s, "ALTER TABLE sb ADD COLUMN n serial");
    assert_eq!(relations(&mut s), vec!["sb", "sb_n_seq"]);
    ok(&mut s, "ROLLBACK");
    assert!(relations(&mut s).is_empty());
    ok(&mut s, "BEGIN");
    ok(&mut s, "SAVEPOINT a");
    ok(&mut s, "CREATE TABLE sb (id int)");
    ok(&mut s, "ALTER TABLE sb ADD COLUMN n serial");
    ok(&mut s, "ROLLBACK TO a");
    assert!(relations(&mut s).is_empty());
    ok(&mut s, "CREATE TABLE sb (id int)");
    ok(&mut s, "ALTER TABLE sb ADD COLUMN n serial");
    ok(&mut s, "INSERT INTO sb (id) VALUES (10), (20)");
    ok(&mut s, "COMMIT");
    assert_eq!(
        rows(&mut s, "SELECT id, n FROM sb ORDER BY id"),
        vec![
            vec![Value::Int(10), Value::Int(1)],
            vec![Value::Int(20), Value::Int(2)]
        ]
    );
    assert_eq!(relations(&mut s), vec!["sb", "sb_n_seq"]);
}

/// Whether `sql` fails with SQLSTATE `want` in a fresh savepoint of the block, after which the
/// block rolls back to it (ending the failed state).
fn refused_in_savepoint(s: &mut Session, sql: &str, want: &str) {
    ok(s, "SAVEPOINT x");
    assert_eq!(code(s.execute(sql, &[])), want, "{sql}");
    assert_eq!(s.status(), TxStatus::Failed, "{sql}");
    ok(s, "ROLLBACK TO x");
    ok(s, "RELEASE x");
}

/// The definition of table `t` of `every_alter_of_a_table_created_before_a_savepoint...` as
/// its rows and constraints show it.
fn check_savepoint_table(s: &mut Session) {
    assert_eq!(columns(s, "t"), ["id", "v", "n"]);
    assert_eq!(
        rows(s, "SELECT id, v, n FROM t ORDER BY id"),
        vec![vec![Value::Int(1), Value::from("a"), Value::Int(10)]]
    );
    ok(s, "BEGIN");
    // The DEFAULT, NOT NULL, CHECK, UNIQUE and the type of n are as they were.
    ok(s, "INSERT INTO t (id) VALUES (2)");
    assert_eq!(
        rows(s, "SELECT v, n FROM t WHERE id = 2"),
        vec![vec![Value::from("x"), Value::Null]]
    );
    refused_in_savepoint(s, "INSERT INTO t VALUES (3, NULL, 1)", "23502");
    refused_in_savepoint(s, "INSERT INTO t VALUES (-3, 'c', 1)", "23514");
    refused_in_savepoint(s, "INSERT INTO t VALUES (3, 'c', 10)", "23505");
    ok(s, "ROLLBACK");
    assert_eq!(
        rows(s, "SELECT pg_typeof(n)::text FROM t"),
        vec![vec![Value::from("integer")]]
    );
}

#[test]
fn alter_of_a_table_created_before_an_open_savepoint_is_undone_by_rollback_to() {
    // ROLLBACK TO SAVEPOINT puts back the definition an ALTER after it changed (it used to
    // keep the ALTER, and then refused it with 0A000); the ALTERs that rewrite the rows
    // remain 0A000 and change nothing.
    let (dir, db) = open();
    let mut s = Session::new(db.clone());
    ok(&mut s, "BEGIN");
    ok(
        &mut s,
        "CREATE TABLE t (id int PRIMARY KEY, v text NOT NULL DEFAULT 'x', n int UNIQUE, CONSTRAINT c CHECK (id > 0))",
    );
    ok(&mut s, "INSERT INTO t VALUES (1, 'a', 10)");
    ok(&mut s, "SAVEPOINT s");
    for (alter, want) in [
        ("ALTER TABLE t ADD COLUMN b int", "ok"),
        ("ALTER TABLE t ADD COLUMN b int DEFAULT 5", "ok"),
        ("ALTER TABLE t DROP COLUMN n", "0A000"),
        ("ALTER TABLE t ADD COLUMN b serial", "0A000"),
        ("ALTER TABLE t RENAME COLUMN v TO w", "ok"),
        ("ALTER TABLE t ALTER COLUMN v SET DEFAULT 'y'", "ok"),
        ("ALTER TABLE t ALTER COLUMN v DROP DEFAULT", "ok"),
        ("ALTER TABLE t ALTER COLUMN n SET NOT NULL", "ok"),
        ("ALTER TABLE t ALTER COLUMN v DROP NOT NULL", "ok"),
        ("ALTER TABLE t ALTER COLUMN n TYPE bigint", "0A000"),
        ("ALTER TABLE t RENAME TO u", "ok"),
        ("ALTER TABLE t ADD CONSTRAINT c2 CHECK (n > 0)", "ok"),
        ("ALTER TABLE t ADD CONSTRAINT v_u UNIQUE (v)", "0A000"),
        ("ALTER TABLE t DROP CONSTRAINT c", "ok"),
        ("ALTER TABLE t DROP CONSTRAINT t_n_key", "0A000"),
        ("ALTER TABLE IF EXISTS t ADD COLUMN b int", "ok"),
    ] {
        assert_eq!(code(s.execute(alter, &[])), want, "{alter}");
        ok(&mut s, "ROLLBACK TO s");
        assert_eq!(columns(&mut s, "t"), ["id", "v", "n"], "{alter}");
        assert_eq!(relations(&mut s), ["t", "t_n_key", "t_pkey"], "{alter}");
    }
    // Nested savepoints: each ROLLBACK TO undoes what came after it.
    ok(&mut s, "ALTER TABLE t ADD COLUMN b int");
    ok(&mut s, "SAVEPOINT s2");
    ok(&mut s, "ALTER TABLE t RENAME COLUMN b TO b2");
    ok(&mut s, "ROLLBACK TO s2");
    assert_eq!(columns(&mut s, "t"), ["id", "v", "n", "b"]);
    ok(&mut s, "ROLLBACK TO s");
    ok(&mut s, "COMMIT");
    check_savepoint_table(&mut s);
    drop(s);
    db.close().unwrap();
    drop(db);
    let db = common::open_nosync_at(dir.path());
    let mut s = Session::new(db);
    check_savepoint_table(&mut s);
}

#[test]
fn alter_after_a_savepoint_runs_when_rollback_to_can_undo_it() {
    // A table created after every open savepoint (ROLLBACK TO drops it, whatever was
    // altered), or once the savepoints before it are released, may be altered in the block.
    let (_dir, db) = open();
    let mut s = Session::new(db);
    ok(&mut s, "BEGIN");
    ok(&mut s, "CREATE TABLE t (a int)");
    ok(&mut s, "SAVEPOINT s");
    ok(&mut s, "CREATE TABLE u (a int)");
    ok(&mut s, "ALTER TABLE u ADD COLUMN b int");
    ok(&mut s, "ALTER TABLE u RENAME TO u2");
    ok(&mut s, "ROLLBACK TO s");
    assert_eq!(relations(&mut s), ["t"]);
    ok(&mut s, "RELEASE s");
    ok(&mut s, "ALTER TABLE t ADD COLUMN b int");
    ok(&mut s, "COMMIT");
    assert_eq!(columns(&mut s, "t"), ["a", "b"]);
}

#[test]
fn drop_and_replace_of_objects_created_before_an_open_savepoint_are_refused() {
    // ROLLBACK TO could not bring back a dropped object nor a replaced view's old text: the
    // table used to be gone after `CREATE TABLE t ...; SAVEPOINT s; DROP TABLE t; ROLLBACK TO
    // s; COMMIT`.
    let (_dir, db) = open();
    let mut s = Session::new(db);
    ok(&mut s, "BEGIN");
    ok(&mut s, "CREATE TABLE t (id int PRIMARY KEY, v text)");
    ok(&mut s, "CREATE INDEX t_v ON t (v)");
    ok(&mut s, "CREATE SEQUENCE q");
    ok(&mut s, "CREATE VIEW w AS SELECT id FROM t");
    ok(&mut s, "INSERT INTO t VALUES (1, 'a')");
    ok(&mut s, "SAVEPOINT s");
    for st in [
        "DROP VIEW w",
        "DROP INDEX t_v",
        "DROP SEQUENCE q",
        "DROP TABLE t CASCADE",
        "CREATE OR REPLACE VIEW w AS SELECT id, v FROM t",
    ] {
        assert_eq!(code(s.execute(st, &[])), "0A000", "{st}");
        ok(&mut s, "ROLLBACK TO s");
    }
    // What the block creates after the savepoint it may drop or replace.
    ok(&mut s, "CREATE VIEW w2 AS SELECT id FROM t");
    ok(&mut s, "CREATE OR REPLACE VIEW w2 AS SELECT id, v FROM t");
    ok(&mut s, "DROP VIEW w2");
    ok(&mut s, "COMMIT");
    assert_eq!(relations(&mut s), ["q", "t", "t_pkey", "t_v", "w"]);
    assert_eq!(columns(&mut s, "w"), ["id"]);
    assert_eq!(
        rows(&mut s, "SELECT id, v FROM t"),
        vec![vec![Value::Int(1), Value::from("a")]]
    );
}

#[test]
fn rows_of_a_table_rolled_back_to_before_it_do_not_fail_the_commit() {
    // The rows a block wrote to a table it created after a savepoint left an empty write set
    // behind after ROLLBACK TO, which the COMMIT then failed on (42P01, the table being gone),
    // losing the block's other writes.
    let (_dir, db) = open();
    let mut s = Session::new(db);
    ok(&mut s, "CREATE TABLE kept (a int)");
    ok(&mut s, "BEGIN");
    ok(&mut s, "INSERT INTO kept VALUES (1)");
    ok(&mut s, "SAVEPOINT s");
    ok(&mut s, "CREATE TABLE gone (a int)");
    ok(&mut s, "INSERT INTO gone VALUES (1)");
    ok(&mut s, "ROLLBACK TO s");
    ok(&mut s, "INSERT INTO kept VALUES (2)");
    ok(&mut s, "COMMIT");
    assert_eq!(relations(&mut s), ["kept"]);
    assert_eq!(
        rows(&mut s, "SELECT a FROM kept ORDER BY a"),
        vec![vec![Value::Int(1)], vec![Value::Int(2)]]
    );
}

#[test]
fn other_sessions_wait_for_a_block_that_altered_a_table() {
    let (_d, db) = open();
    let mut a = Session::new(db.clone());
    let mut b = Session::new(db.clone());
    ok(&mut a, "CREATE TABLE t (id int PRIMARY KEY, v text)");
    ok(&mut a, "CREATE TABLE o (id int PRIMARY KEY)");
    ok(&mut a, "INSERT INTO t VALUES (1, 'a')");
    let prepared = b.prepare("SELECT * FROM t WHERE id = $1").unwrap();
    ok(&mut a, "BEGIN");
    ok(&mut a, "ALTER TABLE t ADD COLUMN w int DEFAULT 3");
    // Bounded by lock_timeout (55P03) and statement_timeout (57014); other tables are free.
    ok(&mut b, "SET lock_timeout = '50ms'");
    for sql in [
        "SELECT * FROM t",
        "INSERT INTO t VALUES (2, 'b')",
        "UPDATE t SET v = 'x'",
        "DELETE FROM t",
        "ALTER TABLE t ADD COLUMN z int",
        "DROP TABLE t",
        "CREATE INDEX ON t (v)",
        "TRUNCATE t",
        "COPY t FROM STDIN",
        "COPY t TO STDOUT",
    ] {
        assert_eq!(code(b.execute(sql, &[])), "55P03", "{sql}");
    }
    let e = b.execute_prepared(&prepared, &[Value::Int(1)]).unwrap_err();
    assert_eq!(e.sqlstate().code(), "55P03");
    let e = b
        .query_prepared_with(&prepared, &[Value::Int(1)], |_| Ok(()))
        .unwrap_err();
    assert_eq!(e.sqlstate().code(), "55P03");
    ok(&mut b, "INSERT INTO o VALUES (1)");
    ok(&mut b, "SET lock_timeout = 0");
    ok(&mut b, "SET statement_timeout = 50");
    assert_eq!(code(b.execute("SELECT * FROM t", &[])), "57014");
    ok(&mut b, "SET statement_timeout = 0");
    // A block of the other session fails on the wait, as on a row lock's.
    ok(&mut b, "SET lock_timeout = '50ms'");
    ok(&mut b, "BEGIN");
    assert_eq!(code(b.execute("SELECT * FROM t", &[])), "55P03");
    assert_eq!(b.status(), TxStatus::Failed);
    ok(&mut b, "ROLLBACK");
    ok(&mut b, "SET lock_timeout = 0");
    // Without a timeout it waits until the block commits, then sees the new column.
    let waiter = std::thread::spawn(move || {
        let r = rows(&mut b, "SELECT * FROM t");
        let p = b.execute_prepared(&prepared, &[Value::Int(1)]).unwrap();
        (r, p.rows().to_vec())
    });
    std::thread::sleep(std::time::Duration::from_millis(150));
    assert!(!waiter.is_finished());
    ok(&mut a, "UPDATE t SET w = 4");
    ok(&mut a, "COMMIT");
    let (r, p) = waiter.join().unwrap();
    let want = vec![vec![Value::Int(1), Value::from("a"), Value::Int(4)]];
    assert_eq!(r, want);
    assert_eq!(p, want);
}

#[test]
fn a_table_lock_goes_with_rollback_and_with_the_session() {
    let (_d, db) = open();
    let mut a = Session::new(db.clone());
    let mut b = Session::new(db.clone());
    ok(&mut a, "CREATE TABLE t (id int PRIMARY KEY, v text)");
    ok(&mut a, "INSERT INTO t VALUES (1, 'a')");
    ok(&mut b, "SET lock_timeout = '50ms'");
    // Released by ROLLBACK (the definition restored first).
    ok(&mut a, "BEGIN");
    ok(&mut a, "ALTER TABLE t RENAME COLUMN v TO w");
    assert_eq!(code(b.execute("SELECT v FROM t", &[])), "55P03");
    ok(&mut a, "ROLLBACK");
    assert_eq!(rows(&mut b, "SELECT v FROM t"), vec![vec![Value::from("a")]]);
    // ROLLBACK TO keeps it: held until the block ends (PostgreSQL releases a lock taken
    // after the savepoint; Augur keeps it, the stricter way).
    ok(&mut a, "BEGIN");
    ok(&mut a, "SAVEPOINT s");
    ok(&mut a, "ALTER TABLE t ADD COLUMN z int");
    ok(&mut a, "ROLLBACK TO s");
    assert_eq!(code(b.execute("SELECT v FROM t", &[])), "55P03");
    // Released when the session ends inside the block.
    ok(&mut a, "ALTER TABLE t ADD COLUMN z int");
    // A second block's ALTER of the same table waits too.
    ok(&mut b, "BEGIN");
    assert_eq!(code(b.execute("ALTER TABLE t ADD COLUMN q int", &[])), "55P03");
    ok(&mut b, "ROLLBACK");
    drop(a);
    assert_eq!(
        rows(&mut b, "SELECT * FROM t"),
        vec![vec![Value::Int(1), Value::from("a")]]
    );
    ok(&mut b, "BEGIN");
    ok(&mut b, "ALTER TABLE t ADD COLUMN q int");
    ok(&mut b, "COMMIT");
    assert_eq!(columns(&mut b, "t"), ["id", "v", "q"]);
}

/// Session `a`'s block holds the table lock of `t` (an ALTER), session `b`'s block the row lock
/// of `o`'s row 1; each then waits for what the other holds (`a` first when `a_waits_first`).
/// One of the two waits fails with 40P01 (which one depends on who checks the graph last; a
/// lock_timeout of 20 s bounds the test without detection: 55P03), its session rolls back,
/// and the other goes on and commits.
fn table_and_row_lock_deadlock(a_waits_first: bool) {
    let (_d, db) = open();
    let mut a = Session::new(db.clone());
    let mut b = Session::new(db.clone());
    ok(&mut a, "CREATE TABLE t (id int PRIMARY KEY)");
    ok(&mut a, "CREATE TABLE o (id int PRIMARY KEY, v int)");
    ok(&mut a, "INSERT INTO o VALUES (1, 0)");
    for s in [&mut a, &mut b] {
        ok(s, "SET lock_timeout = '20s'");
    }
    ok(&mut b, "BEGIN");
    ok(&mut b, "UPDATE o SET v = 2 WHERE id = 1");
    ok(&mut a, "BEGIN");
    ok(&mut a, "ALTER TABLE t ADD COLUMN w int");
    // Runs the session's wait; on 40P01 rolls its block back (releasing what it holds).
    fn wait(s: &mut Session, sql: &str) -> String {
        let c = code(s.execute(sql, &[]));
        if c == "40P01" {
            ok(s, "ROLLBACK");
        }
        c
    }
    const A: &str = "UPDATE o SET v = 1 WHERE id = 1";
    const B: &str = "SELECT * FROM t";
    let started = std::time::Instant::now();
    let (mut a, a_code, mut b, b_code) = if a_waits_first {
        let first = std::thread::spawn(move || {
            let c = wait(&mut a, A);
            (a, c)
        });
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(!first.is_finished(), "a waits for b's row lock");
        let b_code = wait(&mut b, B);
        let (a, a_code) = first.join().unwrap();
        (a, a_code, b, b_code)
    } else {
        let first = std::thread::spawn(move || {
            let c = wait(&mut b, B);
            (b, c)
        });
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(!first.is_finished(), "b waits for a's table lock");
        let a_code = wait(&mut a, A);
        let (b, b_code) = first.join().unwrap();
        (a, a_code, b, b_code)
    };
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let mut codes = [a_code.as_str(), b_code.as_str()];
    codes.sort();
    assert_eq!(codes, ["40P01", "ok"], "a: {a_code}, b: {b_code}");
    ok(&mut a, "COMMIT");
    ok(&mut b, "COMMIT");
    let mut c = Session::new(db.clone());
    if a_code == "ok" {
        // a got the row and committed its ALTER and update; b's update went with its rollback.
        assert_eq!(columns(&mut c, "t"), ["id", "w"]);
        assert_eq!(rows(&mut c, "SELECT v FROM o"), vec![vec![Value::Int(1)]]);
    } else {
        // a's ALTER went with its rollback; b read t and committed its update.
        assert_eq!(columns(&mut c, "t"), ["id"]);
        assert_eq!(rows(&mut c, "SELECT v FROM o"), vec![vec![Value::Int(2)]]);
    }
}

#[test]
fn a_table_lock_and_a_row_lock_that_wait_for_each_other_fail_with_40p01() {
    table_and_row_lock_deadlock(true);
    table_and_row_lock_deadlock(false);
}

#[test]
fn a_cancel_ends_the_wait_for_a_table_lock() {
    let (_d, db) = open();
    let mut a = Session::new(db.clone());
    let mut b = Session::new(db.clone());
    ok(&mut a, "CREATE TABLE t (id int PRIMARY KEY)");
    ok(&mut a, "BEGIN");
    ok(&mut a, "ALTER TABLE t ADD COLUMN w int");
    let cancel = b.cancel_handle();
    let waiter = std::thread::spawn(move || code(b.execute("SELECT * FROM t", &[])));
    std::thread::sleep(std::time::Duration::from_millis(100));
    while !cancel.cancel() {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(waiter.join().unwrap(), "57014");
    ok(&mut a, "COMMIT");
}

#[test]
fn a_crash_inside_a_block_rolls_its_alters_back_at_open() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = augur::Database::open(dir.path(), augur::Options::default()).unwrap();
        let mut s = Session::new(db.clone());
        ok(&mut s, "CREATE TABLE t (id int PRIMARY KEY, v text NOT NULL)");
        ok(
            &mut s,
            "CREATE TABLE c (id int PRIMARY KEY, tid int REFERENCES t (id))",
        );
        ok(&mut s, "CREATE TABLE other (id int PRIMARY KEY)");
        ok(&mut s, "INSERT INTO t VALUES (1, 'a')");
        ok(&mut s, "INSERT INTO c VALUES (1, 1)");
        // A block committed before: its ALTER stays.
        ok(&mut s, "BEGIN");
        ok(&mut s, "ALTER TABLE t ADD COLUMN kept int DEFAULT 7");
        ok(&mut s, "COMMIT");
        ok(&mut s, "BEGIN");
        ok(
            &mut s,
            "ALTER TABLE t ADD COLUMN w int DEFAULT 1, ALTER COLUMN v DROP NOT NULL",
        );
        ok(&mut s, "ALTER TABLE t ADD CONSTRAINT t_v_key UNIQUE (v)");
        ok(&mut s, "SAVEPOINT a");
        ok(&mut s, "ALTER TABLE t RENAME COLUMN id TO key");
        ok(&mut s, "ALTER TABLE t RENAME TO t2");
        ok(&mut s, "UPDATE t2 SET w = 2");
        // Another session's change, committed meanwhile, is not the block's to undo.
        let mut s2 = Session::new(db.clone());
        ok(&mut s2, "ALTER TABLE other ADD COLUMN note text");
        drop(s2);
        // The process dies: the session never rolls back (its undo finds the engine closed).
        db.abandon();
        drop(s);
    }
    let db = augur::Database::open(dir.path(), augur::Options::default()).unwrap();
    let mut s = Session::new(db);
    assert_eq!(
        relations(&mut s),
        ["c", "c_pkey", "other", "other_pkey", "t", "t_pkey"]
    );
    assert_eq!(columns(&mut s, "t"), ["id", "v", "kept"]);
    assert_eq!(columns(&mut s, "other"), ["id", "note"]);
    assert_eq!(
        rows(&mut s, "SELECT id, v, kept FROM t"),
        vec![vec![Value::Int(1), Value::from("a"), Value::Int(7)]]
    );
    assert_eq!(code(s.execute("INSERT INTO t VALUES (2, NULL)", &[])), "23502");
    assert_eq!(code(s.execute("INSERT INTO c VALUES (2, 5)", &[])), "23503");
    ok(&mut s, "INSERT INTO c VALUES (2, 1)");
    // No record is left to apply again: a new block's ALTER and COMMIT stay.
    ok(&mut s, "BEGIN");
    ok(&mut s, "ALTER TABLE t ADD COLUMN w int");
    ok(&mut s, "COMMIT");
    assert_eq!(columns(&mut s, "t"), ["id", "v", "kept", "w"]);
}

#[test]
fn a_crash_inside_a_block_puts_back_a_table_it_rewrote() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = augur::Database::open(dir.path(), augur::Options::default()).unwrap();
        let mut s = Session::new(db.clone());
        ok(&mut s, "CREATE TABLE t (id int PRIMARY KEY, v text, s serial)");
        ok(&mut s, "INSERT INTO t (id, v) VALUES (1, 'a'), (2, 'b')");
        // A block committed before: its rewrite stays, the serial's sequence goes with it.
        ok(&mut s, "BEGIN");
        ok(&mut s, "ALTER TABLE t DROP COLUMN s");
        ok(&mut s, "COMMIT");
        ok(&mut s, "BEGIN");
        ok(&mut s, "ALTER TABLE t DROP COLUMN v");
        ok(&mut s, "ALTER TABLE t ADD COLUMN w float8 DEFAULT random()");
        ok(&mut s, "INSERT INTO t (id) VALUES (3)");
        db.abandon();
        drop(s);
    }
    let db = augur::Database::open(dir.path(), augur::Options::default()).unwrap();
    let mut s = Session::new(db.clone());
    assert_eq!(relations(&mut s), ["t", "t_pkey"]);
    assert_eq!(columns(&mut s, "t"), ["id", "v"]);
    assert_eq!(
        rows(&mut s, "SELECT id, v FROM t ORDER BY id"),
        vec![
            vec![Value::Int(1), Value::from("a")],
            vec![Value::Int(2), Value::from("b")]
        ]
    );
    assert_eq!(db.verify_integrity().unwrap(), 2);
    ok(&mut s, "BEGIN");
    ok(&mut s, "ALTER TABLE t DROP COLUMN v");
    ok(&mut s, "COMMIT");
    drop(s);
    db.close().unwrap();
    drop(db);
    let db = augur::Database::open(dir.path(), augur::Options::default()).unwrap();
    let mut s = Session::new(db.clone());
    assert_eq!(columns(&mut s, "t"), ["id"]);
    assert_eq!(db.verify_integrity().unwrap(), 2);
}
