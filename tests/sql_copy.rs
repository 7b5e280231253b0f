//! COPY ... FROM STDIN through its batch path: every rule an INSERT keeps (keys, NOT NULL,
//! CHECK, FOREIGN KEY, defaults, unique indexes, types), all or nothing, transaction
//! visibility, row locks against concurrent writers, and durability across SIGKILL.

use std::fmt::Write as _;
use std::process::Command;
use std::time::Duration;

use augur::{Database, Options, Session, StatementResult, Value};

fn open_at(dir: &std::path::Path, sync: bool) -> Database {
    Database::open(
        dir,
        Options {
            sync_commits: sync,
            ..Options::default()
        },
    )
    .unwrap()
}

fn open() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let db = open_at(dir.path(), false);
    (dir, db)
}

fn rows(s: &mut Session, sql: &str) -> Vec<Vec<Value>> {
    s.execute(sql, &[]).unwrap().pop().unwrap().rows().to_vec()
}

fn count(s: &mut Session, table: &str) -> i64 {
    match rows(s, &format!("SELECT count(*) FROM {table}"))[0][0] {
        Value::Int(n) => n,
        ref v => panic!("count is {v:?}"),
    }
}

/// Runs `COPY <target> FROM STDIN` with `data`.
fn copy(s: &mut Session, target: &str, data: &str) -> augur::Result<u64> {
    let r = s.execute(&format!("COPY {target} FROM STDIN"), &[])?;
    let Some(StatementResult::CopyIn(st)) = r.into_iter().next() else {
        panic!("COPY did not ask for data")
    };
    s.copy_in(&st, data.as_bytes())
}

/// `n` text-format lines `k\tv` from `first`.
fn lines(first: i64, n: i64) -> String {
    let mut t = String::new();
    for k in first..first + n {
        let _ = writeln!(t, "{k}\tv{k}");
    }
    t
}

fn table(s: &mut Session) {
    s.execute("CREATE TABLE t (k bigint PRIMARY KEY, v text NOT NULL)", &[])
        .unwrap();
}

#[test]
fn loads_many_batches_in_key_order_or_not() {
    let (_d, db) = open();
    let mut s = Session::new(db);
    table(&mut s);
    // More rows than one batch, keys out of order (descending halves).
    let mut data = lines(100_000, 80_000);
    data.push_str(&lines(0, 80_000));
    assert_eq!(copy(&mut s, "t", &data).unwrap(), 160_000);
    assert_eq!(count(&mut s, "t"), 160_000);
    assert_eq!(
        rows(&mut s, "SELECT v FROM t WHERE k = 179999"),
        vec![vec![Value::from("v179999")]]
    );
    // Into a table that is no longer empty.
    assert_eq!(copy(&mut s, "t", &lines(500_000, 10)).unwrap(), 10);
    assert_eq!(count(&mut s, "t"), 160_010);
}

#[test]
fn duplicate_within_the_copy_stores_nothing() {
    let (_d, db) = open();
    let mut s = Session::new(db);
    table(&mut s);
    let mut data = lines(0, 70_000);
    data.push_str("5\tagain\n");
    let e = copy(&mut s, "t", &data).unwrap_err();
    assert_eq!(e.sqlstate().code(), "23505", "{e}");
    assert_eq!(e.context(), Some("COPY t, line 70001"));
    assert_eq!(count(&mut s, "t"), 0);
    // Within one batch too, reported at the later line.
    let e = copy(&mut s, "t", "1\ta\n2\tb\n1\tc\n").unwrap_err();
    assert_eq!(e.sqlstate().code(), "23505");
    assert_eq!(e.context(), Some("COPY t, line 3"));
    assert_eq!(count(&mut s, "t"), 0);
}

#[test]
fn duplicate_of_a_stored_row_stores_nothing() {
    let (_d, db) = open();
    let mut s = Session::new(db);
    table(&mut s);
    s.execute("INSERT INTO t VALUES (7, 'old')", &[]).unwrap();
    let e = copy(&mut s, "t", &lines(0, 10)).unwrap_err();
    assert_eq!(e.sqlstate().code(), "23505");
    assert_eq!(e.context(), Some("COPY t, line 8"));
    assert_eq!(count(&mut s, "t"), 1);
    // A row deleted earlier in the same transaction frees its key.
    s.execute("BEGIN", &[]).unwrap();
    s.execute("DELETE FROM t WHERE k = 7", &[]).unwrap();
    assert_eq!(copy(&mut s, "t", &lines(0, 10)).unwrap(), 10);
    s.execute("COMMIT", &[]).unwrap();
    assert_eq!(
        rows(&mut s, "SELECT v FROM t WHERE k = 7"),
        vec![vec![Value::from("v7")]]
    );
}

