//! The embedded API keeps the schema's constraints: FOREIGN KEY and CHECK constraints hold for
//! writes through `augur::Transaction` as for SQL statements (same SQLSTATEs and messages, same
//! referential actions), and a refused write leaves the data and the transaction as they were.

use augur::seam::{BatchError, CheckDef};
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
    sql(&db, SCHEMA);
    (dir, db)
}

/// Runs SQL statements (separated by semicolons) through the SQL layer.
fn sql(db: &Database, statements: &str) {
    for stmt in statements.split(';').filter(|s| !s.trim().is_empty()) {
        db.execute(stmt, &[]).unwrap();
    }
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

/// The row a refused batch names, once its error is checked to be `state`.
fn failed_row(r: Result<u64, BatchError>, state: &str) -> Option<usize> {
    let e = r.expect_err("the batch should be refused");
    assert_eq!(e.error.sqlstate().0, state, "{}", e.error);
    e.row
}

/// Order rows (id, customer, qty).
fn orders_rows(rows: &[(i64, i64, i64)]) -> Vec<Vec<Value>> {
    rows.iter()
        .map(|&(id, c, q)| vec![int(id), int(c), int(q)])
        .collect()
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

/// Microseconds since 1970-01-01 UTC, as timestamptz values hold them.
fn micros_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as i64
}

#[test]
fn now_in_an_embedded_check_is_the_transaction_start() {
    let (_dir, db) = setup();
    sql(
        &db,
        "CREATE TABLE stamped (id int8 PRIMARY KEY, at timestamptz CHECK (at <= now()))",
    );
    let mut tx = db.begin();
    let before = micros_now();
    std::thread::sleep(std::time::Duration::from_millis(30));
    // A time before the transaction began passes; one after it is later than now(), which
    // is the transaction's start (as in a SQL transaction block), not the time of the write.
    tx.insert("stamped", vec![int(1), Value::TimestampTz(before - 1_000_000)])
        .unwrap();
    let later = micros_now();
    expect_err(
        tx.insert("stamped", vec![int(2), Value::TimestampTz(later)]),
        "23514",
        "stamped_at_check",
    );
    tx.commit().unwrap();
    // A new transaction starts later: the same value now passes.
    let mut tx = db.begin();
    tx.insert("stamped", vec![int(2), Value::TimestampTz(later)])
        .unwrap();
    tx.commit().unwrap();
    assert_eq!(ids(&db, "SELECT count(*) FROM stamped"), vec![vec![int(2)]]);
}

#[test]
fn deleting_a_parent_applies_each_referencing_action() {
    let (_dir, db) = setup();
    sql(
        &db,
        "INSERT INTO orders VALUES (1, 1, 1), (2, 1, 2), (3, 2, 3);
         INSERT INTO notes VALUES (1, 2);
         INSERT INTO holds VALUES (1, 3);
         INSERT INTO tags VALUES (1, 4), (2, 1)",
    );
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
    sql(
        &db,
        "CREATE TABLE flagged (id int8 PRIMARY KEY,
                               customer int8 REFERENCES customers(id) ON DELETE SET NULL,
                               kept bool, CHECK (customer IS NOT NULL OR NOT kept))",
    );
    sql(
        &db,
        "CREATE TABLE pinned (id int8 PRIMARY KEY,
                              customer int8 NOT NULL REFERENCES customers(id) ON DELETE SET NULL)",
    );
    sql(
        &db,
        "INSERT INTO orders VALUES (1, 2, 1);
         INSERT INTO flagged VALUES (1, 1, false), (2, 2, true);
         INSERT INTO pinned VALUES (1, 3)",
    );
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
    sql(&db, "CREATE TABLE shops (id int8 PRIMARY KEY)");
    sql(&db, "INSERT INTO shops VALUES (1), (2), (3)");
    let mut tx = db.begin();
    assert!(tx.delete("shops", &Key::Int(1)).unwrap());
    tx.commit().unwrap();
    sql(
        &db,
        "CREATE TABLE stock (id int8 PRIMARY KEY, shop int8 REFERENCES shops(id))",
    );
    sql(&db, "INSERT INTO stock VALUES (1, 2)");
    let mut tx = db.begin();
    expect_err(tx.delete("shops", &Key::Int(2)), "23503", "stock_shop_fkey");
    tx.commit().unwrap();
    sql(&db, "ALTER TABLE stock DROP CONSTRAINT stock_shop_fkey");
    let mut tx = db.begin();
    assert!(tx.delete("shops", &Key::Int(2)).unwrap());
    tx.commit().unwrap();
    sql(&db, "INSERT INTO shops VALUES (2)");
    sql(
        &db,
        "ALTER TABLE stock ADD CONSTRAINT stock_shop FOREIGN KEY (shop) REFERENCES shops(id)",
    );
    let mut tx = db.begin();
    expect_err(tx.delete("shops", &Key::Int(2)), "23503", "stock_shop");
    tx.commit().unwrap();
    sql(&db, "DROP TABLE stock");
    let mut tx = db.begin();
    assert!(tx.delete("shops", &Key::Int(2)).unwrap());
    assert!(tx.delete("shops", &Key::Int(3)).unwrap());
    tx.commit().unwrap();
    assert!(ids(&db, "SELECT id FROM shops").is_empty());
}

