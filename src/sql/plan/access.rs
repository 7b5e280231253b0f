//! The planner's access-path choice: predicates pushed down into scans and join sides, then per
//! scan an ALEX point lookup, IN list, key range or prefix, or a secondary index; joins that
//! fix the inner table's key become index-lookup joins.

use super::join_order::estimate;
use super::{Access, AggFunc, AggSpec, Lookup, Plan, Scan};
use crate::engine::TableDef;
use crate::seam::EngineTable;
use crate::sql::expr::{has_subquery, CmpOp, Expr, Func};
use crate::types::{DataType, Value};

pub(crate) fn split_and(e: Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::And(a, b) => {
            split_and(*a, out);
            split_and(*b, out);
        }
        e => out.push(e),
    }
}

pub fn conjoin(v: Vec<Expr>) -> Option<Expr> {
    v.into_iter().reduce(|a, b| Expr::And(Box::new(a), Box::new(b)))
}

/// Builds a join, using an index-lookup join when the ON condition fixes the right table's
/// primary key from the left row, or the column of a single-column secondary index when the
/// left side is estimated small against the table.
pub fn make_join(left: Plan, right: Plan, left_join: bool, on: Option<Expr>) -> Plan {
    let lw = left.width();
    let mut lookup = None;
    let mut on = on;
    let mut right = right;
    if let (Plan::Scan(sc), Some(cond)) = (&mut right, &on) {
        // A filter pushed into the inner scan (inner joins only) may move into the condition.
        let movable = sc.filter.is_none() || !left_join;
        if let (Access::Full, true) = (&sc.access, movable) {
            let mut conj = Vec::new();
            split_and(cond.clone(), &mut conj);
            // `right.col = expr over the left row` for the inner table's column `col`.
            let key_for = |col: usize| {
                conj.iter().find_map(|c| {
                    let Expr::Cmp(CmpOp::Eq, a, b) = c else {
                        return None;
                    };
                    let key = match (a.as_ref(), b.as_ref()) {
                        (Expr::Col(x), other) | (other, Expr::Col(x)) if *x == lw + col => other,
                        _ => return None,
                    };
                    let cols = key.columns();
                    (!cols.is_empty() && cols.iter().all(|&i| i < lw)).then(|| key.clone())
                })
            };
            let mut found = sc.pk_col().and_then(&key_for).map(|k| (k, None));
            // A single-column secondary index, when the estimate says the left side is small
            // against the table: one index probe per left row instead of reading the whole
            // table into a hash table. The condition is still checked on each pair.
            if found.is_none() && estimate(&left) * 4.0 <= sc.table.index_len() as f64 {
                found = sc
                    .def
                    .indexes
                    .iter()
                    .enumerate()
                    .find_map(|(ix, idx)| match idx.columns[..] {
                        [col] => key_for(col).map(|k| (k, Some(ix))),
                        _ => None,
                    });
            }
            if let Some((key, index)) = found {
                lookup = Some(Lookup {
                    table: sc.table.clone(),
                    def: sc.def.clone(),
                    alias: sc.alias.clone(),
                    key,
                    index,
                });
            }
            if lookup.is_some() {
                if let Some(f) = sc.filter.take() {
                    let f = f
                        .rewrite(&mut |e| {
                            Ok(match e {
                                Expr::Col(i) => Expr::Col(i + lw),
                                e => e,
                            })
                        })
                        .expect("infallible");
                    on = conjoin(on.into_iter().chain(std::iter::once(f)).collect());
                }
            }
        }
    }
    if on
        .as_ref()
        .is_some_and(|e| matches!(e, Expr::Lit(Value::Bool(true))))
    {
        on = None;
    }
    Plan::Join {
        left: Box::new(left),
        right: Box::new(right),
        left_join,
        on,
        lookup,
    }
}

/// Adds a predicate to a plan, pushing conjuncts into scans (where they choose the access path)
/// and into the sides of joins.
pub fn apply_filter(plan: Plan, pred: Expr) -> Plan {
    let mut conj = Vec::new();
    split_and(pred, &mut conj);
    let (plan, rest) = push_down(plan, conj);
    match conjoin(rest) {
        Some(r) => Plan::Filter(Box::new(plan), r),
        None => plan,
    }
}

