//! ALTER SEQUENCE across reopens (a clean close and an abandoned one: the new definition and
//! position are durable when the statement returns) and inside a transaction block (undone by
//! its rollback, parameters and owner but never the position; RENAME TO refused).

use augur::{Database, Options, Session, Value};

fn one(s: &mut Session, sql: &str) -> Value {
    s.execute(sql, &[]).unwrap().pop().unwrap().rows()[0][0].clone()
}

fn code(s: &mut Session, sql: &str) -> String {
    match s.execute(sql, &[]) {
        Ok(_) => "ok".into(),
        Err(e) => e.sqlstate().code().to_string(),
    }
}

#[test]
fn altered_sequences_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path(), Options::default()).unwrap();
        let mut s = Session::new(db.clone());
        s.execute("CREATE SEQUENCE q; CREATE SEQUENCE r", &[]).unwrap();
        assert_eq!(one(&mut s, "SELECT nextval('q')"), Value::Int(1));
        assert_eq!(one(&mut s, "SELECT nextval('q')"), Value::Int(2));
        s.execute("ALTER SEQUENCE q INCREMENT BY 10 MAXVALUE 1000", &[])
            .unwrap();
        s.execute("ALTER SEQUENCE r RESTART WITH 50", &[]).unwrap();
        drop(s);
        db.close().unwrap();
    }
    {
        let db = Database::open(dir.path(), Options::default()).unwrap();
        let mut s = Session::new(db.clone());
        // From the last value handed out, by the new increment.
        assert_eq!(one(&mut s, "SELECT nextval('q')"), Value::Int(12));
        assert_eq!(one(&mut s, "SELECT nextval('r')"), Value::Int(50));
        assert_eq!(
            one(
                &mut s,
                "SELECT seqmax FROM pg_sequence WHERE seqrelid = 'q'::regclass"
            ),
            Value::Int(1000)
        );
        s.execute("ALTER SEQUENCE q RESTART WITH 500 INCREMENT BY 1", &[])
            .unwrap();
        drop(s);
        // No clean close: the ALTER was durable when it returned.
        db.abandon();
    }
    let db = Database::open(dir.path(), Options::default()).unwrap();
    let mut s = Session::new(db.clone());
    assert_eq!(one(&mut s, "SELECT nextval('q')"), Value::Int(500));
    assert_eq!(one(&mut s, "SELECT nextval('q')"), Value::Int(501));
    // r handed out 50 and reserved a batch before the abandoned close: it never repeats it.
    let r = one(&mut s, "SELECT nextval('r')");
    assert!(matches!(r, Value::Int(v) if v > 50), "{r:?}");
}

#[test]
fn renamed_and_retyped_sequences_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path(), Options::default()).unwrap();
        let mut s = Session::new(db.clone());
        s.execute("CREATE TABLE t (id serial PRIMARY KEY, x int)", &[])
            .unwrap();
        assert_eq!(
            one(&mut s, "INSERT INTO t (x) VALUES (1) RETURNING id"),
            Value::Int(1)
        );
        s.execute("ALTER SEQUENCE t_id_seq RENAME TO t_ids", &[]).unwrap();
        s.execute("ALTER SEQUENCE t_ids AS smallint", &[]).unwrap();
        assert_eq!(
            one(&mut s, "INSERT INTO t (x) VALUES (2) RETURNING id"),
            Value::Int(2)
        );
        drop(s);
        // No clean close: the rename and the type were durable when each returned.
        db.abandon();
    }
    let db = Database::open(dir.path(), Options::default()).unwrap();
    let mut s = Session::new(db.clone());
    assert_eq!(code(&mut s, "SELECT nextval('t_id_seq')"), "42P01");
    let id = one(&mut s, "INSERT INTO t (x) VALUES (3) RETURNING id");
    assert!(matches!(id, Value::Int(v) if v > 2), "{id:?}");
    assert_eq!(
        one(
            &mut s,
            "SELECT seqtypid::regtype::text FROM pg_sequence WHERE seqrelid = 't_ids'::regclass"
        ),
        Value::Text("smallint".into())
    );
    assert_eq!(
        one(&mut s, "SELECT pg_get_serial_sequence('t', 'id')"),
        Value::Text("public.t_ids".into())
    );
    // Augur's one role owns it: OWNER TO names that role (unquoted or quoted as it is).
    assert_eq!(code(&mut s, "ALTER SEQUENCE t_ids OWNER TO augur"), "ok");
    assert_eq!(code(&mut s, "ALTER SEQUENCE t_ids OWNER TO \"augur\""), "ok");
    assert_eq!(code(&mut s, "ALTER SEQUENCE t_ids OWNER TO \"AUGUR\""), "42704");
    // DROP TABLE drops the sequence it owns, under its new name.
    s.execute("DROP TABLE t", &[]).unwrap();
    assert_eq!(code(&mut s, "SELECT nextval('t_ids')"), "42P01");
}

