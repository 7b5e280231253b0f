//! The column types uuid, numeric, interval and jsonb through the embedded API: `Value::Uuid`,
//! `Value::Numeric`, `Value::Interval` and `Value::Jsonb` written and read by transactions, keys in
//! the ordered fallback index (1.5 and 1.50 one key, 1 mon and 30 days one key), numeric(p, s)
//! rounding on every write path, the same rows through SQL, and all of it again after a reopen;
//! arrays of each (numeric[], uuid[], interval[], jsonb[]) stored and read back after a reopen.

use augur::{
    ColumnDef, DataType, Database, Decimal, Interval, Key, KeyRange, Options, Session, SqlState,
    StatementResult, TableDef, Uuid, Value, ValueRef,
};

fn dec(s: &str) -> Decimal {
    s.parse().unwrap()
}

fn rows(s: &mut Session, sql: &str) -> Vec<Vec<Value>> {
    match s.execute(sql, &[]).unwrap().pop() {
        Some(StatementResult::Query { rows, .. }) => rows,
        other => panic!("{sql}: {other:?}"),
    }
}

#[test]
fn uuid_and_numeric_values_through_the_engine_and_sql() {
    let dir = tempfile::tempdir().unwrap();
    let a: Uuid = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11".parse().unwrap();
    let b: Uuid = "00000000-0000-0000-0000-0000000000ff".parse().unwrap();
    {
        let db = Database::open(dir.path(), Options::default()).unwrap();
        db.create_table(
            TableDef::new(
                "acct",
                vec![
                    ColumnDef::new("id", DataType::Uuid),
                    ColumnDef::new("balance", DataType::Numeric(Some((10, 2)))),
                ],
                &["id"],
            )
            .unwrap(),
        )
        .unwrap();
        db.create_table(
            TableDef::new(
                "price",
                vec![
                    ColumnDef::new("p", DataType::Numeric(None)),
                    ColumnDef::new("label", DataType::Text(None)),
                ],
                &["p"],
            )
            .unwrap(),
        )
        .unwrap();
        db.transaction(|tx| {
            // numeric(10,2) rounds half away from zero on the engine's write path too.
            tx.insert("acct", vec![Value::Uuid(a), Value::Numeric(dec("12.345"))])?;
            tx.insert("acct", vec![b.into(), Value::Int(-7)])?;
            tx.insert("price", vec![dec("1.50").into(), "one and a half".into()])?;
            tx.insert("price", vec![dec("-0.001").into(), "below zero".into()])?;
            tx.insert("price", vec![dec("100").into(), "hundred".into()])?;
            Ok(())
        })
        .unwrap();
        // 1.5 is the key 1.50 already holds.
        let e = db
            .transaction(|tx| tx.insert("price", vec![dec("1.5").into(), "again".into()]))
            .unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::UNIQUE_VIOLATION);
        // Past numeric(10,2)'s precision: 22003, nothing written.
        let e = db
            .transaction(|tx| tx.insert("acct", vec![Uuid::nil().into(), dec("123456789").into()]))
            .unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::NUMERIC_OUT_OF_RANGE);
    }

    let db = Database::open(dir.path(), Options::default()).unwrap();
    let acct = db.table("acct").unwrap().def();
    let key = acct.key_from_values(&[Value::Uuid(a)]).unwrap();
    assert!(
        matches!(key, Key::Bytes(_)),
        "uuid keys use the ordered fallback index"
    );
    let row = db.get("acct", &key).unwrap().expect("row a");
    assert_eq!(row[1].to_text().unwrap(), "12.35");
    // A key given as text in any of PostgreSQL's spellings is the same key.
    let same = acct
        .key_from_values(&[Value::from("{A0EEBC999C0B4EF8BB6D6BB9BD380A11}")])
        .unwrap();
    assert_eq!(same, key);
    let balance = db
        .begin()
        .get_with(&db.table("acct").unwrap(), &key, |r| match r.get(1) {
            Ok(Some(ValueRef::Numeric(d))) => Some(d),
            _ => None,
        })
        .unwrap()
        .flatten();
    assert_eq!(balance.map(|d| d.to_string()).as_deref(), Some("12.35"));
    // Keys in value order: -0.001 < 1.50 < 100 (not the order of their texts).
    let prices: Vec<String> = db
        .begin()
        .scan("price", KeyRange::all())
        .unwrap()
        .into_iter()
        .map(|(_, r)| r[0].to_text().unwrap())
        .collect();
    assert_eq!(prices, ["-0.001", "1.50", "100"]);
    let ids: Vec<Value> = db
        .begin()
        .scan("acct", KeyRange::all())
        .unwrap()
        .into_iter()
        .map(|(_, r)| r[0].clone())
        .collect();
    assert_eq!(ids, [Value::Uuid(b), Value::Uuid(a)]);

    // SQL on the same engine.
    let mut s = Session::new(db.clone());
    assert_eq!(
        rows(&mut s, "SELECT label FROM price WHERE p = 1.5"),
        [[Value::from("one and a half")]]
    );
    assert_eq!(
        rows(&mut s, "SELECT sum(balance)::text, avg(balance)::text FROM acct"),
        [[Value::from("5.35"), Value::from("2.6750000000000000")]]
    );
    let got = rows(&mut s, "SELECT p * 2, p::float8, p::int FROM price ORDER BY p");
    assert_eq!(got[0][0].to_text().unwrap(), "-0.002");
    assert_eq!(
        got[1],
        [Value::Numeric(dec("3.00")), Value::Float(1.5), Value::Int(2)]
    );
    let r = s
        .execute(
            "INSERT INTO acct VALUES ($1, $2)",
            &[Value::Uuid(Uuid::nil()), Value::Numeric(dec("0.005"))],
        )
        .unwrap();
    assert_eq!(r[0].count(), 1);
    assert_eq!(
        rows(
            &mut s,
            "SELECT balance::text FROM acct WHERE id = '00000000-0000-0000-0000-000000000000'"
        ),
        [[Value::from("0.01")]]
    );
    let e = s.execute("SELECT 'nope'::uuid", &[]).unwrap_err();
    assert_eq!(e.sqlstate(), SqlState::INVALID_TEXT_REPRESENTATION);
}

