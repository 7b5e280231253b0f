//! Schema objects across restarts: views and the results of ALTER TABLE (a column added with a
//! default, read by the rows stored before it; renamed and dropped columns; a renamed table;
//! NOT NULL and CHECK constraints) after a clean close, after an unclean one (no final
//! checkpoint), and after a SIGKILL of the server.

mod common;

mod server_util;

use augur::{Database, Options, Session, Value};
use server_util::{require, Server};

fn rows(s: &mut Session, sql: &str) -> Vec<Vec<Value>> {
    s.execute(sql, &[]).unwrap().pop().unwrap().rows().to_vec()
}

fn code(s: &mut Session, sql: &str) -> String {
    match s.execute(sql, &[]) {
        Ok(_) => "ok".into(),
        Err(e) => e.sqlstate().code().to_string(),
    }
}

const SETUP: &[&str] = &[
    "CREATE TABLE s_t (id integer PRIMARY KEY, name text)",
    "INSERT INTO s_t VALUES (1, 'one'), (2, 'two')",
    "ALTER TABLE s_t ADD COLUMN score integer DEFAULT 5",
    "ALTER TABLE s_t ADD CONSTRAINT s_pos CHECK (score > 0)",
    "INSERT INTO s_t VALUES (3, 'three', 30)",
    "ALTER TABLE s_t RENAME COLUMN name TO label",
    "ALTER TABLE s_t ALTER COLUMN label SET NOT NULL",
    "CREATE TABLE s_d (id integer PRIMARY KEY, gone text, kept text)",
    "INSERT INTO s_d VALUES (1, 'g', 'k')",
    "ALTER TABLE s_d DROP COLUMN gone",
    "ALTER TABLE s_d RENAME TO s_d2",
    "CREATE VIEW s_v AS SELECT id, label, score FROM s_t WHERE score > 10 OR id = 1",
];

/// What SETUP leaves, as seen through SQL.
fn check(s: &mut Session) {
    assert_eq!(
        rows(s, "SELECT id, label, score FROM s_t ORDER BY id"),
        vec![
            vec![Value::Int(1), Value::from("one"), Value::Int(5)],
            vec![Value::Int(2), Value::from("two"), Value::Int(5)],
            vec![Value::Int(3), Value::from("three"), Value::Int(30)],
        ]
    );
    assert_eq!(
        rows(s, "SELECT id, label FROM s_v ORDER BY id"),
        vec![
            vec![Value::Int(1), Value::from("one")],
            vec![Value::Int(3), Value::from("three")]
        ]
    );
    assert_eq!(code(s, "INSERT INTO s_t VALUES (9, 'x', 0)"), "23514");
    assert_eq!(code(s, "INSERT INTO s_t (id) VALUES (9)"), "23502");
    assert_eq!(code(s, "SELECT name FROM s_t"), "42703");
    assert_eq!(
        rows(s, "SELECT * FROM s_d2"),
        vec![vec![Value::Int(1), Value::from("k")]]
    );
    assert_eq!(code(s, "SELECT * FROM s_d"), "42P01");
    assert_eq!(code(s, "DROP TABLE s_t"), "2BP01");
}

