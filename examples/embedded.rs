//! The embedded API end to end: open, create a table, write in transactions, read by key and
//! by range, handle a conflict, reopen.
//!
//! cargo run --release --example embedded -- /tmp/augur-example

use std::ops::Bound;

use augur::{ColumnDef, DataType, Database, Key, KeyRange, Options, TableDef, Value, ValueRef};

fn main() -> augur::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "/tmp/augur-example".into());
    let db = Database::open(&dir, Options::default())?;
    db.create_table_if_not_exists(TableDef::new(
        "accounts",
        vec![
            ColumnDef::new("id", DataType::Int8),
            ColumnDef::new("owner", DataType::Text(None)).not_null(),
            ColumnDef::new("balance", DataType::Int8),
        ],
        &["id"],
    )?)?;

    // Write 1000 accounts in one durable transaction (upsert: re-running the example is fine).
    db.transaction(|tx| {
        for id in 0..1000 {
            tx.upsert(
                "accounts",
                vec![Value::Int(id), format!("owner-{id}").into(), Value::Int(100)],
            )?;
        }
        Ok(())
    })?;

    // Point read through ALEX.
    let row = db.get("accounts", &Key::Int(42))?.expect("account 42 exists");
    println!("account 42: owner={} balance={}", row[1], row[2]);

    // Range read in key order.
    let tx = db.begin();
    let range = KeyRange {
        lo: Bound::Included(Key::Int(10)),
        hi: Bound::Excluded(Key::Int(15)),
    };
    for (key, row) in tx.scan("accounts", range.clone())? {
        println!("{key:?} -> {}", row[1]);
    }
    // The same range with each row lent in place (no owned row built): sum a column.
    let accounts = db.table("accounts")?;
    let mut total = 0;
    tx.scan_with(&accounts, &range, false, |_, row| {
        if let Some(ValueRef::Int(b)) = row.get(2)? {
            total += b;
        }
        Ok(true)
    })?;
    println!("balance of accounts 10..15: {total}");
    drop(tx);

    // Two transactions write the same key: the first committer wins. (Had `b` written before
    // `a` committed, it would have waited for `a`'s row lock, as in PostgreSQL.)
    let mut a = db.begin();
    let mut b = db.begin();
    a.update(
        "accounts",
        &Key::Int(1),
        vec![Value::Int(1), "a".into(), Value::Int(1)],
    )?;
    a.commit()?;
    // `b`'s snapshot predates `a`'s commit: its write is a lost update, refused.
    let second = b
        .update(
            "accounts",
            &Key::Int(1),
            vec![Value::Int(1), "b".into(), Value::Int(2)],
        )
        .and_then(|_| b.commit());
    match second {
        Err(e) => println!("second committer: SQLSTATE {} ({e})", e.sqlstate()),
        Ok(()) => unreachable!("snapshot isolation lets only one of them commit"),
    }

    // Retrying helper for conflicts.
    db.transaction_retry(5, |tx| {
        let r = tx.get("accounts", &Key::Int(2))?.expect("exists");
        let Value::Int(bal) = r[2] else { unreachable!() };
        tx.update(
            "accounts",
            &Key::Int(2),
            vec![Value::Int(2), r[1].clone(), Value::Int(bal + 1)],
        )?;
        Ok(())
    })?;

    println!(
        "index: {} ({} keys)",
        db.table("accounts")?.key_index_kind().name(),
        db.table("accounts")?.index_len()
    );
    db.close()?;
    Ok(())
}
