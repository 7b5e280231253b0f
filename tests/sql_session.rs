//! Session behaviour the SQL logic corpus does not cover: failed transaction blocks (25P02),
//! statement atomicity, prepared statements and Describe, parameters, COPY, SET/SHOW, EXPLAIN,
//! and inputs that must not panic.

mod common;

use augur::{DataType, Database, Session, StatementResult, TxStatus, Value};

use common::open_nosync as open;

fn code(r: augur::Result<Vec<StatementResult>>) -> String {
    r.map(|_| "ok".to_string())
        .unwrap_or_else(|e| e.sqlstate().code().to_string())
}

fn rows(s: &mut Session, sql: &str) -> Vec<Vec<Value>> {
    s.execute(sql, &[]).unwrap().pop().unwrap().rows().to_vec()
}

#[test]
fn failed_block_until_rollback() {
    let (_d, db) = open();
    let mut s = Session::new(db);
    s.execute("CREATE TABLE t (id int PRIMARY KEY, v int)", &[])
        .unwrap();
    s.execute("INSERT INTO t VALUES (1, 1)", &[]).unwrap();
    assert_eq!(s.status(), TxStatus::Idle);
    s.execute("BEGIN", &[]).unwrap();
    assert_eq!(s.status(), TxStatus::InTransaction);
    s.execute("INSERT INTO t VALUES (2, 2)", &[]).unwrap();
    assert_eq!(code(s.execute("INSERT INTO t VALUES (1, 9)", &[])), "23505");
    assert_eq!(s.status(), TxStatus::Failed);
    assert_eq!(code(s.execute("SELECT 1", &[])), "25P02");
    // COMMIT of a failed block rolls back.
    let r = s.execute("COMMIT", &[]).unwrap();
    assert_eq!(r[0].tag(), "ROLLBACK");
    assert_eq!(s.status(), TxStatus::Idle);
    assert_eq!(rows(&mut s, "SELECT count(*) FROM t"), vec![vec![Value::Int(1)]]);
    // Syntax errors also fail the block.
    s.execute("BEGIN", &[]).unwrap();
    assert_eq!(code(s.execute("SELEC 1", &[])), "42601");
    assert_eq!(s.status(), TxStatus::Failed);
    s.execute("ROLLBACK", &[]).unwrap();
    assert_eq!(s.status(), TxStatus::Idle);
}

#[test]
fn failing_statement_leaves_no_partial_writes() {
    let (_d, db) = open();
    let mut s = Session::new(db.clone());
    s.execute("CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL)", &[])
        .unwrap();
    s.execute("INSERT INTO t VALUES (1, 1), (5, 5)", &[]).unwrap();
    assert_eq!(
        code(s.execute("INSERT INTO t VALUES (2, 2), (3, 3), (5, 5)", &[])),
        "23505"
    );
    assert_eq!(code(s.execute("UPDATE t SET v = v + 2147483647", &[])), "22003");
    assert_eq!(
        rows(&mut s, "SELECT id, v FROM t ORDER BY id"),
        vec![
            vec![Value::Int(1), Value::Int(1)],
            vec![Value::Int(5), Value::Int(5)]
        ]
    );
    // Keys can be shifted in one statement.
    s.execute("UPDATE t SET id = id + 1", &[]).unwrap();
    assert_eq!(
        rows(&mut s, "SELECT id FROM t ORDER BY id"),
        vec![vec![Value::Int(2)], vec![Value::Int(6)]]
    );
}