#[test]
fn alter_sequence_in_a_block_is_undone_without_moving_back() {
    // Of a sequence the block did not create: the rollback (or ROLLBACK TO a savepoint opened
    // before it) puts back the parameters and the owner; the position never moves back, so
    // no value is handed out twice (PostgreSQL's rollback puts back the old position too).
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), Options::default()).unwrap();
    let mut s = Session::new(db.clone());
    let params = |s: &mut Session| {
        one(
            s,
            "SELECT format('%s %s %s %s', seqincrement, seqmax, seqcycle, seqtypid::regtype) FROM pg_sequence WHERE seqrelid = 'b'::regclass",
        )
    };
    s.execute("CREATE SEQUENCE b; CREATE TABLE o (id int)", &[])
        .unwrap();
    assert_eq!(one(&mut s, "SELECT nextval('b')"), Value::Int(1));
    let before = params(&mut s);
    // A RESTART ahead, values taken, rolled back: the parameters return, the position stays.
    for sql in [
        "BEGIN",
        "ALTER SEQUENCE b AS integer INCREMENT BY 10 MAXVALUE 5000 CYCLE RESTART WITH 40 OWNED BY o.id",
    ] {
        assert_eq!(code(&mut s, sql), "ok", "{sql}");
    }
    assert_eq!(one(&mut s, "SELECT nextval('b')"), Value::Int(40));
    assert_eq!(one(&mut s, "SELECT nextval('b')"), Value::Int(50));
    assert_eq!(code(&mut s, "ROLLBACK"), "ok");
    assert_eq!(params(&mut s), before);
    assert_eq!(
        one(
            &mut s,
            "SELECT count(*) FROM pg_depend WHERE objid = 'b'::regclass AND deptype = 'a'"
        ),
        Value::Int(0)
    );
    assert_eq!(one(&mut s, "SELECT nextval('b')"), Value::Int(51));
    // A RESTART back, values taken, rolled back to a savepoint: after the furthest value.
    for sql in [
        "BEGIN",
        "SAVEPOINT a",
        "ALTER SEQUENCE b RESTART WITH 1 INCREMENT BY 2",
    ] {
        assert_eq!(code(&mut s, sql), "ok", "{sql}");
    }
    assert_eq!(one(&mut s, "SELECT nextval('b')"), Value::Int(1));
    assert_eq!(one(&mut s, "SELECT nextval('b')"), Value::Int(3));
    assert_eq!(code(&mut s, "ROLLBACK TO a"), "ok");
    assert_eq!(params(&mut s), before);
    assert_eq!(one(&mut s, "SELECT nextval('b')"), Value::Int(52));
    // Committed, the change stays.
    assert_eq!(code(&mut s, "ALTER SEQUENCE b INCREMENT BY 100"), "ok");
    assert_eq!(code(&mut s, "COMMIT"), "ok");
    assert_eq!(one(&mut s, "SELECT nextval('b')"), Value::Int(152));
    // RENAME TO is refused in a block, of a sequence it created too (the rollback drops
    // that by its name).
    for create in ["", "CREATE SEQUENCE c0"] {
        assert_eq!(code(&mut s, "BEGIN"), "ok");
        let target = if create.is_empty() { "b" } else { "c0" };
        if !create.is_empty() {
            assert_eq!(code(&mut s, create), "ok");
        }
        assert_eq!(
            code(&mut s, &format!("ALTER SEQUENCE {target} RENAME TO c")),
            "25001"
        );
        assert_eq!(code(&mut s, "SELECT 1"), "25P02");
        assert_eq!(code(&mut s, "ROLLBACK"), "ok");
    }
    // A descending sequence moved back up by a RESTART comes back below what it handed out.
    s.execute("CREATE SEQUENCE d INCREMENT BY -1", &[]).unwrap();
    assert_eq!(one(&mut s, "SELECT nextval('d')"), Value::Int(-1));
    assert_eq!(one(&mut s, "SELECT nextval('d')"), Value::Int(-2));
    for sql in ["BEGIN", "ALTER SEQUENCE d RESTART WITH -1"] {
        assert_eq!(code(&mut s, sql), "ok", "{sql}");
    }
    assert_eq!(one(&mut s, "SELECT nextval('d')"), Value::Int(-1));
    assert_eq!(code(&mut s, "ROLLBACK"), "ok");
    assert_eq!(one(&mut s, "SELECT nextval('d')"), Value::Int(-3));
    // Outside a block it runs, also as one statement of several.
    assert_eq!(code(&mut s, "ALTER SEQUENCE b RESTART WITH 40; SELECT 1"), "ok");
    assert_eq!(one(&mut s, "SELECT nextval('b')"), Value::Int(40));
}