#[test]
fn bad_input_names_its_line_and_column_and_stores_nothing() {
    let (_d, db) = open();
    let mut s = Session::new(db);
    s.execute("CREATE TABLE n (k int PRIMARY KEY, x int)", &[])
        .unwrap();
    let mut data = String::new();
    for k in 0..70_000 {
        let _ = writeln!(data, "{k}\t{k}");
    }
    data.push_str("70000\tseven\n");
    let e = copy(&mut s, "n", &data).unwrap_err();
    assert_eq!(e.sqlstate().code(), "22P02");
    assert_eq!(e.to_string(), "invalid input syntax for type integer: \"seven\"");
    assert_eq!(e.context(), Some("COPY n, line 70001, column x: \"seven\""));
    let e = copy(&mut s, "n", "1\t1\n2\n").unwrap_err();
    assert_eq!(e.sqlstate().code(), "22P04");
    assert_eq!(e.to_string(), "missing data for column \"x\"");
    assert_eq!(e.context(), Some("COPY n, line 2"));
    let e = copy(&mut s, "n", "1\t1\t1\n").unwrap_err();
    assert_eq!(e.to_string(), "extra data after last expected column");
    let e = copy(&mut s, "n", "1\t99999999999\n").unwrap_err();
    assert_eq!(e.sqlstate().code(), "22003");
    assert_eq!(count(&mut s, "n"), 0);
}

#[test]
fn not_null_check_and_foreign_key_are_enforced() {
    let (_d, db) = open();
    let mut s = Session::new(db);
    table(&mut s);
    let e = copy(&mut s, "t", "1\ta\n2\t\\N\n").unwrap_err();
    assert_eq!(e.sqlstate().code(), "23502");
    assert_eq!(e.context(), Some("COPY t, line 2"));

    s.execute("CREATE TABLE c (k int PRIMARY KEY, q int CHECK (q > 0))", &[])
        .unwrap();
    let e = copy(&mut s, "c", "1\t5\n2\t0\n").unwrap_err();
    assert_eq!(e.sqlstate().code(), "23514");
    assert_eq!(e.context(), Some("COPY c, line 2"));
    assert_eq!(count(&mut s, "c"), 0);

    s.execute("CREATE TABLE p (id int PRIMARY KEY)", &[]).unwrap();
    s.execute("INSERT INTO p VALUES (1), (2)", &[]).unwrap();
    s.execute("CREATE TABLE f (k int PRIMARY KEY, p int REFERENCES p (id))", &[])
        .unwrap();
    let e = copy(&mut s, "f", "1\t1\n2\t\\N\n3\t9\n4\t2\n").unwrap_err();
    assert_eq!(e.sqlstate().code(), "23503");
    assert_eq!(e.context(), Some("COPY f, line 3"));
    assert_eq!(count(&mut s, "f"), 0);
    assert_eq!(copy(&mut s, "f", "1\t1\n2\t\\N\n4\t2\n").unwrap(), 3);
    // A row may reference one that comes after it in the same COPY.
    s.execute(
        "CREATE TABLE tree (id int PRIMARY KEY, up int REFERENCES tree (id))",
        &[],
    )
    .unwrap();
    assert_eq!(copy(&mut s, "tree", "1\t2\n2\t\\N\n").unwrap(), 2);
}

#[test]
fn defaults_identity_and_serial_columns_are_filled() {
    let (_d, db) = open();
    let mut s = Session::new(db);
    s.execute(
        "CREATE TABLE d (id serial PRIMARY KEY, name text, n int DEFAULT 42, \
         g bigint GENERATED BY DEFAULT AS IDENTITY)",
        &[],
    )
    .unwrap();
    assert_eq!(copy(&mut s, "d (name)", "a\nb\n").unwrap(), 2);
    s.execute("INSERT INTO d (name) VALUES ('c')", &[]).unwrap();
    assert_eq!(
        rows(&mut s, "SELECT id, name, n, g FROM d ORDER BY id"),
        vec![
            vec![Value::Int(1), Value::from("a"), Value::Int(42), Value::Int(1)],
            vec![Value::Int(2), Value::from("b"), Value::Int(42), Value::Int(2)],
            vec![Value::Int(3), Value::from("c"), Value::Int(42), Value::Int(3)],
        ]
    );
    // A table without a primary key: each row its own hidden identity.
    s.execute("CREATE TABLE h (a int, b text)", &[]).unwrap();
    assert_eq!(copy(&mut s, "h", "1\tx\n1\tx\n\\N\t\\N\n").unwrap(), 3);
    assert_eq!(count(&mut s, "h"), 3);
}

