//! ALTER TABLE that adds a constraint while another transaction has written rows it has not
//! committed: the ALTER checks the committed rows, so the other transaction's commit checks
//! its own against the definition it commits under (`engine/txn/altered.rs`): 23502 / 23514
//! for a NOT NULL or CHECK its rows break, 40001 for a write a new foreign key governs. An
//! ALTER that adds no constraint fails nobody.

mod common;

use augur::{Session, Value};

use common::open_nosync as open;
use common::{sql_code as code, sql_ok as ok, sql_rows as rows};

/// Session a writes `write` in a block, session b runs `alter` (in a block of its own when
/// `b_block`) and commits, then a commits: returns a's COMMIT's SQLSTATE and the ids of t.
fn race(setup: &[&str], write: &str, alter: &str, b_block: bool) -> (String, Vec<Vec<Value>>) {
    let (_d, db) = open();
    let mut a = Session::new(db.clone());
    let mut b = Session::new(db.clone());
    for s in setup {
        ok(&mut a, s);
    }
    ok(&mut a, "BEGIN");
    ok(&mut a, write);
    if b_block {
        ok(&mut b, "BEGIN");
    }
    ok(&mut b, alter);
    if b_block {
        ok(&mut b, "COMMIT");
    }
    let c = code(a.execute("COMMIT", &[]));
    (c, rows(&mut b, "SELECT id FROM t ORDER BY id"))
}

const T: &str = "CREATE TABLE t (id int PRIMARY KEY, v int)";

#[test]
fn a_not_null_or_check_added_meanwhile_fails_the_commit_of_rows_that_break_it() {
    for b_block in [false, true] {
        for (write, alter, want) in [
            (
                "INSERT INTO t VALUES (1, NULL)",
                "ALTER TABLE t ALTER COLUMN v SET NOT NULL",
                "23502",
            ),
            (
                "UPDATE t SET v = NULL WHERE id = 2",
                "ALTER TABLE t ALTER COLUMN v SET NOT NULL",
                "23502",
            ),
            (
                "INSERT INTO t VALUES (1, -1)",
                "ALTER TABLE t ADD CHECK (v > 0)",
                "23514",
            ),
            (
                "UPDATE t SET v = -5 WHERE id = 2",
                "ALTER TABLE t ADD CONSTRAINT pos CHECK (v > 0)",
                "23514",
            ),
        ] {
            let (c, ids) = race(&[T, "INSERT INTO t VALUES (2, 5)"], write, alter, b_block);
            assert_eq!(c, want, "{write} / {alter} / block {b_block}");
            assert_eq!(ids, vec![vec![Value::Int(2)]]);
        }
    }
    // Rows that meet the new constraint commit.
    let (c, ids) = race(
        &[T, "INSERT INTO t VALUES (2, 5)"],
        "INSERT INTO t VALUES (1, 7)",
        "ALTER TABLE t ADD CHECK (v > 0)",
        false,
    );
    assert_eq!(c, "ok");
    assert_eq!(ids, vec![vec![Value::Int(1)], vec![Value::Int(2)]]);
}

#[test]
fn an_alter_that_adds_no_constraint_fails_no_writer() {
    for alter in [
        "ALTER TABLE t ADD COLUMN w int",
        "ALTER TABLE t ALTER COLUMN v SET DEFAULT 3",
        "ALTER TABLE t RENAME COLUMN v TO x",
        "ALTER TABLE p ADD COLUMN w int",
    ] {
        let (c, _) = race(
            &[
                T,
                "CREATE TABLE p (id int PRIMARY KEY)",
                "INSERT INTO p VALUES (1)",
            ],
            "INSERT INTO t VALUES (1, NULL)",
            alter,
            false,
        );
        assert_eq!(c, "ok", "{alter}");
    }
}

#[test]
fn a_foreign_key_added_meanwhile_fails_the_writes_it_governs_with_40001() {
    let setup = [
        "CREATE TABLE p (id int PRIMARY KEY)",
        T,
        "INSERT INTO p VALUES (1), (2)",
        "INSERT INTO t VALUES (2, 1)",
    ];
    let fk = "ALTER TABLE t ADD FOREIGN KEY (v) REFERENCES p (id)";
    // A row of the referencing table (here one with no parent).
    let (c, ids) = race(&setup, "INSERT INTO t VALUES (1, 9)", fk, false);
    assert_eq!(c, "40001");
    assert_eq!(ids, vec![vec![Value::Int(2)]]);
    // A delete of the parent a committed row references: no orphan is left.
    let (_d, db) = open();
    let mut a = Session::new(db.clone());
    let mut b = Session::new(db.clone());
    for s in setup {
        ok(&mut a, s);
    }
    ok(&mut a, "BEGIN");
    ok(&mut a, "DELETE FROM p WHERE id = 1");
    ok(&mut b, fk);
    assert_eq!(code(a.execute("COMMIT", &[])), "40001");
    assert_eq!(
        rows(&mut b, "SELECT id FROM p ORDER BY id"),
        vec![vec![Value::Int(1)], vec![Value::Int(2)]]
    );
    // Run again, the delete meets the key.
    ok(&mut a, "SET lock_timeout = '2s'");
    assert_eq!(code(a.execute("DELETE FROM p WHERE id = 1", &[])), "23503");
}

#[test]
fn a_block_that_adds_a_constraint_after_its_own_writes_commits() {
    let (_d, db) = open();
    let mut a = Session::new(db.clone());
    ok(&mut a, T);
    ok(&mut a, "CREATE TABLE p (id int PRIMARY KEY)");
    ok(&mut a, "INSERT INTO p VALUES (1)");
    ok(&mut a, "INSERT INTO t VALUES (2, 5)");
    ok(&mut a, "BEGIN");
    ok(&mut a, "INSERT INTO t VALUES (3, 1)");
    ok(&mut a, "ALTER TABLE t ALTER COLUMN v SET NOT NULL");
    ok(&mut a, "ALTER TABLE t ADD CHECK (v > 0)");
    ok(&mut a, "UPDATE t SET v = 1");
    ok(&mut a, "ALTER TABLE t ADD FOREIGN KEY (v) REFERENCES p (id)");
    ok(&mut a, "INSERT INTO t VALUES (4, 1)");
    ok(&mut a, "COMMIT");
    assert_eq!(rows(&mut a, "SELECT count(*) FROM t"), vec![vec![Value::Int(3)]]);
}
