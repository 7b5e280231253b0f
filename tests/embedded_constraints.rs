//! The embedded API keeps the schema's constraints: FOREIGN KEY and CHECK constraints hold for
//! writes through `augur::Transaction` as for SQL statements (same SQLSTATEs and messages, same
//! referential actions), and a refused write leaves the data and the transaction as they were.

use augur::seam::CheckDef;
use augur::{ColumnDef, DataType, Database, Error, Key, Options, TableDef, Value};

const SCHEMA: &str = "
    CREATE TABLE customers (id int8 PRIMARY KEY, name text);
    CREATE TABLE orders (id int8 PRIMARY KEY,
                         customer int8 REFERENCES customers(id) ON DELETE CASCADE,
                         qty int8 CHECK (qty > 0));
    CREATE TABLE notes (id int8 PRIMARY KEY, customer int8 REFERENCES customers(id));
    CREATE TABLE holds (id int8 PRIMARY KEY,
                        customer int8 REFERENCES customers(id) ON DELETE RESTRICT);
    CREATE TABLE tags (id int8 PRIMARY KEY,
                       customer int8 REFERENCES customers(id) ON DELETE SET NULL);
    INSERT INTO customers VALUES (1, 'ann'), (2, 'bob'), (3, 'cy'), (4, 'di');
";

fn setup() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), Options::default()).unwrap();
    for stmt in SCHEMA.split(';').filter(|s| !s.trim().is_empty()) {
        db.execute(stmt, &[]).unwrap();
    }
    (dir, db)
}

fn int(v: i64) -> Value {
    Value::Int(v)
}

fn expect_err(r: Result<impl std::fmt::Debug, Error>, state: &str, message: &str) {
    match r {
        Ok(v) => panic!("expected {state}, got Ok({v:?})"),
        Err(e) => {
            assert_eq!(e.sqlstate().0, state, "{e}");
            assert!(e.to_string().contains(message), "{e}");
        }
    }
}

fn ids(db: &Database, sql: &str) -> Vec<Vec<Value>> {
    db.query(sql, &[]).unwrap()
}

#[test]
fn a_child_without_its_parent_is_refused() {
    let (_dir, db) = setup();
    let mut tx = db.begin();
    let msg = "insert or update on table \"orders\" violates foreign key constraint \"orders_customer_fkey\"";
    expect_err(tx.insert("orders", vec![int(10), int(99), int(1)]), "23503", msg);
    expect_err(tx.upsert("orders", vec![int(10), int(99), int(1)]), "23503", msg);
    // The transaction goes on: the refused rows are not in it, a valid one is written.
    assert!(tx.get("orders", &Key::Int(10)).unwrap().is_none());
    tx.insert("orders", vec![int(10), int(1), int(1)]).unwrap();
    expect_err(
        tx.update("orders", &Key::Int(10), vec![int(10), int(99), int(1)]),
        "23503",
        msg,
    );
    assert_eq!(tx.get("orders", &Key::Int(10)).unwrap().unwrap()[1], int(1));
    // A NULL reference references nothing (MATCH SIMPLE).
    tx.insert("orders", vec![int(11), Value::Null, int(1)]).unwrap();
    tx.commit().unwrap();
    assert_eq!(
        ids(&db, "SELECT id, customer FROM orders ORDER BY id"),
        vec![vec![int(10), int(1)], vec![int(11), Value::Null]]
    );
}

#[test]
fn a_check_constraint_refuses_rows_it_is_false_for() {
    let (_dir, db) = setup();
    let mut tx = db.begin();
    let msg = "new row for relation \"orders\" violates check constraint \"orders_qty_check\"";
    expect_err(tx.insert("orders", vec![int(20), int(1), int(0)]), "23514", msg);
    tx.insert("orders", vec![int(20), int(1), int(5)]).unwrap();
    expect_err(
        tx.update("orders", &Key::Int(20), vec![int(20), int(1), int(-1)]),
        "23514",
        msg,
    );
    expect_err(tx.upsert("orders", vec![int(20), int(1), int(-2)]), "23514", msg);
    // NULL passes a CHECK, as in PostgreSQL.
    tx.insert("orders", vec![int(21), int(1), Value::Null]).unwrap();
    tx.commit().unwrap();
    assert_eq!(
        ids(&db, "SELECT id, qty FROM orders ORDER BY id"),
        vec![vec![int(20), int(5)], vec![int(21), Value::Null]]
    );
}