#[test]
fn writes_through_a_table_handle_enforce_the_constraints() {
    let (_dir, db) = setup();
    sql(
        &db,
        "INSERT INTO orders VALUES (1, 1, 1); INSERT INTO notes VALUES (1, 2)",
    );
    let (customers, orders) = (db.table("customers").unwrap(), db.table("orders").unwrap());
    let mut tx = db.begin();
    expect_err(
        tx.insert_in(&orders, vec![int(2), int(99), int(1)]),
        "23503",
        "insert or update on table \"orders\" violates foreign key constraint \"orders_customer_fkey\"",
    );
    expect_err(
        tx.insert_in(&orders, vec![int(2), int(1), int(0)]),
        "23514",
        "orders_qty_check",
    );
    expect_err(
        tx.update_in(&orders, &Key::Int(1), vec![int(1), int(99), int(1)]),
        "23503",
        "orders_customer_fkey",
    );
    expect_err(
        tx.update_in(&orders, &Key::Int(1), vec![int(1), int(1), int(-5)]),
        "23514",
        "orders_qty_check",
    );
    // NO ACTION (notes): refused; CASCADE (orders): applied.
    expect_err(
        tx.delete_in(&customers, &Key::Int(2)),
        "23503",
        "violates foreign key constraint \"notes_customer_fkey\" on table \"notes\"",
    );
    assert!(tx.delete_in(&customers, &Key::Int(1)).unwrap());
    assert!(tx.get("orders", &Key::Int(1)).unwrap().is_none());
    tx.insert_in(&orders, vec![int(3), int(3), int(7)]).unwrap();
    tx.commit().unwrap();
    assert_eq!(
        ids(&db, "SELECT id, customer FROM orders"),
        vec![vec![int(3), int(3)]]
    );
    assert_eq!(
        ids(&db, "SELECT id FROM customers ORDER BY id"),
        vec![vec![int(2)], vec![int(3)], vec![int(4)]]
    );
}

#[test]
fn the_seam_writes_enforce_the_constraints() {
    use augur::seam::{AnyTable, AnyTxn, EngineTxn};
    let (_dir, db) = setup();
    let orders = AnyTable::from(db.table("orders").unwrap());
    let mut tx = AnyTxn::from(db.begin());
    expect_err(
        tx.insert_in(&orders, vec![int(1), int(99), int(1)]),
        "23503",
        "orders_customer_fkey",
    );
    expect_err(
        tx.insert_in(&orders, vec![int(1), int(1), int(0)]),
        "23514",
        "orders_qty_check",
    );
    let batch = orders_rows(&[(1, 1, 1), (2, 99, 1)]);
    assert_eq!(failed_row(tx.insert_batch_in(&orders, batch), "23503"), Some(1));
    tx.insert_in(&orders, vec![int(1), int(1), int(1)]).unwrap();
    tx.commit().unwrap();
    assert_eq!(ids(&db, "SELECT id FROM orders"), vec![vec![int(1)]]);
}

