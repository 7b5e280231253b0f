//! The join planner on many small tables: a 20-table equi-join of 10-row tables, its WHERE
//! equalities listed in shuffled order and the tables named in an order the predicates do not
//! connect, must be planned without a cross product (every join a hash or index-lookup join)
//! and must answer what a plain nested evaluation over the same data answers. The elapsed time
//! of the query is printed (`--nocapture`), never asserted: speed belongs in benchmarks.

mod common;

use std::time::Instant;

use augur::{Session, Value};

const TABLES: usize = 20;
const ROWS: i64 = 10;

/// A tiny deterministic generator (xorshift) for the data and the predicate tree.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn twenty_table_equi_join_has_no_cross_product() {
    let (_dir, db) = common::open_nosync();
    let mut s = Session::new(db);
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    // b[t][row]: column b of table t (a is 1..=10, the primary key).
    let mut b = vec![Vec::new(); TABLES + 1];
    for (t, bt) in b.iter_mut().enumerate().skip(1) {
        s.execute(
            &format!("CREATE TABLE t{t} (a{t} int PRIMARY KEY, b{t} int)"),
            &[],
        )
        .unwrap();
        let mut vals = Vec::new();
        for a in 1..=ROWS {
            let v = 1 + rng.below(ROWS as usize + 1) as i64;
            bt.push(v);
            vals.push(format!("({a}, {v})"));
        }
        s.execute(&format!("INSERT INTO t{t} VALUES {}", vals.join(", ")), &[])
            .unwrap();
    }
    // A random spanning tree: each table after the first (in a shuffled order) is tied to an
    // earlier one by b_parent = a_child.
    let mut order: Vec<usize> = (1..=TABLES).collect();
    for i in (1..order.len()).rev() {
        let j = rng.below(i + 1);
        order.swap(i, j);
    }
    let mut parent = [0usize; TABLES + 1];
    let mut preds = Vec::new();
    for i in 1..TABLES {
        let child = order[i];
        let p = order[rng.below(i)];
        parent[child] = p;
        preds.push(format!("b{p} = a{child}"));
    }
    for i in (1..preds.len()).rev() {
        let j = rng.below(i + 1);
        preds.swap(i, j);
    }
    let from: Vec<String> = (1..=TABLES).map(|t| format!("t{t}")).collect();
    let sql = format!(
        "SELECT count(*), sum(a{}) FROM {} WHERE {}",
        order[0],
        from.join(", "),
        preds.join(" AND ")
    );

    let plan = s.execute(&format!("EXPLAIN {sql}"), &[]).unwrap();
    let lines: Vec<String> = plan
        .last()
        .unwrap()
        .rows()
        .iter()
        .map(|r| match &r[0] {
            Value::Text(t) => t.clone(),
            v => panic!("EXPLAIN line {v:?}"),
        })
        .collect();
    let joins = lines.iter().filter(|l| l.contains(" join (")).count();
    assert_eq!(joins, TABLES - 1, "{}", lines.join("\n"));
    assert!(
        !lines.iter().any(|l| l.contains("nested loop")),
        "cross product planned:\n{}",
        lines.join("\n")
    );

    let t0 = Instant::now();
    let rows = s.execute(&sql, &[]).unwrap();
    let elapsed = t0.elapsed();
    println!("{TABLES}-table equi-join of {ROWS}-row tables: {elapsed:?}");

    // Expected: every key is the primary key of the child, so each root row extends along the
    // tree in exactly one way or not at all; count the roots that extend fully.
    let root = order[0];
    let mut count = 0i64;
    let mut sum = 0i64;
    for ra in 1..=ROWS {
        // value[t] = the a of table t's row in this combination.
        let mut a = [0i64; TABLES + 1];
        a[root] = ra;
        let mut ok = true;
        for &t in &order[1..] {
            let v = b[parent[t]][(a[parent[t]] - 1) as usize];
            if (1..=ROWS).contains(&v) {
                a[t] = v;
            } else {
                ok = false;
                break;
            }
        }
        if ok {
            count += 1;
            sum += ra;
        }
    }
    let got = &rows.last().unwrap().rows()[0];
    assert_eq!(got[0], Value::Int(count));
    assert_eq!(got[1], if count == 0 { Value::Null } else { Value::Int(sum) });
}