#[test]
fn unique_and_plain_secondary_indexes() {
    let (_d, db) = open();
    let mut s = Session::new(db);
    s.execute("CREATE TABLE u (k int PRIMARY KEY, e text UNIQUE, g int)", &[])
        .unwrap();
    s.execute("CREATE INDEX u_g ON u (g)", &[]).unwrap();
    s.execute("INSERT INTO u VALUES (100, 'taken', 1)", &[]).unwrap();
    let e = copy(&mut s, "u", "1\ta\t1\n2\ta\t1\n").unwrap_err();
    assert_eq!(e.sqlstate().code(), "23505");
    assert_eq!(e.context(), Some("COPY u, line 2"));
    let e = copy(&mut s, "u", "1\ta\t1\n2\ttaken\t1\n").unwrap_err();
    assert_eq!(e.sqlstate().code(), "23505");
    assert_eq!(count(&mut s, "u"), 1);
    assert_eq!(
        copy(&mut s, "u", "1\ta\t1\n2\tb\t2\n3\t\\N\t1\n4\t\\N\t1\n").unwrap(),
        4
    );
    assert_eq!(
        rows(&mut s, "SELECT k FROM u WHERE g = 1 ORDER BY k"),
        vec![
            vec![Value::Int(1)],
            vec![Value::Int(3)],
            vec![Value::Int(4)],
            vec![Value::Int(100)]
        ]
    );
    assert_eq!(
        rows(&mut s, "SELECT k FROM u WHERE e = 'b'"),
        vec![vec![Value::Int(2)]]
    ); // Batches after the first in one transaction check against the rows the earlier ones
       // wrote; a value freed by this transaction may be taken again.
    s.execute("BEGIN", &[]).unwrap();
    let mut data = String::new();
    for k in 1000..71_000 {
        let _ = writeln!(data, "{k}\te{k}\t0");
    }
    assert_eq!(copy(&mut s, "u", &data).unwrap(), 70_000);
    s.execute("UPDATE u SET e = 'free' WHERE k = 2", &[]).unwrap();
    assert_eq!(copy(&mut s, "u", "5\tb\t0\n").unwrap(), 1);
    s.execute("SAVEPOINT s", &[]).unwrap();
    let e = copy(&mut s, "u", "6\tx\t0\n7\te1500\t0\n").unwrap_err();
    assert_eq!(e.sqlstate().code(), "23505");
    s.execute("ROLLBACK TO SAVEPOINT s", &[]).unwrap();
    s.execute("COMMIT", &[]).unwrap();
    assert_eq!(count(&mut s, "u"), 70_006);
}

#[test]
fn copy_in_a_transaction_is_seen_by_it_alone_and_rolls_back() {
    let (_d, db) = open();
    let mut s = Session::new(db.clone());
    let mut other = Session::new(db);
    table(&mut s);
    s.execute("BEGIN", &[]).unwrap();
    assert_eq!(copy(&mut s, "t", &lines(0, 60_000)).unwrap(), 60_000);
    assert_eq!(copy(&mut s, "t", &lines(60_000, 10)).unwrap(), 10);
    // Its own reads see the rows, point and range; another session does not.
    assert_eq!(count(&mut s, "t"), 60_010);
    assert_eq!(
        rows(&mut s, "SELECT v FROM t WHERE k = 60005"),
        vec![vec![Value::from("v60005")]]
    );
    assert_eq!(count(&mut other, "t"), 0);
    // The same transaction may change what it copied.
    s.execute("UPDATE t SET v = 'changed' WHERE k = 3", &[]).unwrap();
    s.execute("ROLLBACK", &[]).unwrap();
    assert_eq!(count(&mut s, "t"), 0);
    assert_eq!(count(&mut other, "t"), 0);

    s.execute("BEGIN", &[]).unwrap();
    copy(&mut s, "t", &lines(0, 5)).unwrap();
    s.execute("SAVEPOINT a", &[]).unwrap();
    copy(&mut s, "t", &lines(5, 5)).unwrap();
    s.execute("ROLLBACK TO SAVEPOINT a", &[]).unwrap();
    s.execute("COMMIT", &[]).unwrap();
    assert_eq!(count(&mut other, "t"), 5);

    // A failed COPY aborts the transaction block, as in PostgreSQL.
    s.execute("BEGIN", &[]).unwrap();
    copy(&mut s, "t", &lines(100, 5)).unwrap();
    assert!(copy(&mut s, "t", "1\tdup\n").is_err());
    assert_eq!(s.execute("SELECT 1", &[]).unwrap_err().sqlstate().code(), "25P02");
    s.execute("ROLLBACK", &[]).unwrap();
    assert_eq!(count(&mut other, "t"), 5);
}