#[test]
fn interval_values_through_the_engine_and_sql() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), Options::default()).unwrap();
    db.create_table(
        TableDef::new(
            "iv",
            vec![
                ColumnDef::new("d", DataType::Interval),
                ColumnDef::new("n", DataType::Int4),
            ],
            &["d"],
        )
        .unwrap(),
    )
    .unwrap();
    db.transaction(|tx| {
        tx.insert("iv", vec![Value::Interval(Interval::new(1, 0, 0)), Value::Int(1)])?;
        tx.insert("iv", vec!["36 hours".into(), Value::Int(2)])?;
        Ok(())
    })
    .unwrap();
    // 30 days is the key 1 month holds (a month counts as 30 days).
    let e = db
        .transaction(|tx| tx.insert("iv", vec![Interval::new(0, 30, 0).into(), Value::Int(3)]))
        .unwrap_err();
    assert_eq!(e.sqlstate(), SqlState::UNIQUE_VIOLATION);
    let got: Vec<String> = db
        .begin()
        .scan("iv", KeyRange::all())
        .unwrap()
        .into_iter()
        .map(|(_, r)| r[0].to_text().unwrap())
        .collect();
    assert_eq!(got, ["36:00:00", "1 mon"]);
    let mut s = Session::new(db.clone());
    assert_eq!(
        rows(&mut s, "SELECT n FROM iv WHERE d = '30 days'"),
        [[Value::Int(1)]]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT (timestamp '2024-01-31 00:00:00' + d)::text FROM iv ORDER BY d"
        ),
        [
            [Value::from("2024-02-01 12:00:00")],
            [Value::from("2024-02-29 00:00:00")]
        ]
    );
}

