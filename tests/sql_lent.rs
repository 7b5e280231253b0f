//! Rows lent in place (`Session::query_prepared_with`) against the owned rows of
//! `execute_prepared`, under the same session rules; and the plain-text plan cache answering as
//! the literals do.

mod common;

use augur::{Session, StatementResult, TxStatus, Value};

use common::open_nosync as open;

fn rows(s: &mut Session, sql: &str) -> Vec<Vec<Value>> {
    s.execute(sql, &[]).unwrap().pop().unwrap().rows().to_vec()
}

/// Every row `query_prepared_with` lends, owned again.
fn lent(s: &mut Session, sql: &str, params: &[Value]) -> augur::Result<Vec<Vec<Value>>> {
    let p = s.prepare(sql)?;
    let mut out = Vec::new();
    let n = s.query_prepared_with(&p, params, |vals| {
        out.push(vals.iter().map(|v| v.to_value()).collect());
        Ok(())
    })?;
    assert_eq!(n as usize, out.len());
    Ok(out)
}

/// The same statement's rows through `execute_prepared`.
fn owned(s: &mut Session, sql: &str, params: &[Value]) -> Vec<Vec<Value>> {
    let p = s.prepare(sql).unwrap();
    s.execute_prepared(&p, params).unwrap().rows().to_vec()
}

#[test]
fn lent_rows_equal_the_owned_rows() {
    let (_d, db) = open();
    let mut s = Session::new(db);
    s.execute("CREATE TABLE t (k bigint PRIMARY KEY, v text, b bytea)", &[])
        .unwrap();
    s.execute(
        "INSERT INTO t SELECT g, 'v' || g, NULL::bytea FROM generate_series(1, 300) AS g",
        &[],
    )
    .unwrap();
    // Rows stored before a column was added read its default without being rewritten.
    s.execute("ALTER TABLE t ADD COLUMN d int DEFAULT 7", &[])
        .unwrap();
    s.execute("INSERT INTO t VALUES (1000, NULL, '\\x0102', 8)", &[])
        .unwrap();
    let cases: &[(&str, Vec<Value>)] = &[
        ("SELECT v FROM t WHERE k = $1", vec![Value::Int(5)]),
        ("SELECT v FROM t WHERE k = $1", vec![Value::Int(5000)]),
        // A NULL or text parameter takes the general path, a bigint the direct point read.
        ("SELECT v FROM t WHERE k = $1", vec![Value::Null]),
        ("SELECT v FROM t WHERE k = $1", vec![Value::Text("7".into())]),
        ("SELECT k, b FROM t WHERE k = $1", vec![Value::Int(i64::MIN)]),
        ("SELECT * FROM t WHERE k = $1", vec![Value::Int(1000)]),
        ("SELECT d, k, d FROM t WHERE k = $1", vec![Value::Int(9)]),
        (
            "SELECT k, v FROM t WHERE k >= $1 ORDER BY k LIMIT $2",
            vec![Value::Int(290), Value::Int(100)],
        ),
        (
            "SELECT k FROM t WHERE k > $1 ORDER BY k LIMIT 5 OFFSET 3",
            vec![Value::Int(10)],
        ),
        ("SELECT k FROM t ORDER BY k DESC LIMIT 4", vec![]),
        (
            "SELECT k FROM t WHERE k >= $1 ORDER BY k LIMIT 0",
            vec![Value::Int(1)],
        ),
        ("SELECT k, b, d FROM t", vec![]),
        // Plans that are not a plain scan are lent from the materialized rows.
        ("SELECT k + 1 FROM t WHERE k < $1 ORDER BY 1", vec![Value::Int(4)]),
        ("SELECT k FROM t WHERE v LIKE 'v2_' ORDER BY k DESC", vec![]),
        ("SELECT count(*) FROM t", vec![]),
        (
            "SELECT a.k FROM t a JOIN t b ON a.k = b.k + 1 WHERE a.k < 5 ORDER BY 1",
            vec![],
        ),
    ];
    for (sql, params) in cases {
        let want = owned(&mut s, sql, params);
        assert_eq!(lent(&mut s, sql, params).unwrap(), want, "{sql}");
    }
    // Inside a block, the transaction's own writes (decoded rows, not stored ones) are lent.
    s.execute("BEGIN", &[]).unwrap();
    s.execute("UPDATE t SET v = 'mine' WHERE k = 3", &[]).unwrap();
    s.execute("INSERT INTO t VALUES (301, 'new', NULL, 1)", &[])
        .unwrap();
    for (sql, params) in cases {
        let want = owned(&mut s, sql, params);
        assert_eq!(lent(&mut s, sql, params).unwrap(), want, "{sql} in a block");
    }
    assert_eq!(
        lent(&mut s, "SELECT v FROM t WHERE k = $1", &[Value::Int(3)]).unwrap(),
        vec![vec![Value::Text("mine".into())]]
    );
    s.execute("ROLLBACK", &[]).unwrap();
    // DML's RETURNING rows are lent too, and the statement takes effect once.
    let r = lent(
        &mut s,
        "DELETE FROM t WHERE k = $1 RETURNING k, v",
        &[Value::Int(2)],
    )
    .unwrap();
    assert_eq!(r, vec![vec![Value::Int(2), Value::Text("v2".into())]]);
    assert!(owned(&mut s, "SELECT k FROM t WHERE k = 2", &[]).is_empty());
}

