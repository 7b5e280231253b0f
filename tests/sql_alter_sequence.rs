//! ALTER SEQUENCE across reopens (a clean close and an abandoned one: the new definition and
//! position are durable when the statement returns) and inside a transaction block (25001,
//! the sequence unchanged).

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
fn alter_sequence_in_a_transaction_block_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), Options::default()).unwrap();
    let mut s = Session::new(db.clone());
    s.execute("CREATE SEQUENCE b", &[]).unwrap();
    assert_eq!(code(&mut s, "BEGIN"), "ok");
    assert_eq!(code(&mut s, "ALTER SEQUENCE b RESTART WITH 40"), "25001");
    // The block has failed, as after any error in it.
    assert_eq!(code(&mut s, "SELECT 1"), "25P02");
    assert_eq!(code(&mut s, "ROLLBACK"), "ok");
    assert_eq!(one(&mut s, "SELECT nextval('b')"), Value::Int(1));
    // Outside the block it runs, also as one statement of several.
    assert_eq!(code(&mut s, "ALTER SEQUENCE b RESTART WITH 40; SELECT 1"), "ok");
    assert_eq!(one(&mut s, "SELECT nextval('b')"), Value::Int(40));
}
