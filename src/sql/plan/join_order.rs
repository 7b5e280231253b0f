//! Join order for a FROM list of several relations (`FROM a, b, c WHERE ...`): each WHERE
//! conjunct over one relation is pushed into it (choosing its access path), and the relations
//! are joined greedily, always next to a relation a conjunct connects to those already joined
//! (so that no cross product is formed while a predicate connects the tables), the cheapest
//! such step first, from the starting relation that makes the whole order cheapest. Each connecting conjunct becomes the condition of the first join where its columns
//! are all present (a hash join or an index-lookup join, see [`super::access::make_join`]).

use super::access::{apply_filter, conjoin, make_join, split_and};
use super::{Access, Plan};
use crate::seam::EngineTable;
use crate::sql::expr::{CmpOp, Expr};

/// A rough row count for ordering joins: table sizes from the primary index, cut down by
/// the access path and filters.
pub fn estimate(p: &Plan) -> f64 {
    match p {
        Plan::Scan(s) => {
            let n = s.table.index_len().max(1) as f64;
            let n = match &s.access {
                Access::Point(_) => 1.0,
                Access::In(l) => l.len() as f64,
                Access::Full => n,
                Access::Prefix(_) | Access::Index { .. } | Access::Range { .. } => (n * 0.1).max(1.0),
            };
            if s.filter.is_some() {
                (n * 0.3).max(1.0)
            } else {
                n
            }
        }
        Plan::Values(rows) => rows.len() as f64,
        Plan::Filter(p, _) => (estimate(p) * 0.3).max(1.0),
        Plan::Project(p, _) | Plan::Sort(p, _) | Plan::Distinct(p, _) => estimate(p),
        Plan::Limit { input, .. } => estimate(input),
        Plan::Aggregate { input, groups, .. } => {
            if groups.is_empty() {
                1.0
            } else {
                (estimate(input) * 0.1).max(1.0)
            }
        }
        Plan::IndexMinMax { .. } | Plan::IndexCount { .. } => 1.0,
        Plan::Join { left, right, .. } => (estimate(left) * estimate(right) * 0.1).max(1.0),
        Plan::SemiJoin { left, .. } => estimate(left),
        Plan::FullJoin { left, right, .. } => {
            (estimate(left) * estimate(right) * 0.1).max(estimate(left) + estimate(right))
        }
        Plan::SetOp { left, right, .. } => estimate(left) + estimate(right),
        Plan::Window { input, .. } => estimate(input),
        Plan::ProjectSet { input, .. } => estimate(input) * 10.0,
        Plan::Lateral { left, .. } => estimate(left) * 10.0,
        Plan::Recursive { .. } | Plan::WorkTable { .. } => 1000.0,
    }
}

/// Joins `rels` (a FROM list, in order) under the predicate `pred` over their concatenated
/// rows. Returns a plan producing rows in the FROM list's column layout, and the conjuncts
/// left to filter its output (those reading no column).
pub fn plan_joins(rels: Vec<Plan>, pred: Option<Expr>) -> (Plan, Vec<Expr>) {
    let n = rels.len();
    let widths: Vec<usize> = rels.iter().map(Plan::width).collect();
    let mut offs = Vec::with_capacity(n);
    let mut total = 0;
    for w in &widths {
        offs.push(total);
        total += w;
    }
    let rel_of = |col: usize| offs.iter().rposition(|&o| o <= col).unwrap_or(0);
    let mut conj = Vec::new();
    if let Some(p) = pred {
        split_and(p, &mut conj);
    }
    let mut rest = Vec::new();
    let mut local: Vec<Vec<Expr>> = vec![Vec::new(); n];
    let mut multi: Vec<(Expr, Vec<usize>)> = Vec::new();
    for c in conj {
        let mut set: Vec<usize> = c.columns().into_iter().map(rel_of).collect();
        set.sort_unstable();
        set.dedup();
        match set.as_slice() {
            [] => rest.push(c),
            [r] => {
                let r = *r;
                local[r].push(c.shift_cols(offs[r]));
            }
            _ => multi.push((c, set)),
        }
    }
    let mut plans: Vec<Option<Plan>> = rels
        .into_iter()
        .zip(local)
        .map(|(p, l)| {
            Some(match conjoin(l) {
                Some(f) => apply_filter(p, f),
                None => p,
            })
        })
        .collect();
    let est: Vec<f64> = plans.iter().map(|p| p.as_ref().map_or(0.0, estimate)).collect();
    let lookup_col: Vec<Option<usize>> = plans
        .iter()
        .zip(&offs)
        .map(|(p, &o)| match p {
            Some(Plan::Scan(sc)) if matches!(sc.access, Access::Full) => sc.pk_col().map(|c| o + c),
            _ => None,
        })
        .collect();
    // The share of its table's rows each relation keeps after its own filters.
    let sel: Vec<f64> = plans
        .iter()
        .zip(&est)
        .map(|(p, &e)| match p {
            Some(Plan::Scan(sc)) => (e / sc.table.index_len().max(1) as f64).min(1.0),
            _ => 1.0,
        })
        .collect();
    let order = (0..n)
        .map(|start| greedy(start, &est, &sel, &lookup_col, &multi, &rel_of))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(o, _)| o)
        .unwrap_or_default();

    let mut joined = vec![false; n];
    let mut used = vec![false; multi.len()];
    let mut new_off = vec![0usize; n];
    let mut cur: Option<Plan> = None;
    let mut width = 0;
    for r in order {
        joined[r] = true;
        new_off[r] = width;
        width += widths[r];
        let plan = plans[r].take().expect("each relation joins once");
        cur = Some(match cur.take() {
            None => plan,
            Some(left) => {
                let mut conds = Vec::new();
                for (i, (c, set)) in multi.iter().enumerate() {
                    if !used[i] && set.iter().all(|&s| joined[s]) {
                        used[i] = true;
                        conds.push(remap(c.clone(), &offs, &new_off, &rel_of));
                    }
                }
                make_join(left, plan, false, conjoin(conds))
            }
        });
    }
    let plan = cur.unwrap_or(Plan::Values(vec![vec![]]));
    let identity = (0..n).all(|r| new_off[r] == offs[r]);
    let plan = if identity {
        plan
    } else {
        let cols = (0..total)
            .map(|i| {
                let r = rel_of(i);
                Expr::Col(new_off[r] + i - offs[r])
            })
            .collect();
        Plan::Project(Box::new(plan), cols)
    };
    (plan, rest)
}

