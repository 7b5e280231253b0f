//! Rule 3 of docs/BENCHMARKING.md: the memory budget counts every part a system keeps for the
//! data, Augur's index included, and the accounting adds them up against the budget.

use augur::{ColumnDef, DataType, Database, TableDef, Value};
use augur_bench::augur_side;
use augur_bench::budget::{account, describe, Part};

const MIB: u64 = 1 << 20;

#[test]
fn accounting_adds_charged_parts_and_reports_the_excess() {
    let parts = [
        Part::charged("row cache", 256 * MIB),
        Part::charged("block cache", 200 * MIB),
        Part::charged("index", 220 * MIB),
        Part::listed("memtables", 3 * MIB),
    ];
    let a = account(512 * MIB, &parts);
    assert_eq!(a.charged_bytes, 676 * MIB);
    assert_eq!(a.listed_bytes, 3 * MIB);
    assert_eq!(a.over_budget_bytes, 164 * MIB);
    assert!(!a.within_budget());
    let text = describe(&parts, &a);
    assert!(text.contains("164 MiB over the 512 MiB budget"), "{text}");
    assert!(text.contains("listed apart: memtables 3 MiB"), "{text}");

    let within = account(512 * MIB, &parts[..2]);
    assert_eq!(within.charged_bytes, 456 * MIB);
    assert_eq!(within.over_budget_bytes, 0);
    assert!(within.within_budget());
    assert!(describe(&parts[..2], &within).contains("within the 512 MiB budget"));
}

/// Augur's measured parts charge its primary index (the bytes the table reports), so a table
/// whose index does not fit beside full caches shows up over budget.
#[test]
fn augur_parts_charge_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let budget = 8usize << 20;
    let opts = augur_side::options(budget);
    assert_eq!(augur_side::configured_bytes(&opts), budget as u64);
    let db = Database::open(dir.path(), opts).unwrap();
    db.create_table(
        TableDef::new(
            "t",
            vec![
                ColumnDef::new("k", DataType::Int8),
                ColumnDef::new("v", DataType::Int8),
            ],
            &["k"],
        )
        .unwrap(),
    )
    .unwrap();
    let n = 200_000i64;
    db.bulk_insert(
        "t",
        (0..n).map(|k| vec![Value::Int(k * 7919 % 1_000_003), Value::Int(k)]),
    )
    .unwrap();
    let index = db.table("t").unwrap().index_heap_bytes() as u64;
    assert!(index > 0);
    let parts = augur_side::memory_parts(&db);
    let idx: Vec<&Part> = parts
        .iter()
        .filter(|p| p.name.starts_with("primary index of t"))
        .collect();
    assert_eq!(idx.len(), 1, "{parts:?}");
    assert!(idx[0].charged);
    assert_eq!(idx[0].bytes, index);
    let a = account(budget as u64, &parts);
    let charged: u64 = parts.iter().filter(|p| p.charged).map(|p| p.bytes).sum();
    assert_eq!(a.charged_bytes, charged);
    assert!(a.charged_bytes >= index);
    // A budget smaller than the index alone is exceeded by at least the difference.
    let tiny = account(index / 2, &parts);
    assert!(tiny.over_budget_bytes >= index - index / 2, "{tiny:?}");
    db.close().unwrap();
}