#[test]
fn prepared_statements_and_describe() {
    let (_d, db) = open();
    let mut s = Session::new(db);
    s.execute(
        "CREATE TABLE acc (aid int PRIMARY KEY, bid int, abalance int, filler text)",
        &[],
    )
    .unwrap();
    s.execute("INSERT INTO acc VALUES (1, 1, 0, 'x'), (2, 1, 10, 'y')", &[])
        .unwrap();
    let (params, cols) = s
        .describe("SELECT abalance, filler FROM acc WHERE aid = $1")
        .unwrap();
    assert_eq!(params, vec![DataType::Int4]);
    assert_eq!(
        cols,
        vec![
            ("abalance".into(), DataType::Int4),
            ("filler".into(), DataType::Text(None))
        ]
    );
    let upd = s
        .prepare("UPDATE acc SET abalance = abalance + $1 WHERE aid = $2")
        .unwrap();
    assert_eq!(upd.param_types, vec![DataType::Int4, DataType::Int4]);
    let sel = s.prepare("SELECT abalance FROM acc WHERE aid = $1").unwrap();
    for _ in 0..3 {
        let r = s.execute_prepared(&upd, &[Value::Int(5), Value::Int(2)]).unwrap();
        assert_eq!(r.tag(), "UPDATE 1");
    }
    // Text parameters (the wire's text format) are converted to the inferred type.
    let r = s.execute_prepared(&sel, &[Value::Text("2".into())]).unwrap();
    assert_eq!(r.rows(), &[vec![Value::Int(25)]]);
    assert_eq!(
        s.execute_prepared(&sel, &[Value::Text("x".into())])
            .unwrap_err()
            .sqlstate()
            .code(),
        "22P02"
    );
    // A prepared statement survives DDL on its table (it is replanned).
    s.execute("CREATE INDEX acc_bid ON acc (bid)", &[]).unwrap();
    s.execute("TRUNCATE acc", &[]).unwrap();
    s.execute("INSERT INTO acc VALUES (2, 1, 7, 'z')", &[]).unwrap();
    let r = s.execute_prepared(&sel, &[Value::Int(2)]).unwrap();
    assert_eq!(r.rows(), &[vec![Value::Int(7)]]);
    let ins = s
        .prepare("INSERT INTO acc VALUES ($1, $2, $3, $4) RETURNING aid")
        .unwrap();
    assert_eq!(ins.columns, vec![("aid".into(), DataType::Int4)]);
    let r = s
        .execute_prepared(&ins, &[Value::Int(9), Value::Int(1), Value::Int(0), Value::Null])
        .unwrap();
    assert_eq!(r.rows(), &[vec![Value::Int(9)]]);
    assert_eq!(
        s.execute_prepared(&sel, &[]).unwrap_err().sqlstate().code(),
        "08P01"
    );
}

#[test]
fn copy_text_and_csv() {
    let (_d, db) = open();
    let mut s = Session::new(db);
    s.execute(
        "CREATE TABLE c (id int PRIMARY KEY, name text, score float8 DEFAULT 1.5)",
        &[],
    )
    .unwrap();
    let r = s.execute("COPY c FROM STDIN", &[]).unwrap();
    let StatementResult::CopyIn(st) = &r[0] else {
        panic!("expected CopyIn")
    };
    let n = s
        .copy_in(st, b"1\talpha\t2.5\n2\t\\N\t3\n3\ttab\\there\t\\N\n\\.\n")
        .unwrap();
    assert_eq!(n, 3);
    let r = s
        .execute("COPY c (id, name) FROM STDIN WITH (FORMAT csv, HEADER true)", &[])
        .unwrap();
    let StatementResult::CopyIn(st) = &r[0] else {
        panic!("expected CopyIn")
    };
    let n = s.copy_in(st, b"id,name\n4,\"x, \"\"quoted\"\"\"\n5,\n").unwrap();
    assert_eq!(n, 2);
    let got = rows(&mut s, "SELECT id, name, score FROM c ORDER BY id");
    assert_eq!(got[1], vec![Value::Int(2), Value::Null, Value::Float(3.0)]);
    assert_eq!(got[2][1], Value::from("tab\there"));
    assert_eq!(
        got[3],
        vec![Value::Int(4), Value::from("x, \"quoted\""), Value::Float(1.5)]
    );
    assert_eq!(got[4][1], Value::Null);
    let r = s.execute("COPY c FROM STDIN", &[]).unwrap();
    let StatementResult::CopyIn(st) = &r[0] else {
        panic!()
    };
    assert_eq!(
        s.copy_in(st, b"9\tbad\tnotanumber\n")
            .unwrap_err()
            .sqlstate()
            .code(),
        "22P02"
    );
    assert_eq!(
        s.copy_in(st, b"9\ttoo few\n").unwrap_err().sqlstate().code(),
        "22P04"
    );
}