fn push_down(plan: Plan, conj: Vec<Expr>) -> (Plan, Vec<Expr>) {
    if conj.is_empty() {
        return (plan, conj);
    }
    match plan {
        Plan::Scan(s) => (Plan::Scan(choose_access(s, conj)), vec![]),
        Plan::Join {
            left,
            right,
            left_join,
            on,
            lookup,
        } => {
            let lw = left.width();
            let mut to_left = Vec::new();
            let mut to_right = Vec::new();
            let mut to_on = Vec::new();
            let mut rest = Vec::new();
            for c in conj {
                let cols = c.columns();
                let has_sub = has_subquery(&c);
                if cols.iter().all(|&i| i < lw) && !(cols.is_empty() && has_sub) {
                    to_left.push(c);
                } else if left_join {
                    rest.push(c);
                } else if cols.iter().all(|&i| i >= lw) && lookup.is_none() {
                    to_right.push(c.shift_cols(lw));
                } else {
                    to_on.push(c);
                }
            }
            let (l, lrest) = push_down(*left, to_left);
            let l = match conjoin(lrest) {
                Some(f) => Plan::Filter(Box::new(l), f),
                None => l,
            };
            let (r, rrest) = push_down(*right, to_right);
            let r = match conjoin(rrest) {
                Some(f) => Plan::Filter(Box::new(r), f),
                None => r,
            };
            if lookup.is_some() || to_on.is_empty() {
                let mut on = on;
                if !to_on.is_empty() {
                    let mut all = on.into_iter().collect::<Vec<_>>();
                    all.extend(to_on);
                    on = conjoin(all);
                }
                return (
                    Plan::Join {
                        left: Box::new(l),
                        right: Box::new(r),
                        left_join,
                        on,
                        lookup,
                    },
                    rest,
                );
            }
            let mut all = on.into_iter().collect::<Vec<_>>();
            all.extend(to_on);
            (make_join(l, r, left_join, conjoin(all)), rest)
        }
        Plan::Filter(p, f) => {
            let mut c = conj;
            c.push(f);
            push_down(*p, c)
        }
        p => (p, conj),
    }
}

/// The first lower and first upper bound the conjuncts put on column `col`, each as
/// (value, inclusive); used for primary-key and secondary-index range scans alike.
type RangeBound = Option<(Expr, bool)>;
fn range_bounds(conj: &[Expr], col: usize) -> (RangeBound, RangeBound) {
    let ((lo, _), (hi, _)) = range_bounds_from(conj, col);
    (lo, hi)
}

/// [`range_bounds`], each bound with the position of the conjunct it came from.
fn range_bounds_from(conj: &[Expr], col: usize) -> ((RangeBound, usize), (RangeBound, usize)) {
    let (mut lo, mut hi) = (None, None);
    let (mut lo_at, mut hi_at) = (usize::MAX, usize::MAX);
    for (at, c) in conj.iter().enumerate() {
        let bs: Vec<(CmpOp, Expr)> = match c {
            Expr::And(a, b) => [bound_of(a, col), bound_of(b, col)]
                .into_iter()
                .flatten()
                .collect(),
            c => bound_of(c, col).into_iter().collect(),
        };
        for (op, v) in bs {
            match op {
                CmpOp::Gt | CmpOp::Ge if lo.is_none() => {
                    lo = Some((v, op == CmpOp::Ge));
                    lo_at = at;
                }
                CmpOp::Lt | CmpOp::Le if hi.is_none() => {
                    hi = Some((v, op == CmpOp::Le));
                    hi_at = at;
                }
                _ => {}
            }
        }
    }
    ((lo, lo_at), (hi, hi_at))
}

/// Whether a primary-key range bound on an integer column is applied exactly by the scan
/// (`exec::key_range`): an integer literal or parameter compares as the stored keys do, and a
/// NULL makes the range empty as the comparison rejects every row. A float bound is rounded
/// outwards, so its comparison must still run.
fn exact_int_bound(e: &Expr) -> bool {
    match e {
        Expr::Lit(Value::Int(_) | Value::Null) => true,
        Expr::Param(_, t) => t.is_int(),
        _ => false,
    }
}