#[test]
fn a_batch_is_checked_as_one_statement() {
    let (_dir, db) = setup();
    sql(
        &db,
        "CREATE TABLE tree (id int8 PRIMARY KEY, up int8 REFERENCES tree(id), CHECK (id > 0))",
    );
    let (orders, tree) = (db.table("orders").unwrap(), db.table("tree").unwrap());
    let mut tx = db.begin();
    // The earliest row a CHECK refuses; nothing of the batch is written.
    let batch = orders_rows(&[(1, 1, 1), (2, 99, 1), (3, 1, 0)]);
    assert_eq!(failed_row(tx.insert_batch_in(&orders, batch), "23514"), Some(2));
    // Then the parents, once the batch is in: the earliest row without one.
    let batch = orders_rows(&[(1, 1, 1), (2, 1, 1), (3, 99, 1)]);
    assert_eq!(failed_row(tx.insert_batch_in(&orders, batch), "23503"), Some(2));
    assert!(tx.get("orders", &Key::Int(1)).unwrap().is_none());
    // Rows of a batch may reference one another, in any order.
    let rows = vec![
        vec![int(3), int(2)],
        vec![int(2), int(1)],
        vec![int(1), Value::Null],
    ];
    assert_eq!(tx.insert_batch_in(&tree, rows).unwrap(), 3);
    let batch = vec![vec![int(4), int(9)]];
    assert_eq!(failed_row(tx.insert_batch_in(&tree, batch), "23503"), Some(0));
    tx.commit().unwrap();
    assert_eq!(
        ids(&db, "SELECT id, up FROM tree ORDER BY id"),
        vec![
            vec![int(1), Value::Null],
            vec![int(2), int(1)],
            vec![int(3), int(2)]
        ]
    );
    assert!(ids(&db, "SELECT id FROM orders").is_empty());
}

#[test]
fn bulk_insert_keeps_the_constraints() {
    let (_dir, db) = setup();
    let rows =
        |bad: Value| (1..=100).map(move |k| vec![int(k), if k == 50 { bad.clone() } else { int(1) }, int(1)]);
    expect_err(
        db.bulk_insert("orders", rows(int(99))),
        "23503",
        "orders_customer_fkey",
    );
    let checked = (1..=100).map(|k| vec![int(k), int(1), int(if k == 70 { 0 } else { 1 })]);
    expect_err(db.bulk_insert("orders", checked), "23514", "orders_qty_check");
    assert!(ids(&db, "SELECT id FROM orders").is_empty());
    assert_eq!(db.bulk_insert("orders", rows(Value::Null)).unwrap(), 100);
    assert_eq!(ids(&db, "SELECT count(*) FROM orders"), vec![vec![int(100)]]);
}

#[test]
fn on_update_and_set_default_actions_through_the_embedded_api() {
    let (_dir, db) = setup();
    sql(
        &db,
        "CREATE TABLE lines (customer int8 REFERENCES customers(id) ON UPDATE CASCADE, n int8,
                             PRIMARY KEY (customer, n));
         CREATE TABLE fallback (id int8 PRIMARY KEY,
                                customer int8 DEFAULT 4 REFERENCES customers(id)
                                    ON DELETE SET DEFAULT ON UPDATE SET NULL);
         INSERT INTO lines VALUES (1, 1), (1, 2), (2, 1);
         INSERT INTO fallback VALUES (1, 1), (2, 2), (3, 3)",
    );
    let mut tx = db.begin();
    // A key change cascades into the composite key of lines (the rows move) and clears
    // fallback's reference.
    assert!(tx
        .update("customers", &Key::Int(1), vec![int(10), "ann".into()])
        .unwrap());
    // Deleting customer 3 sets fallback's reference to its default, 4.
    assert!(tx.delete("customers", &Key::Int(3)).unwrap());
    tx.commit().unwrap();
    assert_eq!(
        ids(&db, "SELECT customer, n FROM lines ORDER BY customer, n"),
        vec![vec![int(2), int(1)], vec![int(10), int(1)], vec![int(10), int(2)]]
    );
    assert_eq!(
        ids(&db, "SELECT id, customer FROM fallback ORDER BY id"),
        vec![
            vec![int(1), Value::Null],
            vec![int(2), int(2)],
            vec![int(3), int(4)]
        ]
    );
    // Deleting customer 4, the default itself, leaves the row referencing it: refused.
    let mut tx = db.begin();
    expect_err(
        tx.delete("customers", &Key::Int(4)),
        "23503",
        "update or delete on table \"customers\" violates foreign key constraint \"fallback_customer_fkey\" on table \"fallback\"",
    );
    // A default no customer has: the changed row has no parent.
    drop(tx);
    sql(&db, "ALTER TABLE fallback ALTER COLUMN customer SET DEFAULT 77");
    let mut tx = db.begin();
    expect_err(
        tx.delete("customers", &Key::Int(2)),
        "23503",
        "insert or update on table \"fallback\" violates foreign key constraint \"fallback_customer_fkey\"",
    );
    assert_eq!(tx.get("fallback", &Key::Int(2)).unwrap().unwrap()[1], int(2));
    tx.commit().unwrap();
}