#[test]
fn copy_to_stdout_in_the_embedded_api() {
    let (_d, db) = open();
    let mut s = Session::new(db);
    s.execute("CREATE TABLE co (id int PRIMARY KEY, name text)", &[])
        .unwrap();
    s.execute("INSERT INTO co VALUES (1, 'a,b'), (2, NULL)", &[])
        .unwrap();
    let r = s
        .execute("COPY co TO STDOUT WITH (FORMAT csv, HEADER)", &[])
        .unwrap();
    let StatementResult::CopyOut { tag, data, .. } = &r[0] else {
        panic!("expected CopyOut")
    };
    assert_eq!(tag, "COPY 2");
    assert_eq!(data.concat(), b"id,name\n1,\"a,b\"\n2,\n");
    // In a transaction block, COPY TO reads the block's own writes.
    s.execute("BEGIN; INSERT INTO co VALUES (3, 'new')", &[]).unwrap();
    let r = s
        .execute(
            "COPY (SELECT name FROM co WHERE id >= 2 ORDER BY id) TO STDOUT",
            &[],
        )
        .unwrap();
    let StatementResult::CopyOut { tag, data, .. } = &r[0] else {
        panic!("expected CopyOut")
    };
    assert_eq!((tag.as_str(), data.concat()), ("COPY 2", b"\\N\nnew\n".to_vec()));
    s.execute("ROLLBACK", &[]).unwrap();
    let err = |s: &mut Session, sql: &str| s.execute(sql, &[]).unwrap_err().sqlstate().code();
    // A table and columns named by keywords: the query COPY runs quotes them.
    s.execute(
        "CREATE TABLE \"order\" (id int PRIMARY KEY, \"user\" text); INSERT INTO \"order\" VALUES (1, 'u')",
        &[],
    )
    .unwrap();
    let r = s.execute("COPY \"order\" (id, \"user\") TO STDOUT", &[]).unwrap();
    let StatementResult::CopyOut { data, .. } = &r[0] else {
        panic!("expected CopyOut")
    };
    assert_eq!(data.concat(), b"1\tu\n");
    assert_eq!(err(&mut s, "COPY co TO '/tmp/co.txt'"), "0A000");
    assert_eq!(err(&mut s, "COPY nosuch TO STDOUT"), "42P01");
    assert_eq!(err(&mut s, "COPY co (nosuch) TO STDOUT"), "42703");
    assert_eq!(
        err(
            &mut s,
            "COPY co TO STDOUT WITH (FORMAT csv, FORCE_QUOTE (nosuch))"
        ),
        "42703"
    );
}

#[test]
fn settings_and_driver_queries() {
    let (_d, db) = open();
    let mut s = Session::new(db);
    // Negating a float constant keeps the sign of zero, as PostgreSQL prints -0.
    for q in ["SELECT -(0::float8)", "SELECT -0.0::float8"] {
        match &rows(&mut s, q)[0][0] {
            Value::Float(f) => assert!(*f == 0.0 && f.is_sign_negative(), "{q}: {f}"),
            v => panic!("{q}: {v:?}"),
        }
    }
    s.execute("SET application_name = 'pgbench'", &[]).unwrap();
    s.execute(
        "SET extra_float_digits = 3; SET DateStyle = 'ISO'; SET TIME ZONE 'UTC'",
        &[],
    )
    .unwrap();
    assert_eq!(
        rows(&mut s, "SHOW application_name"),
        vec![vec![Value::from("pgbench")]]
    );
    assert_eq!(rows(&mut s, "SHOW datestyle"), vec![vec![Value::from("ISO")]]);
    assert_eq!(rows(&mut s, "SHOW transaction isolation level").len(), 1);
    s.execute("SET synchronous_commit = off", &[]).unwrap();
    assert_eq!(s.setting("synchronous_commit"), Some("off"));
    assert_eq!(code(s.execute("SHOW nosuchsetting", &[])), "42704");
    let v = rows(&mut s, "SELECT version(), current_database(), current_schema()");
    assert!(matches!(&v[0][0], Value::Text(t) if t.starts_with("PostgreSQL")));
    for q in ["VACUUM", "vacuum pgbench_branches", "ANALYZE", "CHECKPOINT"] {
        s.execute(q, &[]).unwrap();
    }
}