#[test]
fn lent_rows_keep_the_session_rules() {
    let (_d, db) = open();
    let mut s = Session::new(db);
    s.execute("CREATE TABLE t (k int PRIMARY KEY, v text)", &[])
        .unwrap();
    s.execute(
        "INSERT INTO t SELECT g, 'x' FROM generate_series(1, 50) AS g",
        &[],
    )
    .unwrap();
    let scan = "SELECT k, v FROM t WHERE k >= $1 ORDER BY k LIMIT $2";
    let code = |r: augur::Result<Vec<Vec<Value>>>| {
        r.map(|_| "ok".to_string())
            .unwrap_or_else(|e| e.sqlstate().code().into())
    };

    // max_result_rows / max_result_bytes: 54000, as for owned results.
    let mut limits = s.limits().clone();
    limits.max_result_rows = Some(10);
    s.set_limits(limits.clone());
    assert_eq!(code(lent(&mut s, scan, &[Value::Int(1), Value::Int(10)])), "ok");
    assert_eq!(
        code(lent(&mut s, scan, &[Value::Int(1), Value::Int(11)])),
        "54000"
    );
    limits.max_result_rows = None;
    limits.max_result_bytes = Some(100);
    s.set_limits(limits.clone());
    assert_eq!(
        code(lent(&mut s, scan, &[Value::Int(1), Value::Int(20)])),
        "54000"
    );
    limits.max_result_bytes = None;
    s.set_limits(limits);

    // A parameter of the wrong type is the same error either way.
    let p = s.prepare(scan).unwrap();
    let e = s
        .query_prepared_with(&p, &[Value::Int(1)], |_| Ok(()))
        .unwrap_err();
    assert_eq!(e.sqlstate().code(), "08P01");

    // An error from the callback fails the open block; the block then answers 25P02.
    s.execute("BEGIN", &[]).unwrap();
    let e = s
        .query_prepared_with(&p, &[Value::Int(1), Value::Int(5)], |_| {
            Err(augur::Error::new(augur::SqlState::QUERY_CANCELED, "stop"))
        })
        .unwrap_err();
    assert_eq!(e.sqlstate().code(), "57014");
    assert_eq!(s.status(), TxStatus::Failed);
    assert_eq!(code(lent(&mut s, scan, &[Value::Int(1), Value::Int(5)])), "25P02");
    s.execute("ROLLBACK", &[]).unwrap();
    assert_eq!(
        lent(&mut s, scan, &[Value::Int(1), Value::Int(3)]).unwrap().len(),
        3
    );

    // A table dropped and created again with other columns: the plan is made again.
    s.execute("DROP TABLE t", &[]).unwrap();
    s.execute("CREATE TABLE t (k int PRIMARY KEY, v int)", &[])
        .unwrap();
    s.execute("INSERT INTO t VALUES (1, 10)", &[]).unwrap();
    let mut got = Vec::new();
    s.query_prepared_with(&p, &[Value::Int(1), Value::Int(3)], |vals| {
        got.push(vals.iter().map(|v| v.to_value()).collect::<Vec<_>>());
        Ok(())
    })
    .unwrap();
    assert_eq!(got, vec![vec![Value::Int(1), Value::Int(10)]]);
}

