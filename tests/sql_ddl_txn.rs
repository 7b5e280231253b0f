//! DDL inside a transaction block where Augur's answer is its own (the cases PostgreSQL shares
//! are in tests/slt/ddl_transactions.slt): ALTER TABLE and CREATE OR REPLACE VIEW of objects
//! the block did not create are refused with 25001 before anything changes; a failed block,
//! a session that ends inside a block, and a failed COMMIT drop what the block created; a DROP
//! of an existing table is checked at once and carried out at COMMIT.

mod common;

use augur::{Session, StatementResult, TxStatus, Value};

use common::open_nosync as open;

fn code(r: augur::Result<Vec<StatementResult>>) -> String {
    r.map(|_| "ok".to_string())
        .unwrap_or_else(|e| e.sqlstate().code().to_string())
}

fn ok(s: &mut Session, sql: &str) {
    s.execute(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {e}"));
}

fn rows(s: &mut Session, sql: &str) -> Vec<Vec<Value>> {
    s.execute(sql, &[]).unwrap().pop().unwrap().rows().to_vec()
}

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

#[test]
fn alter_of_an_existing_table_is_refused_before_it_changes_anything() {
    let (_d, db) = open();
    let mut s = Session::new(db);
    ok(&mut s, "CREATE TABLE t (id int PRIMARY KEY, v text)");
    ok(&mut s, "INSERT INTO t VALUES (1, 'a')");
    let before = columns(&mut s, "t");
    for alter in [
        "ALTER TABLE t ADD COLUMN w int",
        "ALTER TABLE t DROP COLUMN v",
        "ALTER TABLE t RENAME COLUMN v TO w",
        "ALTER TABLE t RENAME TO u",
        "ALTER TABLE t ALTER COLUMN v SET NOT NULL",
        "ALTER TABLE t ADD CONSTRAINT c CHECK (id > 0)",
    ] {
        ok(&mut s, "BEGIN");
        ok(&mut s, "INSERT INTO t VALUES (2, 'b')");
        assert_eq!(code(s.execute(alter, &[])), "25001", "{alter}");
        assert_eq!(s.status(), TxStatus::Failed);
        ok(&mut s, "ROLLBACK");
        assert_eq!(columns(&mut s, "t"), before, "{alter}");
        assert_eq!(rows(&mut s, "SELECT count(*) FROM t"), vec![vec![Value::Int(1)]]);
    }
    // Outside a block the same statements apply.
    ok(&mut s, "ALTER TABLE t ADD COLUMN w int");
    assert_eq!(columns(&mut s, "t"), ["id", "v", "w"]);
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
fn every_alter_of_a_table_created_before_an_open_savepoint_is_refused() {
    // ROLLBACK TO SAVEPOINT drops what the block created after the savepoint but cannot
    // restore an altered definition: it used to keep the ALTER (column b stayed after
    // `CREATE TABLE t(a int); SAVEPOINT s; ALTER TABLE t ADD COLUMN b int; ROLLBACK TO s`,
    // and the COMMIT made it durable). Each ALTER form is now 0A000 and changes nothing.
    let (dir, db) = open();
    let mut s = Session::new(db.clone());
    ok(&mut s, "BEGIN");
    ok(
        &mut s,
        "CREATE TABLE t (id int PRIMARY KEY, v text NOT NULL DEFAULT 'x', n int UNIQUE, CONSTRAINT c CHECK (id > 0))",
    );
    ok(&mut s, "INSERT INTO t VALUES (1, 'a', 10)");
    ok(&mut s, "SAVEPOINT s");
    for alter in [
        "ALTER TABLE t ADD COLUMN b int",
        "ALTER TABLE t ADD COLUMN b int DEFAULT 5",
        "ALTER TABLE t DROP COLUMN n",
        "ALTER TABLE t RENAME COLUMN v TO w",
        "ALTER TABLE t ALTER COLUMN v SET DEFAULT 'y'",
        "ALTER TABLE t ALTER COLUMN v DROP DEFAULT",
        "ALTER TABLE t ALTER COLUMN n SET NOT NULL",
        "ALTER TABLE t ALTER COLUMN v DROP NOT NULL",
        "ALTER TABLE t ALTER COLUMN n TYPE bigint",
        "ALTER TABLE t ALTER COLUMN n SET DATA TYPE numeric",
        "ALTER TABLE t RENAME TO u",
        "ALTER TABLE t ADD CONSTRAINT c2 CHECK (n > 0)",
        "ALTER TABLE t ADD CONSTRAINT v_u UNIQUE (v)",
        "ALTER TABLE t DROP CONSTRAINT c",
        "ALTER TABLE t DROP CONSTRAINT t_n_key",
        "ALTER TABLE IF EXISTS t ADD COLUMN b int",
    ] {
        assert_eq!(code(s.execute(alter, &[])), "0A000", "{alter}");
        assert_eq!(s.status(), TxStatus::Failed, "{alter}");
        ok(&mut s, "ROLLBACK TO s");
        assert_eq!(columns(&mut s, "t"), ["id", "v", "n"], "{alter}");
    }
    // A nested savepoint opened later refuses too; so does the outer one once it is the only
    // one left, until it is released.
    ok(&mut s, "SAVEPOINT s2");
    assert_eq!(code(s.execute("ALTER TABLE t ADD COLUMN b int", &[])), "0A000");
    ok(&mut s, "ROLLBACK TO s2");
    ok(&mut s, "RELEASE s2");
    assert_eq!(code(s.execute("ALTER TABLE t ADD COLUMN b int", &[])), "0A000");
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