#[test]
fn errors_not_panics() {
    let (_d, db) = open();
    let mut s = Session::new(db);
    s.execute("CREATE TABLE t (id int PRIMARY KEY, a text, b float8)", &[])
        .unwrap();
    s.execute("INSERT INTO t VALUES (1, 'x', 1.5)", &[]).unwrap();
    let cases = [
        ("SELECT * FROM t UNION SELECT * FROM t", "ok"),
        ("SELECT * FROM t UNION SELECT id FROM t", "42601"),
        ("SELECT a FROM t UNION SELECT id FROM t", "42804"),
        ("WITH x AS (SELECT 1) SELECT * FROM x", "ok"),
        ("WITH RECURSIVE x (n) AS (SELECT 1 UNION SELECT n FROM x) SELECT * FROM x", "ok"),
        ("SELECT * FROM t a FULL JOIN t b ON a.id = b.id", "ok"),
        ("SELECT * FROM t a, LATERAL (SELECT a.id) s", "ok"),
        ("SELECT id FROM t WHERE row_number() OVER () > 1", "42P20"),
        ("SELECT (SELECT id FROM t UNION ALL SELECT id FROM t)", "21000"),
        ("CREATE TABLE u (d daterange)", "42704"),
        ("CREATE TABLE u (d nosuchtype)", "42704"),
        ("SELECT $3", "08P01"),
        ("SELECT 'a' LIKE 'a' ESCAPE 'ab'", "22019"),
        ("SELECT (((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1)))))))))))))))))))))))))))))))))))))))))))))))))))))))))))", "42601"),
        ("SELECT * FROM t WHERE id = 99999999999999999999999", "ok"),
        ("SELECT * FROM t WHERE id > 1e300", "ok"),
        ("SELECT * FROM t WHERE id IN (1.5, NULL)", "ok"),
        ("SELECT -9223372036854775808 / -1", "22003"),
        ("SELECT id FROM t ORDER BY 0", "42P10"),
        ("INSERT INTO t SELECT 2, 'y'", "ok"),
        ("SELECT * FROM t t1, t t2 WHERE t1.id = t2.id", "ok"),
        ("SELECT count(*) FROM t GROUP BY a HAVING b > 1", "42803"),
        ("", "ok"),
        (";;", "ok"),
        ("DELETE t", "42601"),
    ];
    for (sql, want) in cases {
        let got = code(s.execute(sql, &[]));
        assert_eq!(got, want, "{sql}");
    }
}