#[test]
fn alter_sequence_of_a_sequence_the_block_created_runs_in_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), Options::default()).unwrap();
    let mut s = Session::new(db.clone());
    let typ = |s: &mut Session, n: &str| {
        one(
            s,
            &format!("SELECT seqtypid::regtype::text FROM pg_sequence WHERE seqrelid = '{n}'::regclass"),
        )
    };
    // Rolled back: the sequence goes, with its change.
    for sql in [
        "BEGIN",
        "CREATE SEQUENCE n1",
        "ALTER SEQUENCE n1 AS smallint RESTART WITH 9",
    ] {
        assert_eq!(code(&mut s, sql), "ok", "{sql}");
    }
    assert_eq!(one(&mut s, "SELECT nextval('n1')"), Value::Int(9));
    assert_eq!(code(&mut s, "ROLLBACK"), "ok");
    assert_eq!(code(&mut s, "SELECT nextval('n1')"), "42P01");
    // Committed: the change stays; a serial column's sequence counts as created by the block.
    for sql in [
        "BEGIN",
        "CREATE SEQUENCE n2",
        "ALTER SEQUENCE n2 AS integer INCREMENT BY 5",
        "CREATE TABLE nt (id serial PRIMARY KEY)",
        "ALTER SEQUENCE nt_id_seq RESTART WITH 40",
        "COMMIT",
    ] {
        assert_eq!(code(&mut s, sql), "ok", "{sql}");
    }
    assert_eq!(typ(&mut s, "n2"), Value::Text("integer".into()));
    assert_eq!(one(&mut s, "SELECT nextval('n2')"), Value::Int(1));
    assert_eq!(one(&mut s, "SELECT nextval('n2')"), Value::Int(6));
    assert_eq!(
        one(&mut s, "INSERT INTO nt DEFAULT VALUES RETURNING id"),
        Value::Int(40)
    );
    // Created before a savepoint still open: ROLLBACK TO puts its parameters back. After
    // the savepoint, or once it is released, it runs.
    for (sql, want) in [
        ("BEGIN", "ok"),
        ("CREATE SEQUENCE n5", "ok"),
        ("SAVEPOINT a", "ok"),
        ("ALTER SEQUENCE n5 AS smallint", "ok"),
        ("ROLLBACK TO a", "ok"),
        ("RELEASE a", "ok"),
        ("ALTER SEQUENCE n5 AS smallint", "ok"),
        ("SAVEPOINT b", "ok"),
        ("CREATE SEQUENCE n6", "ok"),
        ("ALTER SEQUENCE n6 AS smallint", "ok"),
        ("ROLLBACK TO b", "ok"),
        ("COMMIT", "ok"),
    ] {
        assert_eq!(code(&mut s, sql), want, "{sql}");
    }
    assert_eq!(typ(&mut s, "n5"), Value::Text("smallint".into()));
    for (sql, want) in [
        ("BEGIN", "ok"),
        ("CREATE SEQUENCE n8", "ok"),
        ("SAVEPOINT a", "ok"),
        ("ALTER SEQUENCE n8 AS smallint", "ok"),
        ("ROLLBACK TO a", "ok"),
        ("COMMIT", "ok"),
    ] {
        assert_eq!(code(&mut s, sql), want, "{sql}");
    }
    assert_eq!(typ(&mut s, "n8"), Value::Text("bigint".into()));
    assert_eq!(code(&mut s, "SELECT nextval('n6')"), "42P01");
}

/// The extended protocol's Parse / Execute (`Session::prepare`, `execute_prepared`), which
/// pgjdbc and psycopg use for every statement, runs ALTER SEQUENCE and the maintenance no-ops
/// too, though sqlparser parses neither.
#[test]
fn prepared_alter_sequence_and_vacuum_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), Options::default()).unwrap();
    let mut s = Session::new(db.clone());
    s.execute("CREATE SEQUENCE p", &[]).unwrap();
    let alter = s
        .prepare("ALTER SEQUENCE p RESTART WITH 70 INCREMENT BY 5")
        .unwrap();
    assert!(alter.param_types.is_empty() && alter.columns.is_empty());
    let tag = s.execute_prepared(&alter, &[]).unwrap();
    assert!(
        matches!(&tag, augur::sql::StatementResult::Command { tag } if tag == "ALTER SEQUENCE"),
        "{tag:?}"
    );
    assert_eq!(one(&mut s, "SELECT nextval('p')"), Value::Int(70));
    assert_eq!(one(&mut s, "SELECT nextval('p')"), Value::Int(75));
    // Run again, the same prepared statement restarts it again.
    s.execute_prepared(&alter, &[]).unwrap();
    assert_eq!(one(&mut s, "SELECT nextval('p')"), Value::Int(70));
    let vacuum = s.prepare("VACUUM").unwrap();
    let tag = s.execute_prepared(&vacuum, &[]).unwrap();
    assert!(
        matches!(&tag, augur::sql::StatementResult::Command { tag } if tag == "VACUUM"),
        "{tag:?}"
    );
    // Errors are the simple protocol's: a bad option at Parse, a missing sequence at Execute.
    assert_eq!(
        s.prepare("ALTER SEQUENCE p RESTART WITH 1 BOGUS")
            .unwrap_err()
            .sqlstate()
            .code(),
        "42601"
    );
    let missing = s.prepare("ALTER SEQUENCE nope RESTART").unwrap();
    assert_eq!(
        s.execute_prepared(&missing, &[]).unwrap_err().sqlstate().code(),
        "42P01"
    );
    // Two statements are still refused in one prepared statement.
    assert_eq!(
        s.prepare("ALTER SEQUENCE p RESTART; SELECT 1")
            .unwrap_err()
            .sqlstate()
            .code(),
        "42601"
    );
}