#[test]
fn views_and_altered_tables_survive_clean_and_unclean_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path(), Options::default()).unwrap();
        let mut s = Session::new(db.clone());
        for q in SETUP {
            s.execute(q, &[]).unwrap();
        }
        check(&mut s);
        drop(s);
        db.close().unwrap();
    }
    {
        let db = Database::open(dir.path(), Options::default()).unwrap();
        let mut s = Session::new(db.clone());
        check(&mut s);
        // Changes after the last checkpoint, then no clean shutdown.
        s.execute("ALTER TABLE s_t ADD COLUMN tag text DEFAULT 't'", &[])
            .unwrap();
        s.execute("INSERT INTO s_t VALUES (4, 'four', 40, 'u')", &[])
            .unwrap();
        s.execute(
            "CREATE OR REPLACE VIEW s_v AS SELECT id, label, score, tag FROM s_t WHERE score > 10 OR id = 1",
            &[],
        )
        .unwrap();
        drop(s);
        db.abandon();
    }
    let db = Database::open(dir.path(), Options::default()).unwrap();
    let mut s = Session::new(db.clone());
    assert_eq!(
        rows(&mut s, "SELECT id, tag FROM s_v ORDER BY id"),
        vec![
            vec![Value::Int(1), Value::from("t")],
            vec![Value::Int(3), Value::from("t")],
            vec![Value::Int(4), Value::from("u")],
        ]
    );
    s.execute("DELETE FROM s_t WHERE id = 4", &[]).unwrap();
    check(&mut s);
    let views = db.views().unwrap();
    assert_eq!(views.len(), 1);
    assert_eq!(views[0].name, "s_v");
    assert_eq!(views[0].depends_on, vec!["s_t".to_string()]);
    let def = db.table("s_t").unwrap().def();
    assert_eq!(def.checks.len(), 1);
    assert_eq!(def.checks[0].name, "s_pos");
    assert!(db.verify_integrity().unwrap() > 0);
}

/// Rows stored before an ADD COLUMN are not rewritten: the embedded API's borrowed reads
/// (`get_with`, `scan_with`) see the added column's value too.
#[test]
fn rows_stored_before_add_column_read_its_value_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), Options::default()).unwrap();
    let mut s = Session::new(db.clone());
    s.execute("CREATE TABLE w (id bigint PRIMARY KEY, a text)", &[])
        .unwrap();
    s.execute("INSERT INTO w VALUES (1, 'x'), (2, 'y')", &[]).unwrap();
    s.execute("ALTER TABLE w ADD COLUMN b bigint DEFAULT 42", &[])
        .unwrap();
    s.execute("CREATE INDEX w_b ON w (b)", &[]).unwrap();
    let t = db.table("w").unwrap();
    let tx = db.begin();
    let got = tx
        .get_with(&t, &augur::Key::Int(1), |r| r.to_row())
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(got, vec![Value::Int(1), Value::from("x"), Value::Int(42)]);
    let mut seen = Vec::new();
    tx.scan_with(&t, &augur::KeyRange::all(), false, |_, r| {
        seen.push((r.len(), r.get(2)?.map(|v| v.to_value())));
        Ok(true)
    })
    .unwrap();
    assert_eq!(seen, vec![(3, Some(Value::Int(42))), (3, Some(Value::Int(42)))]);
    assert_eq!(
        tx.get("w", &augur::Key::Int(2)).unwrap().unwrap()[2],
        Value::Int(42)
    );
    drop(tx);
    assert_eq!(
        rows(&mut s, "SELECT id FROM w WHERE b = 42 ORDER BY id"),
        vec![vec![Value::Int(1)], vec![Value::Int(2)]]
    );
    db.close().unwrap();
}

#[test]
fn views_and_altered_tables_survive_sigkill_of_the_server() {
    require("psql");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut srv = Server::start(&dir, &[]);
    for q in SETUP {
        srv.sql(q);
    }
    srv.kill9();
    let srv = Server::start(&dir, &[]);
    assert_eq!(
        srv.sql("SELECT id, label, score FROM s_t ORDER BY id"),
        "1|one|5\n2|two|5\n3|three|30\n"
    );
    assert_eq!(srv.sql("SELECT id FROM s_v ORDER BY id"), "1\n3\n");
    assert_eq!(srv.sql("SELECT * FROM s_d2"), "1|k\n");
    let o = srv.psql(&[], "INSERT INTO s_t VALUES (9, 'x', 0);\n");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("violates check constraint \"s_pos\""),
        "{o:?}"
    );
}

/// Runs `sql` in a new session of `db` on its own thread; gives back "ok" or the SQLSTATE.
fn spawn(db: &Database, sql: &'static str) -> std::thread::JoinHandle<String> {
    let mut s = Session::new(db.clone());
    std::thread::spawn(move || code(&mut s, sql))
}