#[test]
fn explain_names_the_access_path() {
    let (_d, db) = open();
    db.execute("CREATE TABLE k (id bigint PRIMARY KEY, s text)", &[])
        .unwrap();
    db.execute("CREATE TABLE f (s text PRIMARY KEY, n int)", &[])
        .unwrap();
    let plan = |sql: &str| -> String {
        db.query(sql, &[])
            .unwrap()
            .into_iter()
            .map(|r| r[0].to_string())
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(plan("EXPLAIN SELECT s FROM k WHERE id = 5").contains("ALEX point lookup"));
    assert!(plan("EXPLAIN SELECT s FROM k WHERE id BETWEEN 1 AND 9").contains("ALEX range scan"));
    assert!(plan("EXPLAIN SELECT n FROM f WHERE s = 'a'").contains("ordered index (fallback) point lookup"));
    assert!(plan("EXPLAIN SELECT id FROM k WHERE s = 'a'").contains("full scan"));
}

/// Two sessions writing one row, as pgbench's TPC-B does with its branch row: under READ
/// COMMITTED (the default) the second UPDATE waits for the first transaction, then applies to
/// the row's newest version (re-checking WHERE); under REPEATABLE READ it fails with 40001.
#[test]
fn concurrent_writers_wait_for_row_locks() {
    let (_d, db) = open();
    let mut a = Session::new(db.clone());
    a.execute("CREATE TABLE t (id int PRIMARY KEY, v int)", &[])
        .unwrap();
    a.execute("INSERT INTO t VALUES (1, 5), (2, 0)", &[]).unwrap();
    let run_b = |sql: &'static str, db: &Database| {
        let mut b = Session::new(db.clone());
        std::thread::spawn(move || {
            let r = b.execute(sql, &[]).map(|mut v| v.pop().unwrap().count());
            (r.map_err(|e| e.sqlstate().code().to_string()), b)
        })
    };
    let wait = || std::thread::sleep(std::time::Duration::from_millis(60));

    // READ COMMITTED: B's increment waits for A's, then adds to A's result.
    a.execute("BEGIN", &[]).unwrap();
    a.execute("UPDATE t SET v = v + 1 WHERE id = 1", &[]).unwrap();
    let b = run_b("UPDATE t SET v = v + 10 WHERE id = 1", &db);
    wait();
    assert!(!b.is_finished(), "B must wait for A's row lock");
    a.execute("COMMIT", &[]).unwrap();
    assert_eq!(b.join().unwrap().0, Ok(1));
    assert_eq!(
        rows(&mut a, "SELECT v FROM t WHERE id = 1"),
        vec![vec![Value::Int(16)]]
    );

    // The re-check: once A commits, the row no longer satisfies B's WHERE; B updates nothing.
    a.execute("BEGIN", &[]).unwrap();
    a.execute("UPDATE t SET v = 100 WHERE id = 1", &[]).unwrap();
    let b = run_b("UPDATE t SET v = -1 WHERE id = 1 AND v = 16", &db);
    wait();
    a.execute("COMMIT", &[]).unwrap();
    assert_eq!(b.join().unwrap().0, Ok(0));
    // A delete that waits for a deleter deletes nothing.
    a.execute("BEGIN", &[]).unwrap();
    a.execute("DELETE FROM t WHERE id = 2", &[]).unwrap();
    let b = run_b("DELETE FROM t WHERE id = 2", &db);
    wait();
    a.execute("COMMIT", &[]).unwrap();
    assert_eq!(b.join().unwrap().0, Ok(0));
    assert_eq!(
        rows(&mut a, "SELECT id, v FROM t"),
        vec![vec![Value::Int(1), Value::Int(100)]]
    );

    // Each statement of a READ COMMITTED block sees what committed before it.
    let mut c = Session::new(db.clone());
    c.execute("BEGIN", &[]).unwrap();
    assert_eq!(
        rows(&mut c, "SELECT v FROM t WHERE id = 1"),
        vec![vec![Value::Int(100)]]
    );
    a.execute("UPDATE t SET v = 101 WHERE id = 1", &[]).unwrap();
    assert_eq!(
        rows(&mut c, "SELECT v FROM t WHERE id = 1"),
        vec![vec![Value::Int(101)]]
    );
    c.execute("COMMIT", &[]).unwrap();

    // REPEATABLE READ: one snapshot per block; the waiter fails with 40001 after A commits.
    c.execute("BEGIN ISOLATION LEVEL REPEATABLE READ", &[]).unwrap();
    assert_eq!(
        rows(&mut c, "SHOW transaction_isolation"),
        vec![vec![Value::Text("repeatable read".into())]]
    );
    assert_eq!(
        rows(&mut c, "SELECT v FROM t WHERE id = 1"),
        vec![vec![Value::Int(101)]]
    );
    a.execute("BEGIN", &[]).unwrap();
    a.execute("UPDATE t SET v = 200 WHERE id = 1", &[]).unwrap();
    assert_eq!(
        rows(&mut c, "SELECT v FROM t WHERE id = 1"),
        vec![vec![Value::Int(101)]]
    );
    let c2 = std::thread::spawn(move || {
        let r = code(c.execute("UPDATE t SET v = v + 1 WHERE id = 1", &[]));
        (r, c)
    });
    wait();
    a.execute("COMMIT", &[]).unwrap();
    let (r, mut c) = c2.join().unwrap();
    assert_eq!(r, "40001");
    assert_eq!(c.status(), TxStatus::Failed);
    c.execute("ROLLBACK", &[]).unwrap();

    // lock_timeout bounds the wait (55P03); the holder is unaffected.
    a.execute("BEGIN", &[]).unwrap();
    a.execute("UPDATE t SET v = 300 WHERE id = 1", &[]).unwrap();
    c.execute("SET lock_timeout = '50ms'", &[]).unwrap();
    assert_eq!(code(c.execute("UPDATE t SET v = 0 WHERE id = 1", &[])), "55P03");
    assert_eq!(code(c.execute("SET lock_timeout = 'soon'", &[])), "22023");
    // statement_timeout also ends a lock wait (57014), whichever comes first.
    c.execute("SET lock_timeout = 0", &[]).unwrap();
    c.execute("SET statement_timeout = '50ms'", &[]).unwrap();
    assert_eq!(code(c.execute("UPDATE t SET v = 0 WHERE id = 1", &[])), "57014");
    c.execute("SET statement_timeout = 0", &[]).unwrap();
    a.execute("COMMIT", &[]).unwrap();
    assert_eq!(
        rows(&mut c, "SELECT v FROM t WHERE id = 1"),
        vec![vec![Value::Int(300)]]
    );
    assert_eq!(db.stats().row_locks_held, 0);
    c.execute(
        "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL REPEATABLE READ",
        &[],
    )
    .unwrap();
    assert_eq!(
        rows(&mut c, "SHOW transaction_isolation"),
        vec![vec![Value::Text("repeatable read".into())]]
    );
    c.execute("SET default_transaction_isolation = 'read committed'", &[])
        .unwrap();
    assert_eq!(
        rows(&mut c, "SHOW transaction_isolation"),
        vec![vec![Value::Text("read committed".into())]]
    );
    assert_eq!(
        code(c.execute("SET default_transaction_isolation = 'chaos'", &[])),
        "22023"
    );
}