#[test]
fn jsonb_values_through_the_engine_and_sql() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path(), Options::default()).unwrap();
        db.create_table(
            TableDef::new(
                "docs",
                vec![
                    ColumnDef::new("id", DataType::Int8),
                    ColumnDef::new("doc", DataType::Jsonb),
                ],
                &["id"],
            )
            .unwrap(),
        )
        .unwrap();
        let doc = augur::types::jsonb::parse(r#"{"b": [1.50, null], "a": "x"}"#).unwrap();
        db.transaction(|tx| {
            tx.insert("docs", vec![Value::Int(1), doc.clone().into()])?;
            tx.insert("docs", vec![Value::Int(2), r#"{"a": "y"}"#.into()])?;
            Ok(())
        })
        .unwrap();
        let e = db
            .transaction(|tx| tx.insert("docs", vec![Value::Int(3), "{not json".into()]))
            .unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::INVALID_TEXT_REPRESENTATION);
    }
    // After a reopen, read in place and through SQL.
    let db = Database::open(dir.path(), Options::default()).unwrap();
    let docs = db.table("docs").unwrap();
    let text = db
        .begin()
        .get_with(&docs, &Key::Int(1), |r| match r.get(1) {
            Ok(Some(ValueRef::Jsonb(j))) => Some(j.to_json().to_text()),
            _ => None,
        })
        .unwrap()
        .flatten();
    assert_eq!(text.as_deref(), Some(r#"{"a": "x", "b": [1.50, null]}"#));
    let mut s = Session::new(db.clone());
    assert_eq!(
        rows(&mut s, "SELECT id FROM docs WHERE doc @> '{\"a\": \"y\"}'"),
        [[Value::Int(2)]]
    );
    assert_eq!(
        rows(&mut s, "SELECT doc -> 'b' ->> 0 FROM docs WHERE id = 1"),
        [[Value::from("1.50")]]
    );
}

#[test]
fn arrays_of_numeric_uuid_interval_jsonb_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path(), Options::default()).unwrap();
        let mut s = Session::new(db.clone());
        s.execute(
            "CREATE TABLE ta (id int PRIMARY KEY, amounts numeric[], ids uuid[], spans interval[], \
             docs jsonb[]); \
             INSERT INTO ta VALUES (1, '{1.50,NULL,-0.025}', \
             '{A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11}', '{\"1 day\",36:00:00}', \
             ARRAY['{\"b\": 1, \"a\": [2]}'::jsonb, 'null']), (2, '{}', NULL, '{}', '{}')",
            &[],
        )
        .unwrap();
        // A bad element leaves the table as it was.
        let e = s
            .execute("INSERT INTO ta (id, amounts) VALUES (3, '{1,x}')", &[])
            .unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::INVALID_TEXT_REPRESENTATION);
    }
    let db = Database::open(dir.path(), Options::default()).unwrap();
    let ta = db.table("ta").unwrap();
    // The embedded API sees each column's array type and PostgreSQL's array text.
    let types: Vec<DataType> = ta.def().columns.iter().map(|c| c.ty).collect();
    assert_eq!(
        types[1..],
        [
            DataType::array_of(DataType::Numeric(None)).unwrap(),
            DataType::array_of(DataType::Uuid).unwrap(),
            DataType::array_of(DataType::Interval).unwrap(),
            DataType::array_of(DataType::Jsonb).unwrap(),
        ]
    );
    let mut s = Session::new(db.clone());
    assert_eq!(
        rows(&mut s, "SELECT amounts, ids, spans, docs FROM ta ORDER BY id"),
        [
            vec![
                Value::from("{1.50,NULL,-0.025}"),
                Value::from("{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}"),
                Value::from(r#"{"1 day",36:00:00}"#),
                Value::from(r#"{"{\"a\": [2], \"b\": 1}","null"}"#),
            ],
            vec!["{}".into(), Value::Null, "{}".into(), "{}".into()],
        ]
    );
    // Elements come back typed: numeric by value, interval arithmetic, jsonb operators.
    assert_eq!(
        rows(
            &mut s,
            "SELECT amounts[1] = 1.5, spans[2] = '1 day 12:00:00', docs[1] -> 'a' ->> 0, \
             ids[1] = 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11' FROM ta WHERE id = 1"
        ),
        [[
            Value::Bool(true),
            Value::Bool(true),
            Value::from("2"),
            Value::Bool(true)
        ]]
    );
    assert_eq!(
        rows(&mut s, "SELECT id FROM ta WHERE amounts = '{1.5,NULL,-0.0250}'"),
        [[Value::Int(1)]]
    );
    assert_eq!(rows(&mut s, "SELECT count(*) FROM ta"), [[Value::Int(2)]]);
}