/// A parent delete and a child insert in two sessions: whichever comes first, the other waits
/// for it and fails, and no child row is ever committed without its parent.
#[test]
fn concurrent_parent_delete_and_child_insert_commit_no_orphan() {
    let (_dir, db) = common::open_nosync();
    let mut s = Session::new(db.clone());
    s.execute("CREATE TABLE par (id integer PRIMARY KEY)", &[])
        .unwrap();
    s.execute(
        "CREATE TABLE chi (id integer PRIMARY KEY, p integer REFERENCES par)",
        &[],
    )
    .unwrap();
    s.execute("INSERT INTO par VALUES (1), (2)", &[]).unwrap();
    let wait = || std::thread::sleep(std::time::Duration::from_millis(150));

    // The child first: its transaction holds the parent's row lock; the delete waits for it,
    // then sees the committed child.
    let mut c = Session::new(db.clone());
    c.execute("BEGIN", &[]).unwrap();
    c.execute("INSERT INTO chi VALUES (1, 1)", &[]).unwrap();
    let d = spawn(&db, "DELETE FROM par WHERE id = 1");
    wait();
    assert!(
        !d.is_finished(),
        "the delete must wait for the child's transaction"
    );
    c.execute("COMMIT", &[]).unwrap();
    assert_eq!(d.join().unwrap(), "23503");

    // The delete first: the child insert waits for it, then finds no parent.
    let mut d = Session::new(db.clone());
    d.execute("BEGIN", &[]).unwrap();
    d.execute("DELETE FROM par WHERE id = 2", &[]).unwrap();
    let c = spawn(&db, "INSERT INTO chi VALUES (2, 2)");
    wait();
    assert!(
        !c.is_finished(),
        "the insert must wait for the delete's transaction"
    );
    d.execute("COMMIT", &[]).unwrap();
    assert_eq!(c.join().unwrap(), "23503");

    // Free races: each round one of the two wins, never both.
    let mut children = 1;
    for i in 10..60 {
        s.execute(&format!("INSERT INTO par VALUES ({i})"), &[]).unwrap();
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
        let run = |sql: String| {
            let mut x = Session::new(db.clone());
            let b = barrier.clone();
            std::thread::spawn(move || {
                b.wait();
                code(&mut x, &sql)
            })
        };
        let del = run(format!("DELETE FROM par WHERE id = {i}"));
        let ins = run(format!("INSERT INTO chi VALUES ({i}, {i})"));
        let (del, ins) = (del.join().unwrap(), ins.join().unwrap());
        assert!(
            (del == "ok") != (ins == "ok"),
            "round {i}: delete {del}, insert {ins}"
        );
        assert!(
            ["ok", "23503"].contains(&del.as_str()) && ["ok", "23503"].contains(&ins.as_str()),
            "round {i}: delete {del}, insert {ins}"
        );
        children += (ins == "ok") as i64;
    }
    assert_eq!(
        rows(
            &mut s,
            "SELECT count(*) FROM chi WHERE NOT EXISTS (SELECT 1 FROM par WHERE par.id = chi.p)"
        ),
        vec![vec![Value::Int(0)]]
    );
    assert_eq!(
        rows(&mut s, "SELECT count(*) FROM chi"),
        vec![vec![Value::Int(children)]]
    );
}