/// `count(*)` (counted from the primary index without reading rows) against the rows a scan of
/// the same snapshot returns: after concurrent deletes, updates and inserts, inside a
/// transaction with its own writes, over key ranges, for an ALEX and a B-tree primary key.
#[test]
fn count_star_counts_what_a_scan_of_the_snapshot_sees() {
    let (_d, db) = open();
    let mut a = Session::new(db.clone());
    let mut b = Session::new(db.clone());
    a.execute(
        "CREATE TABLE t (id bigint PRIMARY KEY, v int); CREATE TABLE u (k text PRIMARY KEY, v int)",
        &[],
    )
    .unwrap();
    for i in 1..=100 {
        a.execute(
            &format!("INSERT INTO t VALUES ({i}, {i}); INSERT INTO u VALUES ('k{i:03}', {i})"),
            &[],
        )
        .unwrap();
    }
    // Each count(*) equals the number of rows the same statement shape scans.
    let check = |s: &mut Session, want: i64| {
        for (table, key, range) in [
            ("t", "id", "id >= 5 AND id < 50"),
            ("t", "id", "id > 95"),
            ("u", "k", "k >= 'k010' AND k < 'k0200'"),
        ] {
            let all = rows(s, &format!("SELECT {key} FROM {table}")).len() as i64;
            assert_eq!(
                rows(s, &format!("SELECT count(*) FROM {table}")),
                vec![vec![Value::Int(all)]]
            );
            if table == "t" {
                assert_eq!(all, want, "rows of t");
            }
            let n = rows(s, &format!("SELECT {key} FROM {table} WHERE {range}")).len() as i64;
            assert_eq!(
                rows(s, &format!("SELECT count(*) FROM {table} WHERE {range}")),
                vec![vec![Value::Int(n)]],
                "{table} WHERE {range}"
            );
            // With a residual filter the rows are read; the two paths agree.
            let f = rows(
                s,
                &format!("SELECT {key} FROM {table} WHERE {range} AND v % 2 = 0"),
            )
            .len() as i64;
            assert_eq!(
                rows(
                    s,
                    &format!("SELECT count(*) FROM {table} WHERE {range} AND v % 2 = 0")
                ),
                vec![vec![Value::Int(f)]]
            );
        }
    };
    check(&mut a, 100);
    a.execute("BEGIN ISOLATION LEVEL REPEATABLE READ", &[]).unwrap();
    check(&mut a, 100); // takes the snapshot
    b.execute(
        "DELETE FROM t WHERE id <= 10; UPDATE t SET v = v + 1 WHERE id > 10 AND id <= 20; \
         INSERT INTO t VALUES (111, 1), (112, 2), (113, 3), (114, 4), (115, 5); \
         DELETE FROM u WHERE k < 'k020'; INSERT INTO u VALUES ('k500', 5)",
        &[],
    )
    .unwrap();
    check(&mut b, 95); // 100 - 10 + 5
    check(&mut a, 100); // the snapshot still sees the 100 original rows
                        // Own writes: two inserts, one delete of a row the snapshot sees, one update.
    a.execute(
        "INSERT INTO t VALUES (300, 1), (301, 2); DELETE FROM t WHERE id = 50; \
         UPDATE t SET v = 0 WHERE id = 60; INSERT INTO u VALUES ('k600', 6); \
         DELETE FROM u WHERE k = 'k050'",
        &[],
    )
    .unwrap();
    check(&mut a, 101);
    a.execute("COMMIT", &[]).unwrap();
    db.collect_garbage().unwrap();
    check(&mut a, 96);
    check(&mut b, 96);
    assert_eq!(
        rows(&mut a, "SELECT count(*) FROM t WHERE id > 1000"),
        vec![vec![Value::Int(0)]]
    );
    assert_eq!(
        rows(&mut a, "SELECT count(*) FROM t WHERE id > 5 AND id < 3"),
        vec![vec![Value::Int(0)]]
    );
}