/// A point read's plan the session keeps between runs (`query_prepared_with` without the
/// plan's lock) is left for a new one whenever the table changes, and keeps the block's and
/// the session's rules.
#[test]
fn a_kept_point_plan_follows_the_table() {
    let (_d, db) = open();
    let mut s = Session::new(db.clone());
    s.execute("CREATE TABLE t (k int PRIMARY KEY, v text)", &[])
        .unwrap();
    s.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')", &[]).unwrap();
    let p = s.prepare("SELECT * FROM t WHERE k = $1").unwrap();
    let run = |s: &mut Session, k: i64| -> augur::Result<Vec<Vec<Value>>> {
        let mut out = Vec::new();
        s.query_prepared_with(&p, &[Value::Int(k)], |vals| {
            out.push(vals.iter().map(|v| v.to_value()).collect());
            Ok(())
        })?;
        Ok(out)
    };
    let row = |k: i64, v: &str| vec![Value::Int(k), Value::Text(v.into())];
    for _ in 0..3 {
        assert_eq!(run(&mut s, 1).unwrap(), vec![row(1, "a")]);
        assert_eq!(run(&mut s, 3).unwrap(), Vec::<Vec<Value>>::new());
    }
    // Another session's ALTER: the next run has the new column.
    let mut other = Session::new(db.clone());
    other
        .execute("ALTER TABLE t ADD COLUMN w int DEFAULT 7", &[])
        .unwrap();
    assert_eq!(
        run(&mut s, 2).unwrap(),
        vec![vec![Value::Int(2), Value::Text("b".into()), Value::Int(7)]]
    );
    // Another session's block holding the table's lock: the read waits (55P03 at the
    // lock_timeout), then answers once the block ends.
    other.execute("BEGIN", &[]).unwrap();
    other.execute("ALTER TABLE t RENAME COLUMN w TO x", &[]).unwrap();
    s.execute("SET lock_timeout = 50", &[]).unwrap();
    assert_eq!(run(&mut s, 2).unwrap_err().sqlstate().code(), "55P03");
    other.execute("ROLLBACK", &[]).unwrap();
    assert_eq!(run(&mut s, 2).unwrap().len(), 1);
    // A table dropped and made again: the new one's rows.
    s.execute("DROP TABLE t", &[]).unwrap();
    s.execute("CREATE TABLE t (k int PRIMARY KEY, v text)", &[])
        .unwrap();
    s.execute("INSERT INTO t VALUES (1, 'z')", &[]).unwrap();
    assert_eq!(run(&mut s, 1).unwrap(), vec![row(1, "z")]);
    assert_eq!(run(&mut s, 1).unwrap(), vec![row(1, "z")]);
    // The rules: a failed block answers 25P02; max_result_rows holds.
    s.execute("BEGIN", &[]).unwrap();
    assert!(s.execute("SELECT 1/0", &[]).is_err());
    assert_eq!(run(&mut s, 1).unwrap_err().sqlstate().code(), "25P02");
    s.execute("ROLLBACK", &[]).unwrap();
    let mut limits = s.limits().clone();
    limits.max_result_rows = Some(0);
    s.set_limits(limits);
    assert_eq!(run(&mut s, 1).unwrap_err().sqlstate().code(), "54000");
}

/// One statement's answer as a client sees it: its tag, columns and rows, or its SQLSTATE and
/// message.
fn answer(r: augur::Result<StatementResult>) -> String {
    match r {
        Ok(r) => format!("{} {:?} {:?}", r.tag(), r.columns(), r.rows()),
        Err(e) => format!("error {}: {}", e.sqlstate().code(), e),
    }
}