#[test]
fn a_parent_delete_finds_children_by_an_index_only_when_it_holds_them_all() {
    let (_dir, db) = setup();
    // items: an index on (customer) finds the referencing rows; extras: an index on
    // (customer, tag) with tag nullable has no entry for a row whose tag is NULL, so it must
    // not be used; pairs: a composite key found by an index with its columns swapped.
    sql(
        &db,
        "CREATE TABLE items (id int8 PRIMARY KEY, customer int8 REFERENCES customers(id) ON DELETE CASCADE);
         CREATE INDEX items_customer ON items (customer);
         CREATE TABLE extras (id int8 PRIMARY KEY, customer int8 REFERENCES customers(id), tag text);
         CREATE INDEX extras_customer_tag ON extras (customer, tag);
         CREATE TABLE owners (a int8, b text, PRIMARY KEY (a, b));
         CREATE TABLE pairs (id int8 PRIMARY KEY, a int8, b text,
                             FOREIGN KEY (a, b) REFERENCES owners ON DELETE CASCADE ON UPDATE CASCADE);
         CREATE INDEX pairs_b_a ON pairs (b, a);
         INSERT INTO owners VALUES (1, 'x'), (1, 'y'), (2, 'x');
         INSERT INTO pairs VALUES (1, 1, 'x'), (2, 1, 'y'), (3, 2, 'x'), (4, 1, 'x');
         INSERT INTO items VALUES (1, 1), (2, 1), (3, 2), (4, 3);
         INSERT INTO extras VALUES (1, 3, NULL), (2, 4, 'kept')",
    );
    let mut tx = db.begin();
    assert!(tx.delete("customers", &Key::Int(1)).unwrap());
    expect_err(
        tx.delete("customers", &Key::Int(3)),
        "23503",
        "extras_customer_fkey",
    );
    expect_err(
        tx.delete("customers", &Key::Int(4)),
        "23503",
        "extras_customer_fkey",
    );
    let owners = db.table("owners").unwrap().def();
    let owner = |a: i64, b: &str| owners.key_from_values(&[int(a), b.into()]).unwrap();
    assert!(tx.delete("owners", &owner(1, "x")).unwrap());
    assert!(tx
        .update("owners", &owner(2, "x"), vec![int(5), "z".into()])
        .unwrap());
    tx.commit().unwrap();
    assert_eq!(
        ids(&db, "SELECT id, customer FROM items ORDER BY id"),
        vec![vec![int(3), int(2)], vec![int(4), int(3)]]
    );
    assert_eq!(
        ids(&db, "SELECT id, a, b FROM pairs ORDER BY id"),
        vec![vec![int(2), int(1), "y".into()], vec![int(3), int(5), "z".into()]]
    );
    // The SQL statements find the same rows.
    expect_err(
        db.execute("DELETE FROM customers WHERE id = 3", &[]),
        "23503",
        "extras_customer_fkey",
    );
    assert_eq!(db.execute("DELETE FROM customers WHERE id = 2", &[]).unwrap(), 1);
    assert_eq!(ids(&db, "SELECT id FROM items ORDER BY id"), vec![vec![int(4)]]);
}

#[test]
fn a_child_committed_after_the_snapshot_blocks_its_parent_delete() {
    // The referencing rows are the newest committed ones, found by index or by scan: a child
    // another transaction committed after this one began still references the parent.
    let (_dir, db) = setup();
    sql(
        &db,
        "CREATE TABLE indexed (id int8 PRIMARY KEY, customer int8 REFERENCES customers(id));
         CREATE INDEX indexed_customer ON indexed (customer)",
    );
    for (child, parent) in [("indexed", 1), ("notes", 2)] {
        let mut tx = db.begin();
        assert!(tx.get("customers", &Key::Int(parent)).unwrap().is_some());
        let mut other = db.begin();
        other.insert(child, vec![int(1), int(parent)]).unwrap();
        other.commit().unwrap();
        expect_err(tx.delete("customers", &Key::Int(parent)), "23503", child);
        tx.commit().unwrap();
    }
    assert_eq!(
        ids(&db, "SELECT id FROM customers ORDER BY id"),
        vec![vec![int(1)], vec![int(2)], vec![int(3)], vec![int(4)]]
    );
}