/// Moves column references from the FROM list's layout to the join order's.
fn remap(e: Expr, offs: &[usize], new_off: &[usize], rel_of: &dyn Fn(usize) -> usize) -> Expr {
    e.rewrite(&mut |x| {
        Ok(match x {
            Expr::Col(i) => {
                let r = rel_of(i);
                Expr::Col(new_off[r] + i - offs[r])
            }
            x => x,
        })
    })
    .expect("infallible")
}

/// The greedy join order starting from relation `start`, and its estimated cost (rows
/// produced and probed along the way): each step takes, among the relations a conjunct
/// connects to those joined so far, the cheapest to join. An index lookup on its primary key
/// costs one probe per row so far and keeps the share of rows its own filters keep; a hash
/// join costs the rows of both sides; a relation no conjunct connects (taken only when none
/// is connected) costs a cross product.
fn greedy(
    start: usize,
    est: &[f64],
    sel: &[f64],
    lookup_col: &[Option<usize>],
    multi: &[(Expr, Vec<usize>)],
    rel_of: &dyn Fn(usize) -> usize,
) -> (Vec<usize>, f64) {
    let n = est.len();
    let mut joined = vec![false; n];
    joined[start] = true;
    let mut order = vec![start];
    let mut rows = est[start];
    let mut cost = est[start];
    while order.len() < n {
        let mut best: Option<(usize, f64, f64)> = None;
        for r in (0..n).filter(|&r| !joined[r]) {
            let conds: Vec<&Expr> = multi
                .iter()
                .filter(|(_, set)| set.contains(&r) && set.iter().all(|&s| s == r || joined[s]))
                .map(|(c, _)| c)
                .collect();
            let (step, out) = if conds.is_empty() {
                (rows * est[r], rows * est[r])
            } else if conds.iter().any(|c| is_key_lookup(c, lookup_col[r], r, rel_of)) {
                (rows, rows * sel[r])
            } else {
                (rows + est[r], rows.max(est[r]))
            };
            // A connected relation always beats an unconnected one.
            let rank = if conds.is_empty() { step + 1e18 } else { step };
            if best.is_none_or(|(_, b, _)| rank < b) {
                best = Some((r, rank, out));
            }
        }
        let Some((r, rank, out)) = best else { break };
        joined[r] = true;
        order.push(r);
        cost += rank.min(1e18) + out;
        rows = out;
    }
    (order, cost)
}

/// Whether conjunct `c` is `pk = expr` for relation `r`'s primary-key column `pk` (in the FROM
/// list's layout) with `expr` over other relations only: an index-lookup join.
fn is_key_lookup(c: &Expr, pk: Option<usize>, r: usize, rel_of: &dyn Fn(usize) -> usize) -> bool {
    let (Some(pk), Expr::Cmp(CmpOp::Eq, a, b)) = (pk, c) else {
        return false;
    };
    let other = match (a.as_ref(), b.as_ref()) {
        (Expr::Col(x), o) | (o, Expr::Col(x)) if *x == pk => o,
        _ => return false,
    };
    let cols = other.columns();
    !cols.is_empty() && cols.iter().all(|&i| rel_of(i) != r)
}