#[test]
fn a_concurrent_uncommitted_insert_of_a_key_makes_copy_wait() {
    let (_d, db) = open();
    let mut a = Session::new(db.clone());
    table(&mut a);
    a.execute("BEGIN", &[]).unwrap();
    a.execute("INSERT INTO t VALUES (3, 'a')", &[]).unwrap();
    let db2 = db.clone();
    let b = std::thread::spawn(move || {
        let mut b = Session::new(db2);
        copy(&mut b, "t", &lines(0, 10)).map_err(|e| e.sqlstate().code().to_string())
    });
    std::thread::sleep(Duration::from_millis(300));
    assert!(!b.is_finished(), "COPY did not wait for the row lock");
    a.execute("COMMIT", &[]).unwrap();
    assert_eq!(b.join().unwrap(), Err("23505".to_string()));
    assert_eq!(count(&mut a, "t"), 1);

    // And the other way round: a writer of a key the COPY holds waits for it.
    a.execute("BEGIN", &[]).unwrap();
    copy(&mut a, "t", &lines(10, 10)).unwrap();
    let db3 = db.clone();
    let c = std::thread::spawn(move || {
        let mut c = Session::new(db3);
        c.execute("INSERT INTO t VALUES (15, 'c')", &[])
            .map(|_| ())
            .map_err(|e| e.sqlstate().code().to_string())
    });
    std::thread::sleep(Duration::from_millis(300));
    assert!(!c.is_finished(), "INSERT did not wait for the COPY's row lock");
    a.execute("ROLLBACK", &[]).unwrap();
    assert_eq!(c.join().unwrap(), Ok(()));
    assert_eq!(count(&mut a, "t"), 2);
}

const CHILD: &str = "AUGUR_COPY_CRASH_CHILD";

/// The child: acknowledged COPYs (one large enough to be committed as an ingested file, one
/// small), each reported once it returned, then an unacknowledged one cut by SIGKILL.
fn crash_child(dir: &std::path::Path) {
    let db = open_at(dir, true);
    let mut s = Session::new(db);
    table(&mut s);
    copy(&mut s, "t", &lines(0, 120_000)).unwrap();
    println!("ACKED 120000");
    copy(&mut s, "t", &lines(120_000, 7)).unwrap();
    println!("ACKED 7");
    s.execute("BEGIN", &[]).unwrap();
    copy(&mut s, "t", &lines(200_000, 1000)).unwrap();
    // SAFETY: kill(2) on this process; nothing runs after it.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
}

#[test]
fn acknowledged_copy_survives_sigkill() {
    if let Ok(d) = std::env::var(CHILD) {
        crash_child(std::path::Path::new(&d));
        return;
    }
    use std::os::unix::process::ExitStatusExt;
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "acknowledged_copy_survives_sigkill",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, tmp.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("ACKED 7"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.signal(), Some(libc::SIGKILL));
    let db = open_at(tmp.path(), true);
    let mut s = Session::new(db.clone());
    assert_eq!(count(&mut s, "t"), 120_007);
    assert_eq!(
        rows(&mut s, "SELECT v FROM t WHERE k = 119999"),
        vec![vec![Value::from("v119999")]]
    );
    assert_eq!(
        rows(&mut s, "SELECT v FROM t WHERE k = 120006"),
        vec![vec![Value::from("v120006")]]
    );
    assert!(rows(&mut s, "SELECT v FROM t WHERE k = 200000").is_empty());
    db.verify_integrity().unwrap();
}