#[test]
fn deleting_a_parent_applies_each_referencing_action() {
    let (_dir, db) = setup();
    db.execute(
        "INSERT INTO orders VALUES (1, 1, 1), (2, 1, 2), (3, 2, 3);
         INSERT INTO notes VALUES (1, 2);
         INSERT INTO holds VALUES (1, 3);
         INSERT INTO tags VALUES (1, 4), (2, 1)",
        &[],
    )
    .unwrap();
    let mut tx = db.begin();
    // CASCADE: customer 1's orders go with it; SET NULL: its tag loses the reference.
    assert!(tx.delete("customers", &Key::Int(1)).unwrap());
    // NO ACTION and RESTRICT: refused, and nothing of the delete stays.
    expect_err(
        tx.delete("customers", &Key::Int(2)),
        "23503",
        "update or delete on table \"customers\" violates foreign key constraint \"notes_customer_fkey\" on table \"notes\"",
    );
    expect_err(
        tx.delete("customers", &Key::Int(3)),
        "23503",
        "update or delete on table \"customers\" violates foreign key constraint \"holds_customer_fkey\" on table \"holds\"",
    );
    assert!(tx.get("customers", &Key::Int(2)).unwrap().is_some());
    assert!(tx.get("orders", &Key::Int(3)).unwrap().is_some());
    // Changing a referenced key is a delete of the old value for the referencing rows.
    expect_err(
        tx.update("customers", &Key::Int(3), vec![int(30), "cy".into()]),
        "23503",
        "violates foreign key constraint \"holds_customer_fkey\" on table \"holds\"",
    );
    assert!(tx.get("customers", &Key::Int(3)).unwrap().is_some());
    assert!(tx.delete("customers", &Key::Int(4)).unwrap());
    tx.commit().unwrap();
    assert_eq!(
        ids(&db, "SELECT id FROM customers ORDER BY id"),
        vec![vec![int(2)], vec![int(3)]]
    );
    assert_eq!(ids(&db, "SELECT id FROM orders ORDER BY id"), vec![vec![int(3)]]);
    assert_eq!(
        ids(&db, "SELECT id, customer FROM tags ORDER BY id"),
        vec![vec![int(1), Value::Null], vec![int(2), Value::Null]]
    );
    assert_eq!(ids(&db, "SELECT customer FROM notes"), vec![vec![int(2)]]);
}

#[test]
fn constraints_hold_after_reopen_without_any_sql() {
    let (dir, db) = setup();
    db.close().unwrap();
    drop(db);
    let db = Database::open(dir.path(), Options::default()).unwrap();
    let mut tx = db.begin();
    expect_err(
        tx.insert("orders", vec![int(1), int(7), int(1)]),
        "23503",
        "orders_customer_fkey",
    );
    expect_err(
        tx.insert("orders", vec![int(1), int(1), int(0)]),
        "23514",
        "orders_qty_check",
    );
    assert!(!tx.delete("customers", &Key::Int(9)).unwrap());
    tx.insert("orders", vec![int(1), int(1), int(1)]).unwrap();
    tx.commit().unwrap();
    assert_eq!(ids(&db, "SELECT id FROM orders"), vec![vec![int(1)]]);
}

#[test]
fn a_check_defined_through_the_embedded_api_is_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), Options::default()).unwrap();
    let mut def = TableDef::new(
        "gauges",
        vec![
            ColumnDef::new("k", DataType::Int8),
            ColumnDef::new("v", DataType::Int8),
        ],
        &["k"],
    )
    .unwrap();
    def.checks.push(CheckDef {
        name: "gauges_v_check".into(),
        expr: "v < 10".into(),
    });
    db.create_table(def.clone()).unwrap();
    let mut tx = db.begin();
    tx.insert("gauges", vec![int(1), int(9)]).unwrap();
    expect_err(
        tx.insert("gauges", vec![int(2), int(10)]),
        "23514",
        "new row for relation \"gauges\" violates check constraint \"gauges_v_check\"",
    );
    tx.commit().unwrap();
    // A constraint nothing can evaluate refuses the write instead of being skipped.
    def.name = "broken".into();
    def.checks[0] = CheckDef {
        name: "broken_check".into(),
        expr: "no_such_column > 1".into(),
    };
    db.create_table(def).unwrap();
    let mut tx = db.begin();
    expect_err(
        tx.insert("broken", vec![int(1), int(1)]),
        "42703",
        "no_such_column",
    );
    tx.commit().unwrap();
    assert!(db.get("broken", &Key::Int(1)).unwrap().is_none());
    assert_eq!(ids(&db, "SELECT k FROM gauges"), vec![vec![int(1)]]);
}