/// Removes from `conj` the conjuncts the primary-key range on integer column `col` applies
/// exactly, so they are not evaluated again on every row the range delivers: a comparison
/// that gave a bound, or an `AND` of two that gave both.
fn drop_exact_range_conjuncts(conj: &mut Vec<Expr>, col: usize) {
    let ((lo, lo_at), (hi, hi_at)) = range_bounds_from(conj, col);
    let exact = |b: &RangeBound| b.as_ref().is_some_and(|(e, _)| exact_int_bound(e));
    let mut drop: Vec<usize> = Vec::new();
    for (at, b) in [(lo_at, &lo), (hi_at, &hi)] {
        if at == usize::MAX || !exact(b) || has_subquery(&conj[at]) || drop.contains(&at) {
            continue;
        }
        let whole = match &conj[at] {
            // Both halves must be the bounds (BETWEEN gives such an AND).
            Expr::And(..) => lo_at == hi_at && exact(&lo) && exact(&hi),
            _ => true,
        };
        if whole {
            drop.push(at);
        }
    }
    drop.sort_unstable();
    for at in drop.into_iter().rev() {
        conj.remove(at);
    }
}

/// Whether `e` reads key column `col` as a key lookup can match it: the column itself, or a
/// `character(n)` column without its trailing blanks (as its comparisons read it; the lookup
/// pads the probe as the stored keys are, `exec::key_value`).
fn is_key_col(def: &TableDef, e: &Expr, col: usize) -> bool {
    match e {
        Expr::Col(c) => *c == col,
        Expr::Func(Func::Rtrim, args, _) if args.len() == 1 => {
            args[0] == Expr::Col(col) && matches!(def.columns[col].ty, DataType::Bpchar(Some(_)))
        }
        _ => false,
    }
}

/// [`bound_of`] for a key lookup: also a `character(n)` key column compared as text
/// ([`is_key_col`]).
fn key_bound_of(def: &TableDef, e: &Expr, col: usize) -> Option<(CmpOp, Expr)> {
    if let Expr::Cmp(op, a, b) = e {
        match (a.as_ref(), b.as_ref()) {
            (x, k) if is_key_col(def, x, col) && k.is_const() => return Some((*op, k.clone())),
            (k, x) if is_key_col(def, x, col) && k.is_const() => return Some((op.flip(), k.clone())),
            _ => {}
        }
    }
    None
}

fn bound_of(e: &Expr, col: usize) -> Option<(CmpOp, Expr)> {
    if let Expr::Cmp(op, a, b) = e {
        match (a.as_ref(), b.as_ref()) {
            (Expr::Col(c), k) if *c == col && k.is_const() => return Some((*op, k.clone())),
            (k, Expr::Col(c)) if *c == col && k.is_const() => return Some((op.flip(), k.clone())),
            _ => {}
        }
    }
    None
}

