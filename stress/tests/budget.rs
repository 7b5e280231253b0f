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

/// Augur's measured parts charge its indexes as the engine counts them (`Database::memory()`,
/// `Table::index_bytes`), its caches by the bytes they hold, and stay within the engine's own
/// charged total, which the budget bounds; an index larger than a budget shows as over it.
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
    let ib = db.table("t").unwrap().index_bytes();
    let index = (ib.heap + ib.mapped_live) as u64;
    assert!(index > 0);
    let parts = augur_side::memory_parts(&db);
    let idx: u64 = parts
        .iter()
        .filter(|p| p.name.starts_with("primary index"))
        .inspect(|p| assert!(p.charged, "{p:?}"))
        .map(|p| p.bytes)
        .sum();
    assert_eq!(idx, index, "{parts:?}");
    // Every part of Database::memory() appears, and nothing is charged twice: the harness's
    // charged sum is the engine's with the caches' unused capacity taken out.
    let m = db.memory();
    assert_eq!(m.budget, Some(budget as u64));
    let a = account(budget as u64, &parts);
    let charged: u64 = parts.iter().filter(|p| p.charged).map(|p| p.bytes).sum();
    assert_eq!(a.charged_bytes, charged);
    assert_eq!(
        a.charged_bytes,
        m.charged - (m.block_cache - m.block_cache_used) - (m.row_cache - m.row_cache_used),
        "{parts:?} vs {m:?}"
    );
    assert_eq!(a.listed_bytes, m.memtables + m.mapped_files);
    // The engine fits its caches to what the index leaves: within the budget.
    assert!(m.charged <= budget as u64, "{m:?}");
    assert!(a.within_budget(), "{a:?}");
    // A budget smaller than the index alone is exceeded by at least the difference.
    let tiny = account(index / 2, &parts);
    assert!(tiny.over_budget_bytes >= index - index / 2, "{tiny:?}");
    db.close().unwrap();
}