/// The plain-text plan cache (`Session::prepare_cached`, the server's simple protocol) lifts
/// literals to parameters; each statement must answer exactly as it does without the cache:
/// the same rows, or the same error with the same SQLSTATE and message, and the same data
/// after it. Two databases run the same statements, one through the cache, one without.
#[test]
fn cached_plans_answer_as_the_literals_do() {
    let (_d1, db1) = open();
    let (_d2, db2) = open();
    let mut plain = Session::new(db1);
    let mut cached = Session::new(db2);
    let setup = [
        "CREATE TABLE lit (id int PRIMARY KEY, s smallint, i int, b bigint, f float8, \
         n numeric(6,2), t text, v varchar(3), d date, ts timestamp, flag bool DEFAULT true, \
         w int DEFAULT 7 NOT NULL)",
        "CREATE TABLE hist (tid int, bid int, aid int, delta int, mtime timestamp)",
    ];
    for sql in setup {
        plain.execute(sql, &[]).unwrap();
        cached.execute(sql, &[]).unwrap();
    }
    // (statement, whether its shape must prepare and so run through the cache)
    let cases: &[(&str, bool)] = &[
        (
            "INSERT INTO lit VALUES (1, 1, 1, 1, 1, 1, 'a', 'abc', '2024-01-01', '2024-01-01 10:00', 't', 1)",
            true,
        ),
        ("INSERT INTO lit (id, s) VALUES (2, 100000)", true),
        ("INSERT INTO lit (id, s) VALUES (2, -32769)", true),
        ("INSERT INTO lit (id, s) VALUES (2, -32768)", true),
        ("INSERT INTO lit (id, i) VALUES (3, 1099511627776)", true),
        ("INSERT INTO lit (id, i) VALUES (3, 2147483648)", true),
        ("INSERT INTO lit (id, i) VALUES (3, -2147483648)", true),
        ("INSERT INTO lit (id, i) VALUES (4, -2147483649)", true),
        ("INSERT INTO lit (id, i) VALUES (4, '12')", true),
        ("INSERT INTO lit (id, i) VALUES (5, '12x')", true),
        ("INSERT INTO lit (id, i) VALUES (5, ' 13 ')", true),
        ("INSERT INTO lit (id, i) VALUES (6, '99999999999')", true),
        ("INSERT INTO lit (id, b) VALUES (6, -9223372036854775808)", true),
        ("INSERT INTO lit (id, b) VALUES (7, 9223372036854775808)", false),
        ("INSERT INTO lit (id, b) VALUES (7, '9223372036854775808')", true),
        ("INSERT INTO lit (id, f) VALUES (7, 3)", true),
        ("INSERT INTO lit (id, f) VALUES (8, '1e400')", true),
        ("INSERT INTO lit (id, n) VALUES (8, 12345)", true),
        ("INSERT INTO lit (id, n) VALUES (8, 1234)", true),
        ("INSERT INTO lit (id, n) VALUES (9, '1.005')", true),
        ("INSERT INTO lit (id, n) VALUES (10, 1.005)", true),
        ("INSERT INTO lit (id, t) VALUES (11, 42)", true),
        ("INSERT INTO lit (id, t) VALUES (12, -42)", true),
        ("INSERT INTO lit (id, v) VALUES (13, 'abcd')", true),
        ("INSERT INTO lit (id, v) VALUES (13, 1234)", true),
        ("INSERT INTO lit (id, flag) VALUES (14, 1)", false),
        ("INSERT INTO lit (id, flag) VALUES (14, 'yes')", true),
        ("INSERT INTO lit (id, flag) VALUES (15, 'maybe')", true),
        ("INSERT INTO lit (id, d) VALUES (15, '2024-02-30')", true),
        ("INSERT INTO lit (id, d) VALUES (16, 20240101)", false),
        (
            "INSERT INTO lit (id, ts) VALUES (16, timestamp '2024-01-01')",
            true,
        ),
        ("INSERT INTO lit (id, t, i) VALUES (17, NULL, NULL)", true),
        ("INSERT INTO lit (id, w) VALUES (18, NULL)", true),
        ("INSERT INTO lit (id, w, i) VALUES (18, DEFAULT, 1 + 2)", true),
        (
            "INSERT INTO lit (id, s) VALUES (19, 1), (20, 40000), (21, 2)",
            true,
        ),
        (
            "INSERT INTO lit (id, s) VALUES (19, 1), (20, '2'), (21, -3)",
            true,
        ),
        ("INSERT INTO lit (id, i) VALUES (1, 5)", true),
        (
            "INSERT INTO lit (id, i) VALUES (22, 5) RETURNING i + 1, t, w",
            true,
        ),
        (
            "INSERT INTO lit (id, i) VALUES (22, 6) ON CONFLICT (id) DO UPDATE SET i = 7 RETURNING i",
            true,
        ),
        (
            "INSERT INTO lit (id, i) VALUES (22, 6) ON CONFLICT (id) DO UPDATE SET s = 100000",
            false,
        ),
        (
            "INSERT INTO lit (id, i) VALUES (23, 6) ON CONFLICT (id) DO UPDATE SET s = 100000",
            false,
        ),
        (
            "INSERT INTO lit (id, i) VALUES (24, 6) ON CONFLICT (id) DO NOTHING",
            true,
        ),
        (
            "INSERT INTO lit (id, i) VALUES (24, 6) ON CONFLICT (id) DO NOTHING",
            true,
        ),
        ("INSERT INTO lit (id) VALUES (25, 1)", false),
        ("INSERT INTO lit (id, i) VALUES (25)", false),
        (
            "INSERT INTO hist (tid, bid, aid, delta, mtime) VALUES (3, 1, 77, -4000, CURRENT_TIMESTAMP)",
            true,
        ),
        (
            "INSERT INTO hist (tid, bid, aid, delta, mtime) VALUES (4, 1, 78, 2147483648, CURRENT_TIMESTAMP)",
            true,
        ),
        (
            "SELECT tid, bid, aid, delta, mtime IS NOT NULL FROM hist ORDER BY tid",
            true,
        ),
        ("UPDATE lit SET i = i + -2345 WHERE id = 1", true),
        ("UPDATE lit SET i = i - -2345 WHERE id = 1", true),
        ("UPDATE lit SET i = i + 2147483647 WHERE id = 1", true),
        ("UPDATE lit SET i = i - -2147483648 WHERE id = 1", true),
        ("UPDATE lit SET i = i * 3000000000 WHERE id = 1", true),
        (
            "UPDATE lit SET b = b * 3000000000, f = f / 4, n = n + 1 WHERE id = 1 RETURNING b, f, n",
            true,
        ),
        ("UPDATE lit SET b = b * 3000000000 WHERE id = 1", true),
        ("UPDATE lit SET s = s + 40000 WHERE id = 1", true),
        ("UPDATE lit SET s = s + 40000 WHERE id = -1", true),
        ("UPDATE lit SET s = 100000 WHERE id = -1", false),
        ("UPDATE lit SET s = 100000", false),
        ("UPDATE lit SET s = s + 1 RETURNING s", true),
        ("UPDATE lit SET d = d + 30 WHERE id = 1 RETURNING d", true),
        ("UPDATE lit SET ts = ts + 1 WHERE id = 1", false),
        ("UPDATE lit SET t = t + 1 WHERE id = 1", false),
        ("UPDATE lit SET i = i / 0 WHERE id = 1", true),
        (
            "UPDATE lit SET i = i % 7, w = w * -1 WHERE id = 1 RETURNING i, w",
            true,
        ),
        ("SELECT * FROM lit WHERE id = 1", true),
        ("SELECT id, i FROM lit WHERE i = '12'", true),
        ("SELECT id FROM lit WHERE s = 100000", true),
        (
            "SELECT id FROM lit WHERE i >= -2147483648 ORDER BY 1 LIMIT 3",
            true,
        ),
    ];
    let mut wrong = Vec::new();
    for &(sql, lifts) in cases {
        let want = answer(plain.execute(sql, &[]).map(|mut r| r.pop().unwrap()));
        let got = match cached.prepare_cached(sql) {
            Some((p, params)) => answer(cached.execute_prepared(&p, &params)),
            None => {
                if lifts {
                    wrong.push(format!("the shape of {sql} does not prepare"));
                }
                answer(cached.execute(sql, &[]).map(|mut r| r.pop().unwrap()))
            }
        };
        if got != want {
            wrong.push(format!("{sql}\n  cached: {got}\n  plain:  {want}"));
        }
        // Run it again from the cache: the same answer.
        if let Some((p, params)) = cached.prepare_cached(sql) {
            let again = answer(plain.execute(sql, &[]).map(|mut r| r.pop().unwrap()));
            let got = answer(cached.execute_prepared(&p, &params));
            if got != again {
                wrong.push(format!("{sql} (again)\n  cached: {got}\n  plain:  {again}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    let all = "SELECT * FROM lit ORDER BY id";
    assert_eq!(rows(&mut cached, all), rows(&mut plain, all));
    // A failed VALUES row inside a block fails the block, as the literal's bind error does.
    for s in [&mut plain, &mut cached] {
        s.execute("BEGIN", &[]).unwrap();
    }
    let sql = "INSERT INTO lit (id, s) VALUES (30, 1), (31, 40000)";
    let want = answer(plain.execute(sql, &[]).map(|mut r| r.pop().unwrap()));
    let (p, params) = cached.prepare_cached(sql).unwrap();
    assert_eq!(answer(cached.execute_prepared(&p, &params)), want);
    assert_eq!(plain.status(), TxStatus::Failed);
    assert_eq!(cached.status(), TxStatus::Failed);
    for s in [&mut plain, &mut cached] {
        s.execute("ROLLBACK", &[]).unwrap();
    }
    assert_eq!(rows(&mut cached, all), rows(&mut plain, all));
}