/// A serial column added to a table with rows: the values it filled in, its sequence and the
/// values that sequence hands out next survive a clean close and an unclean one (no value is
/// handed out twice).
#[test]
fn a_serial_column_added_to_stored_rows_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let ids = |s: &mut Session| rows(s, "SELECT v, n FROM sr ORDER BY n");
    {
        let db = Database::open(dir.path(), Options::default()).unwrap();
        let mut s = Session::new(db.clone());
        s.execute("CREATE TABLE sr (id int PRIMARY KEY, v text)", &[])
            .unwrap();
        s.execute("INSERT INTO sr VALUES (1, 'a'), (2, 'b')", &[])
            .unwrap();
        s.execute("ALTER TABLE sr ADD COLUMN n bigserial", &[]).unwrap();
        drop(s);
        db.close().unwrap();
    }
    {
        let db = Database::open(dir.path(), Options::default()).unwrap();
        let mut s = Session::new(db.clone());
        assert_eq!(
            ids(&mut s),
            vec![
                vec![Value::from("a"), Value::Int(1)],
                vec![Value::from("b"), Value::Int(2)]
            ]
        );
        s.execute("INSERT INTO sr (id, v) VALUES (3, 'c')", &[]).unwrap();
        drop(s);
        db.abandon();
    }
    let db = Database::open(dir.path(), Options::default()).unwrap();
    let mut s = Session::new(db.clone());
    s.execute("INSERT INTO sr (id, v) VALUES (4, 'd')", &[]).unwrap();
    // After a reopen the sequence may skip values it had reserved, never repeat one.
    let got = ids(&mut s);
    let names: Vec<&Value> = got.iter().map(|r| &r[0]).collect();
    assert_eq!(
        names,
        ["a", "b", "c", "d"].map(Value::from).iter().collect::<Vec<_>>()
    );
    assert!(matches!(got[2][1], Value::Int(n) if n > 2), "{got:?}");
    assert!(got.windows(2).all(|w| w[0][1] != w[1][1]), "{got:?}");
    assert_eq!(
        rows(&mut s, "SELECT pg_get_serial_sequence('sr', 'n')"),
        vec![vec![Value::from("public.sr_n_seq")]]
    );
    assert!(db.verify_integrity().unwrap() > 0);
}

/// A view stored before views kept their columns' type modifiers (as an older Augur wrote it:
/// no `typmods` key, `varchar` for a `varchar(10)` column) is replaced by its own query, and the
/// replacement keeps the modifiers: a later replacement that changes one is 42P16, as in
/// PostgreSQL.
#[test]
fn a_view_stored_without_type_modifiers_is_replaced_by_its_query() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open_nosync_at(dir.path());
    let mut s = Session::new(db.clone());
    s.execute(
        "CREATE TABLE tm_t (id int PRIMARY KEY, a varchar(10), b numeric(10,2))",
        &[],
    )
    .unwrap();
    let old: augur::engine::ViewDef = serde_json::from_str(
        r#"{"name":"tm_v","sql":"SELECT id, a, b FROM tm_t",
            "columns":[["id","Int4"],["a",{"Varchar":null}],["b",{"Numeric":null}]],
            "depends_on":["tm_t"]}"#,
    )
    .unwrap();
    assert!(!old.typmods);
    db.create_view(old, false).unwrap();
    let typmods = |s: &mut Session| -> Vec<Value> {
        rows(
            s,
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'tm_v'::regclass \
             AND attnum > 0 ORDER BY attnum",
        )
        .into_iter()
        .map(|r| r[0].clone())
        .collect()
    };
    assert_eq!(typmods(&mut s), [Value::Int(-1), Value::Int(-1), Value::Int(-1)]);
    // A type change is still one.
    assert_eq!(
        code(
            &mut s,
            "CREATE OR REPLACE VIEW tm_v AS SELECT id, a::text AS a, b FROM tm_t"
        ),
        "42P16"
    );
    assert_eq!(
        code(&mut s, "CREATE OR REPLACE VIEW tm_v AS SELECT id, a, b FROM tm_t"),
        "ok"
    );
    assert_eq!(
        typmods(&mut s),
        [Value::Int(-1), Value::Int(14), Value::Int(655366)]
    );
    assert_eq!(
        code(
            &mut s,
            "CREATE OR REPLACE VIEW tm_v AS SELECT id, a::varchar(20) AS a, b FROM tm_t"
        ),
        "42P16"
    );
    drop(s);
    drop(db);
    // The replacement's modifiers are stored.
    let mut s = Session::new(common::open_nosync_at(dir.path()));
    assert_eq!(
        typmods(&mut s),
        [Value::Int(-1), Value::Int(14), Value::Int(655366)]
    );
    assert_eq!(
        code(
            &mut s,
            "CREATE OR REPLACE VIEW tm_v AS SELECT id, a::varchar AS a, b FROM tm_t"
        ),
        "42P16"
    );
}