/// Maintenance commands (accepted as no-ops) anywhere in a multi-statement string: every other
/// statement runs, in order. `VACUUM; INSERT ...` used to return VACUUM and skip the INSERT.
#[test]
fn maintenance_commands_do_not_swallow_the_statements_around_them() {
    let (_d, db) = open();
    let mut s = Session::new(db);
    s.execute("CREATE TABLE t (id int PRIMARY KEY)", &[]).unwrap();
    let tags = |r: Vec<StatementResult>| r.iter().map(|r| r.tag().to_string()).collect::<Vec<_>>();
    let r = s.execute("VACUUM; INSERT INTO t VALUES (1)", &[]).unwrap();
    assert_eq!(tags(r), ["VACUUM", "INSERT 0 1"]);
    let r = s
        .execute(
            "INSERT INTO t VALUES (2); analyse t; /* c; */ CHECKPOINT ;INSERT INTO t VALUES (3); vacuum",
            &[],
        )
        .unwrap();
    assert_eq!(
        tags(r),
        ["INSERT 0 1", "ANALYZE", "CHECKPOINT", "INSERT 0 1", "VACUUM"]
    );
    assert_eq!(
        rows(&mut s, "SELECT id FROM t ORDER BY id"),
        vec![vec![Value::Int(1)], vec![Value::Int(2)], vec![Value::Int(3)]]
    );
    // Still parsed as a whole first: a syntax error anywhere runs nothing.
    assert_eq!(
        code(s.execute("VACUUM; INSERT INTO t VALUES (4); SELEC 1", &[])),
        "42601"
    );
    assert_eq!(rows(&mut s, "SELECT count(*) FROM t"), vec![vec![Value::Int(3)]]);
    // A word that only starts like one is no maintenance command.
    assert_eq!(code(s.execute("vacuumx", &[])), "42601");
    assert!(s.check_syntax("VACUUM; SELECT 1").is_ok());
    assert_eq!(
        s.check_syntax("VACUUM; SELEC 1").unwrap_err().sqlstate().code(),
        "42601"
    );
}

/// Catalog relations are read-only (42501), and a prepared statement over them sees the DDL of
/// other sessions done since it was prepared (their rows are built when a statement is planned,
/// and such a statement is planned for every run).
#[test]
fn catalog_relations_are_current_and_read_only() {
    let (_d, db) = open();
    let mut s = Session::new(db.clone());
    let mut other = Session::new(db);
    let names = s
        .prepare("SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1")
        .unwrap();
    let run = |s: &mut Session| -> Vec<Vec<Value>> {
        s.execute_prepared(&names, &[Value::Text("public".into())])
            .unwrap()
            .rows()
            .to_vec()
    };
    assert!(run(&mut s).is_empty());
    other
        .execute("CREATE TABLE t1 (id int PRIMARY KEY)", &[])
        .unwrap();
    assert_eq!(run(&mut s), vec![vec![Value::Text("t1".into())]]);
    other.execute("DROP TABLE t1", &[]).unwrap();
    assert!(run(&mut s).is_empty());
    for sql in [
        "INSERT INTO pg_class (relname) VALUES ('x')",
        "UPDATE pg_catalog.pg_attribute SET attname = 'x'",
        "DELETE FROM information_schema.tables",
    ] {
        assert_eq!(code(s.execute(sql, &[])), "42501", "{sql}");
    }
    s.execute("CREATE TABLE t2 (id int PRIMARY KEY, v text)", &[])
        .unwrap();
    let r = rows(
        &mut s,
        "WITH c AS (SELECT relname FROM pg_class WHERE relkind = 'r' AND relnamespace = 2200) \
         SELECT count(*) FROM c",
    );
    assert_eq!(r, vec![vec![Value::Int(1)]]);
    assert_eq!(code(s.execute("SELECT nosuch FROM pg_class", &[])), "42703");
    assert_eq!(
        code(s.execute("SELECT * FROM information_schema.nosuch", &[])),
        "42P01"
    );
    // Column types are PostgreSQL's where Augur has them (oid columns are int8).
    let (_, cols) = s
        .describe("SELECT relname, relnatts, oid, relhasindex FROM pg_class")
        .unwrap();
    let types: Vec<DataType> = cols.into_iter().map(|c| c.1).collect();
    assert_eq!(
        types,
        vec![
            DataType::Text(None),
            DataType::Int2,
            DataType::Int8,
            DataType::Bool
        ]
    );
}