/// Picks the access path of a single-table scan from its predicate's conjuncts.
pub fn choose_access(mut s: Scan, mut conj: Vec<Expr>) -> Scan {
    if let Some(f) = s.filter.take() {
        split_and(f, &mut conj);
    }
    let pk = s.def.primary_key.clone();
    let access_free = matches!(s.access, Access::Full);
    if access_free && !pk.is_empty() {
        // Equality on every key column: a point lookup.
        let mut eqs: Vec<Option<(usize, Expr)>> = vec![None; pk.len()];
        for (ci, c) in conj.iter().enumerate() {
            for (k, &col) in pk.iter().enumerate() {
                if eqs[k].is_none() {
                    if let Some((CmpOp::Eq, v)) = key_bound_of(&s.def, c, col) {
                        eqs[k] = Some((ci, v));
                    }
                }
            }
        }
        if eqs.iter().all(Option::is_some) {
            let mut used: Vec<usize> = eqs.iter().map(|e| e.as_ref().expect("all").0).collect();
            let vals = eqs.into_iter().map(|e| e.expect("all").1).collect();
            s.access = Access::Point(vals);
            used.sort_unstable();
            used.dedup();
            for i in used.into_iter().rev() {
                // The lookup applies the equality exactly (see exec::key_value); a subquery
                // operand is still re-checked.
                if !has_subquery(&conj[i]) {
                    conj.remove(i);
                }
            }
        } else if pk.len() == 1 {
            let col = pk[0];
            // IN list of constants.
            let pos = conj.iter().position(|c| match c {
                Expr::InList(x, l, false) => is_key_col(&s.def, x, col) && l.iter().all(Expr::is_const),
                _ => false,
            });
            if let Some(i) = pos {
                if let Expr::InList(_, l, _) = conj.remove(i) {
                    s.access = Access::In(l);
                }
            } else {
                let (lo, hi) = range_bounds(&conj, col);
                if lo.is_some() || hi.is_some() {
                    if s.def.columns[col].ty.is_integer() {
                        drop_exact_range_conjuncts(&mut conj, col);
                    }
                    s.access = Access::Range { lo, hi };
                }
            }
        } else {
            // Equality on a prefix of a composite key.
            let mut prefix = Vec::new();
            for &col in &pk {
                match conj
                    .iter()
                    .find_map(|c| bound_of(c, col).filter(|(op, _)| *op == CmpOp::Eq))
                {
                    Some((_, v)) => prefix.push(v),
                    None => break,
                }
            }
            if !prefix.is_empty() {
                s.access = Access::Prefix(prefix);
            }
        }
    }
    if matches!(s.access, Access::Full) {
        // A secondary index: equality on all its columns, or a range on its single column.
        for (ix, idx) in s.def.indexes.iter().enumerate() {
            let eq: Vec<Option<Expr>> = idx
                .columns
                .iter()
                .map(|&col| {
                    conj.iter()
                        .find_map(|c| bound_of(c, col).filter(|(op, _)| *op == CmpOp::Eq))
                        .map(|b| b.1)
                })
                .collect();
            if eq.iter().all(Option::is_some) {
                s.access = Access::Index {
                    index: ix,
                    eq: eq.into_iter().flatten().collect(),
                    lo: None,
                    hi: None,
                };
                break;
            }
            if idx.columns.len() == 1 {
                let col = idx.columns[0];
                let (lo, hi) = range_bounds(&conj, col);
                if lo.is_some() || hi.is_some() {
                    s.access = Access::Index {
                        index: ix,
                        eq: vec![],
                        lo,
                        hi,
                    };
                    break;
                }
            }
        }
    }
    s.filter = conjoin(conj);
    s
}

/// The grouping step of a query. An ungrouped `min(pk)` / `max(pk)` over a scan of the primary
/// key reads one end of the index; an ungrouped `count(*)` walks the primary index without
/// copying rows; anything else aggregates its input.
pub fn aggregate(
    input: Plan,
    groups: Vec<Expr>,
    aggs: Vec<AggSpec>,
    array_groups: super::ArrayCols,
    having: bool,
) -> Plan {
    let single = groups.is_empty() && !having && aggs.len() == 1 && aggs[0].filter.is_none();
    if single && matches!(aggs[0].func, AggFunc::Min | AggFunc::Max) && !aggs[0].distinct {
        if let Plan::Scan(sc) = &input {
            if let (Some(pk), Some(Expr::Col(c))) = (sc.pk_col(), &aggs[0].arg) {
                if pk == *c && matches!(sc.access, Access::Full | Access::Range { .. }) {
                    let mut sc = sc.clone();
                    sc.reverse = aggs[0].func == AggFunc::Max;
                    return Plan::IndexMinMax {
                        scan: sc,
                        max: aggs[0].func == AggFunc::Max,
                    };
                }
            }
        }
    }
    if single && aggs[0].func == AggFunc::CountStar {
        if let Plan::Scan(sc) = &input {
            if sc.def.has_primary_key() && !matches!(sc.access, Access::Index { .. }) {
                return Plan::IndexCount { scan: sc.clone() };
            }
        }
    }
    Plan::Aggregate {
        input: Box::new(input),
        groups,
        aggs,
        array_groups,
    }
}

/// ORDER BY `key` over a single-table scan: when `key` is the primary key, the scan reads the
/// index in that direction (and stops after LIMIT + OFFSET rows that pass its filter) instead
/// of a sort. True if the scan now delivers the order.
pub fn order_by_key(
    plan: &mut Plan,
    key: &Expr,
    desc: bool,
    limit: &Option<Expr>,
    offset: &Option<Expr>,
) -> bool {
    let Plan::Scan(sc) = plan else {
        return false;
    };
    if sc.pk_col().is_some_and(|pk| *key == Expr::Col(pk))
        && matches!(
            sc.access,
            Access::Full | Access::Range { .. } | Access::Point(_) | Access::In(_)
        )
    {
        sc.reverse = desc;
        if limit.is_some() {
            sc.stop_after = Some((limit.clone(), offset.clone()));
        }
        return true;
    }
    false
}