#[test]
fn set_null_checks_the_child_rows_it_changes() {
    let (_dir, db) = setup();
    db.execute(
        "CREATE TABLE flagged (id int8 PRIMARY KEY,
                               customer int8 REFERENCES customers(id) ON DELETE SET NULL,
                               kept bool, CHECK (customer IS NOT NULL OR NOT kept))",
        &[],
    )
    .unwrap();
    db.execute(
        "CREATE TABLE pinned (id int8 PRIMARY KEY,
                              customer int8 NOT NULL REFERENCES customers(id) ON DELETE SET NULL)",
        &[],
    )
    .unwrap();
    db.execute(
        "INSERT INTO orders VALUES (1, 2, 1);
         INSERT INTO flagged VALUES (1, 1, false), (2, 2, true);
         INSERT INTO pinned VALUES (1, 3)",
        &[],
    )
    .unwrap();
    let mut tx = db.begin();
    // Customer 2: its order would go (CASCADE), but its flagged row cannot lose the
    // reference; the whole delete is refused, the order included.
    expect_err(
        tx.delete("customers", &Key::Int(2)),
        "23514",
        "new row for relation \"flagged\" violates check constraint \"flagged_check\"",
    );
    expect_err(
        tx.delete("customers", &Key::Int(3)),
        "23502",
        "null value in column \"customer\" of relation \"pinned\" violates not-null constraint",
    );
    assert!(tx.get("customers", &Key::Int(2)).unwrap().is_some());
    assert!(tx.get("orders", &Key::Int(1)).unwrap().is_some());
    assert_eq!(tx.get("flagged", &Key::Int(2)).unwrap().unwrap()[1], int(2));
    // The transaction goes on: a delete whose actions pass is applied.
    assert!(tx.delete("customers", &Key::Int(1)).unwrap());
    tx.commit().unwrap();
    assert_eq!(
        ids(&db, "SELECT id, customer FROM flagged ORDER BY id"),
        vec![vec![int(1), Value::Null], vec![int(2), int(2)]]
    );
    // The SQL statement fails the same way, with the same error.
    let e = db.execute("DELETE FROM customers WHERE id = 2", &[]).unwrap_err();
    assert_eq!(e.sqlstate().0, "23514", "{e}");
    assert_eq!(ids(&db, "SELECT id FROM orders"), vec![vec![int(1)]]);
}

#[test]
fn updating_a_missing_row_is_not_a_constraint_error() {
    let (_dir, db) = setup();
    let mut tx = db.begin();
    // No row 50: nothing is written, so neither the CHECK (qty > 0) nor the missing parent
    // (customer 99) is an error, as an UPDATE whose WHERE matches no row.
    assert!(!tx
        .update("orders", &Key::Int(50), vec![int(50), int(99), int(0)])
        .unwrap());
    assert!(!tx
        .update("orders", &Key::Int(50), vec![int(50), Value::Null, Value::Null])
        .unwrap());
    assert!(!tx
        .update("customers", &Key::Int(50), vec![int(50), "x".into()])
        .unwrap());
    // An existing row is checked as before.
    tx.insert("orders", vec![int(50), int(1), int(1)]).unwrap();
    expect_err(
        tx.update("orders", &Key::Int(50), vec![int(50), int(1), int(0)]),
        "23514",
        "orders_qty_check",
    );
    tx.commit().unwrap();
}

#[test]
fn a_foreign_key_added_later_is_enforced_by_the_next_write() {
    // Whether a table is referenced is kept between writes; every definition change must
    // show in the next write.
    let (_dir, db) = setup();
    db.execute("CREATE TABLE shops (id int8 PRIMARY KEY)", &[])
        .unwrap();
    db.execute("INSERT INTO shops VALUES (1), (2), (3)", &[]).unwrap();
    let mut tx = db.begin();
    assert!(tx.delete("shops", &Key::Int(1)).unwrap());
    tx.commit().unwrap();
    db.execute(
        "CREATE TABLE stock (id int8 PRIMARY KEY, shop int8 REFERENCES shops(id))",
        &[],
    )
    .unwrap();
    db.execute("INSERT INTO stock VALUES (1, 2)", &[]).unwrap();
    let mut tx = db.begin();
    expect_err(tx.delete("shops", &Key::Int(2)), "23503", "stock_shop_fkey");
    tx.commit().unwrap();
    db.execute("ALTER TABLE stock DROP CONSTRAINT stock_shop_fkey", &[])
        .unwrap();
    let mut tx = db.begin();
    assert!(tx.delete("shops", &Key::Int(2)).unwrap());
    tx.commit().unwrap();
    db.execute("INSERT INTO shops VALUES (2)", &[]).unwrap();
    db.execute(
        "ALTER TABLE stock ADD CONSTRAINT stock_shop FOREIGN KEY (shop) REFERENCES shops(id)",
        &[],
    )
    .unwrap();
    let mut tx = db.begin();
    expect_err(tx.delete("shops", &Key::Int(2)), "23503", "stock_shop");
    tx.commit().unwrap();
    db.execute("DROP TABLE stock", &[]).unwrap();
    let mut tx = db.begin();
    assert!(tx.delete("shops", &Key::Int(2)).unwrap());
    assert!(tx.delete("shops", &Key::Int(3)).unwrap());
    tx.commit().unwrap();
    assert!(ids(&db, "SELECT id FROM shops").is_empty());
}
