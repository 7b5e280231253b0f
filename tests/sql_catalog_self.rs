//! The catalog relations describe themselves: every generated relation of pg_catalog and
//! information_schema has a pg_class row and pg_attribute rows whose names and types are
//! exactly the columns (and types) a query of the relation returns.

mod common;

use augur::{Session, Value};

fn rows(s: &mut Session, sql: &str) -> Vec<Vec<Value>> {
    s.execute(sql, &[]).unwrap().pop().unwrap().rows().to_vec()
}

fn text(v: &Value) -> String {
    v.to_text().unwrap_or_default()
}

#[test]
fn catalog_relations_are_in_pg_class_and_pg_attribute() {
    let (_dir, db) = common::open_nosync();
    let mut s = Session::new(db);
    s.execute("CREATE TABLE own_t (id int PRIMARY KEY, v varchar(5))", &[])
        .unwrap();
    let rels = rows(
        &mut s,
        "SELECT c.oid, n.nspname, c.relname, c.relkind, c.relnatts FROM pg_class c \
         JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE n.nspname IN ('pg_catalog', 'information_schema') ORDER BY c.oid",
    );
    let names: Vec<String> = rels
        .iter()
        .map(|r| format!("{}.{}", text(&r[1]), text(&r[2])))
        .collect();
    for want in [
        "pg_catalog.pg_class",
        "pg_catalog.pg_attribute",
        "pg_catalog.pg_type",
        "pg_catalog.pg_roles",
        "pg_catalog.pg_settings",
        "information_schema.tables",
        "information_schema.columns",
    ] {
        assert!(
            names.iter().any(|n| n == want),
            "{want} not in pg_class: {names:?}"
        );
    }
    for r in &rels {
        let (oid, nsp, rel, kind) = (&r[0], text(&r[1]), text(&r[2]), text(&r[3]));
        let view = nsp == "information_schema"
            || [
                "pg_roles",
                "pg_user",
                "pg_settings",
                "pg_tables",
                "pg_indexes",
                "pg_views",
            ]
            .contains(&rel.as_str());
        assert_eq!(kind, if view { "v" } else { "r" }, "{nsp}.{rel}");
        // What a query of the relation returns.
        let result = s
            .execute(&format!("SELECT * FROM {nsp}.{rel} LIMIT 0"), &[])
            .unwrap()
            .pop()
            .unwrap();
        let returned: Vec<(String, i64, i64)> = result
            .columns()
            .iter()
            .map(|(n, t)| (n.clone(), i64::from(t.pg_oid()), i64::from(t.typmod())))
            .collect();
        // What pg_attribute says of it.
        let described: Vec<(String, i64, i64)> = rows(
            &mut s,
            &format!(
                "SELECT attname, atttypid, atttypmod FROM pg_attribute \
                 WHERE attrelid = {} AND attnum > 0 ORDER BY attnum",
                text(oid)
            ),
        )
        .iter()
        .map(|a| match (&a[1], &a[2]) {
            (Value::Int(t), Value::Int(m)) => (text(&a[0]), *t, *m),
            other => panic!("{other:?}"),
        })
        .collect();
        assert_eq!(described, returned, "{nsp}.{rel}");
        assert_eq!(r[4], Value::Int(returned.len() as i64), "{nsp}.{rel} relnatts");
    }
    // Looked up by name as tools do.
    assert_eq!(
        rows(
            &mut s,
            "SELECT count(*) FROM pg_attribute WHERE attrelid = 'pg_class'::regclass AND attname = 'relkind'"
        ),
        vec![vec![Value::Int(1)]]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT 'information_schema.tables'::regclass::text, 'pg_class'::regclass::int8"
        ),
        vec![vec![Value::from("information_schema.tables"), Value::Int(1259)]]
    );
    // The user's table is still there, in public.
    assert_eq!(
        rows(
            &mut s,
            "SELECT attname FROM pg_attribute WHERE attrelid = 'own_t'::regclass AND attnum > 0 ORDER BY attnum"
        ),
        vec![vec![Value::from("id")], vec![Value::from("v")]]
    );
}

/// information_schema.tables lists every catalog relation pg_class has, in its schema, as a base
/// table (relkind 'r') or a view ('v'); pg_table_is_visible is false exactly for
/// information_schema's (not on the search path).
#[test]
fn catalog_relations_are_in_information_schema_tables() {
    let (_dir, db) = common::open_nosync();
    let mut s = Session::new(db);
    let listed = |s: &mut Session, sql: &str| -> Vec<String> {
        let mut v: Vec<String> = rows(s, sql)
            .iter()
            .map(|r| r.iter().map(text).collect::<Vec<_>>().join(" "))
            .collect();
        v.sort();
        v
    };
    let from_class = listed(
        &mut s,
        "SELECT n.nspname, c.relname, CASE c.relkind WHEN 'r' THEN 'BASE TABLE' ELSE 'VIEW' END, \
         pg_table_is_visible(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE n.nspname IN ('pg_catalog', 'information_schema') AND c.relkind IN ('r', 'v')",
    );
    let from_tables = listed(
        &mut s,
        "SELECT table_schema, table_name, table_type, table_schema = 'pg_catalog' \
         FROM information_schema.tables WHERE table_schema <> 'public'",
    );
    assert!(from_class.len() > 20, "{from_class:?}");
    assert_eq!(from_class, from_tables);
    assert!(from_class.contains(&"information_schema tables VIEW f".to_string()));
    assert!(from_class.contains(&"pg_catalog pg_class BASE TABLE t".to_string()));
}
