//! EXPLAIN: a plan as indented lines, one node per line, naming the index that answers each
//! scan (ALEX, the ordered fallback, a secondary index).

use std::fmt::Write;

use super::join::hash_keys;
use super::{Access, AggFunc, AggSpec, Plan, Scan};
use crate::index::keyed::IndexKind;
use crate::seam::EngineTable;
use crate::sql::expr::{Expr, SubRef};

/// The indentation of a node at `depth`.
fn node_pad(depth: usize) -> String {
    if depth == 0 {
        String::new()
    } else {
        format!("{}-> ", "  ".repeat(depth - 1))
    }
}

/// A join's condition, under its node, over the joined row's column `names`.
fn join_filter(out: &mut Vec<String>, depth: usize, on: Option<&Expr>, names: &[String]) {
    if let Some(on) = on {
        out.push(format!(
            "{}   join filter: {}",
            "  ".repeat(depth),
            show_n(on, names)
        ));
    }
}

/// A join that reads both inputs (inner, left, full, semi or anti): a hash join on `keys`, or
/// a nested loop without any, then its condition and both inputs.
fn explain_join(
    out: &mut Vec<String>,
    depth: usize,
    kind: &str,
    (left, right): (&Plan, &Plan),
    keys: &[(Expr, Expr)],
    on: Option<&Expr>,
    names: &[String],
) {
    let pad = node_pad(depth);
    if keys.is_empty() {
        out.push(format!("{pad}{kind} (nested loop)"));
    } else {
        let (ln, rn) = (left.names(), right.names());
        let k: Vec<String> = keys
            .iter()
            .map(|(l, r)| format!("{} = {}", show_n(l, &ln), show_n(r, &rn)))
            .collect();
        out.push(format!("{pad}{kind} (hash join on {})", k.join(", ")));
    }
    join_filter(out, depth, on, names);
    left.explain(out, depth + 1);
    right.explain(out, depth + 1);
}

impl Plan {
    /// EXPLAIN text, one node per line, children indented.
    pub fn explain(&self, out: &mut Vec<String>, depth: usize) {
        let pad = node_pad(depth);
        match self {
            Plan::Values(rows) => out.push(format!(
                "{pad}Values ({} row{})",
                rows.len(),
                if rows.len() == 1 { "" } else { "s" }
            )),
            Plan::Scan(s) => out.push(format!("{pad}{}", scan_line(s))),
            Plan::Join {
                left,
                right,
                left_join,
                on,
                lookup,
            } => {
                let kind = if *left_join { "Left join" } else { "Inner join" };
                match lookup {
                    Some(l) => {
                        let (how, col) = match l.index {
                            Some(ix) => (
                                format!("secondary index {}", l.def.indexes[ix].name),
                                l.def.indexes[ix].columns[0],
                            ),
                            None => (
                                match l.table.key_index_kind() {
                                    IndexKind::Alex => "ALEX point lookup",
                                    IndexKind::BTree => "ordered index (fallback) lookup",
                                }
                                .to_string(),
                                l.def.primary_key.first().copied().unwrap_or_default(),
                            ),
                        };
                        let ln = left.names();
                        let pk = l.def.columns.get(col).map(|c| c.name.clone()).unwrap_or_default();
                        out.push(format!(
                            "{pad}{kind} (index-lookup join: {how} on {} {} by {pk} = {})",
                            l.def.name,
                            l.alias,
                            show_n(&l.key, &ln)
                        ));
                        join_filter(out, depth, on.as_ref(), &self.names());
                        left.explain(out, depth + 1);
                    }
                    None => {
                        let keys = on.as_ref().map(|e| hash_keys(e, left.width()));
                        let names = self.names();
                        explain_join(
                            out,
                            depth,
                            kind,
                            (left, right),
                            &keys.unwrap_or_default(),
                            on.as_ref(),
                            &names,
                        );
                    }
                }
            }
            Plan::FullJoin { left, right, on } => {
                let keys = on.as_ref().map(|e| hash_keys(e, left.width()));
                let names = self.names();
                explain_join(
                    out,
                    depth,
                    "Full join",
                    (left, right),
                    &keys.unwrap_or_default(),
                    on.as_ref(),
                    &names,
                );
            }
            Plan::SemiJoin {
                left,
                right,
                keys,
                residual,
                anti,
            } => {
                let kind = if *anti { "Anti join" } else { "Semi join" };
                let both: Vec<String> = left.names().into_iter().chain(right.names()).collect();
                explain_join(out, depth, kind, (left, right), keys, residual.as_ref(), &both);
            }
            Plan::Filter(p, e) => {
                out.push(format!("{pad}Filter: {}", show_n(e, &p.names())));
                p.explain(out, depth + 1);
            }
            Plan::Aggregate {
                input, groups, aggs, ..
            } => {
                let n = input.names();
                let a: Vec<String> = aggs.iter().map(|x| show_agg(x, &n)).collect();
                if groups.is_empty() {
                    out.push(format!("{pad}Aggregate: {}", a.join(", ")));
                } else {
                    let g: Vec<String> = groups.iter().map(|x| show_n(x, &n)).collect();
                    out.push(format!(
                        "{pad}HashAggregate by {}: {}",
                        g.join(", "),
                        a.join(", ")
                    ));
                }
                input.explain(out, depth + 1);
            }
            Plan::IndexMinMax { scan, max } => {
                out.push(format!(
                    "{pad}{} from one end of the index (first row only)",
                    if *max { "max" } else { "min" }
                ));
                let mut s = scan.clone();
                s.stop_after = Some((None, None));
                out.push(format!("{}-> {}", "  ".repeat(depth), scan_line(&s)));
            }
            Plan::IndexCount { scan } => {
                out.push(format!("{pad}count(*) counted from the index"));
                let mut s = scan.clone();
                s.stop_after = Some((None, None));
                out.push(format!("{}-> {}", "  ".repeat(depth), scan_line(&s)));
            }
            Plan::Project(p, e) => {
                let n = p.names();
                let cols: Vec<String> = e.iter().map(|x| show_n(x, &n)).collect();
                out.push(format!("{pad}Project: {}", cols.join(", ")));
                p.explain(out, depth + 1);
            }
            Plan::Distinct(p, _) => {
                out.push(format!("{pad}Distinct"));
                p.explain(out, depth + 1);
            }
            Plan::SetOp {
                kind,
                all,
                left,
                right,
                ..
            } => {
                out.push(format!(
                    "{pad}{}{}",
                    kind.keyword(),
                    if *all { " ALL" } else { "" }
                ));
                left.explain(out, depth + 1);
                right.explain(out, depth + 1);
            }
            Plan::Recursive {
                id,
                base,
                step,
                distinct,
            } => {
                out.push(format!(
                    "{pad}Recursive union{} (work table {id})",
                    if *distinct { "" } else { " all" }
                ));
                base.explain(out, depth + 1);
                step.explain(out, depth + 1);
            }
            Plan::WorkTable { id, .. } => out.push(format!("{pad}Work table {id}")),
            Plan::Window { input, specs } => {
                let n = input.names();
                let w: Vec<String> = specs.iter().map(|s| s.show(&n)).collect();
                out.push(format!("{pad}Window: {}", w.join(", ")));
                input.explain(out, depth + 1);
            }
            Plan::ProjectSet { input, srfs } => {
                let n = input.names();
                let s: Vec<String> = srfs.iter().map(|s| s.show(&n)).collect();
                out.push(format!("{pad}ProjectSet: {}", s.join(", ")));
                input.explain(out, depth + 1);
            }
            Plan::Lateral {
                left, sub, on, outer, ..
            } => {
                let kind = if *outer {
                    "Left lateral join"
                } else {
                    "Lateral join"
                };
                let sub = show_sub(sub);
                out.push(format!("{pad}{kind} (nested loop over {sub})"));
                join_filter(out, depth, on.as_ref(), &self.names());
                left.explain(out, depth + 1);
            }
            Plan::Sort(p, keys) => {
                let n = p.names();
                let k: Vec<String> = keys
                    .iter()
                    .map(|k| {
                        let mut s = show_n(&k.expr, &n);
                        if k.desc {
                            s.push_str(" DESC");
                        }
                        if k.nulls_first != k.desc {
                            s.push_str(if k.nulls_first {
                                " NULLS FIRST"
                            } else {
                                " NULLS LAST"
                            });
                        }
                        s
                    })
                    .collect();
                out.push(format!("{pad}Sort: {}", k.join(", ")));
                p.explain(out, depth + 1);
            }
            Plan::Limit { input, limit, offset } => {
                let mut s = format!("{pad}Limit");
                if let Some(l) = limit {
                    let _ = write!(s, " {}", show(l));
                }
                if let Some(o) = offset {
                    let _ = write!(s, " offset {}", show(o));
                }
                out.push(s);
                input.explain(out, depth + 1);
            }
        }
    }
}

fn bound(b: &Option<(Expr, bool)>, lo: bool) -> Option<String> {
    b.as_ref().map(|(e, inc)| {
        let op = match (lo, inc) {
            (true, true) => ">=",
            (true, false) => ">",
            (false, true) => "<=",
            (false, false) => "<",
        };
        format!("{op} {}", show(e))
    })
}

pub(super) fn scan_line(s: &Scan) -> String {
    let kind = s.table.key_index_kind();
    let pk_names: Vec<&str> = s
        .def
        .primary_key
        .iter()
        .map(|&i| s.def.columns[i].name.as_str())
        .collect();
    let pk = pk_names.join(", ");
    let name = if s.alias == s.def.name {
        s.def.name.clone()
    } else {
        format!("{} {}", s.def.name, s.alias)
    };
    let idx = match kind {
        IndexKind::Alex => "ALEX",
        IndexKind::BTree => "ordered index (fallback)",
    };
    let mut line = match &s.access {
        Access::Full => {
            if s.stop_after.is_some() && s.def.has_primary_key() {
                format!(
                    "{} on {name} ({pk} order{}{})",
                    if kind == IndexKind::Alex {
                        "ALEX range scan"
                    } else {
                        "ordered index (fallback) range scan"
                    },
                    if s.reverse { " descending" } else { "" },
                    if matches!(s.stop_after, Some((Some(_), _))) {
                        ", stops early"
                    } else {
                        ""
                    }
                )
            } else {
                format!("full scan on {name}")
            }
        }
        Access::Point(v) => {
            let vals: Vec<String> = v.iter().map(show).collect();
            if kind == IndexKind::Alex {
                format!("ALEX point lookup on {name} ({pk} = {})", vals.join(", "))
            } else {
                format!(
                    "ordered index (fallback) point lookup on {name} (({pk}) = ({}))",
                    vals.join(", ")
                )
            }
        }
        Access::In(v) => {
            let vals: Vec<String> = v.iter().map(show).collect();
            format!(
                "{} on {name} ({pk} IN ({}))",
                if kind == IndexKind::Alex {
                    "ALEX point lookups"
                } else {
                    "ordered index (fallback) point lookups"
                },
                vals.join(", ")
            )
        }
        Access::Range { lo, hi } => {
            let b: Vec<String> = [bound(lo, true), bound(hi, false)]
                .into_iter()
                .flatten()
                .map(|b| format!("{pk} {b}"))
                .collect();
            format!(
                "{} on {name} ({}{})",
                if kind == IndexKind::Alex {
                    "ALEX range scan"
                } else {
                    "ordered index (fallback) range scan"
                },
                b.join(" AND "),
                if s.reverse { ", descending" } else { "" }
            )
        }
        Access::Prefix(v) => {
            let vals: Vec<String> = v.iter().map(show).collect();
            let cols: Vec<&str> = pk_names[..v.len()].to_vec();
            format!(
                "{idx} prefix range scan on {name} (({}) = ({}))",
                cols.join(", "),
                vals.join(", ")
            )
        }
        Access::Index { index, eq, lo, hi } => {
            let idef = &s.def.indexes[*index];
            let cols: Vec<&str> = idef
                .columns
                .iter()
                .map(|&i| s.def.columns[i].name.as_str())
                .collect();
            let cond = if !eq.is_empty() {
                let vals: Vec<String> = eq.iter().map(show).collect();
                format!("({}) = ({})", cols.join(", "), vals.join(", "))
            } else {
                [bound(lo, true), bound(hi, false)]
                    .into_iter()
                    .flatten()
                    .map(|b| format!("{} {b}", cols[0]))
                    .collect::<Vec<_>>()
                    .join(" AND ")
            };
            format!(
                "ordered index (secondary{}) {} on {name} using {} ({cond})",
                if idef.unique { ", unique" } else { "" },
                if eq.is_empty() { "range scan" } else { "lookup" },
                idef.name
            )
        }
    };
    if let Some(f) = &s.filter {
        let names: Vec<String> = s.def.columns.iter().map(|c| c.name.clone()).collect();
        let _ = write!(line, " filter: {}", show_n(f, &names));
    }
    line
}

pub(super) fn show_agg(a: &AggSpec, n: &[String]) -> String {
    let filter = match &a.filter {
        Some(f) => format!(" FILTER (WHERE {})", show_n(f, n)),
        None => String::new(),
    };
    let name = match a.func {
        AggFunc::CountStar => return format!("count(*){filter}"),
        AggFunc::Count => "count",
        AggFunc::Sum => "sum",
        AggFunc::Avg => "avg",
        AggFunc::Min => "min",
        AggFunc::Max => "max",
        AggFunc::BoolAnd => "bool_and",
        AggFunc::BoolOr => "bool_or",
        AggFunc::ArrayAgg => "array_agg",
        AggFunc::JsonbAgg => "jsonb_agg",
        AggFunc::JsonAgg => "json_agg",
        AggFunc::JsonbObjectAgg => "jsonb_object_agg",
        AggFunc::JsonObjectAgg => "json_object_agg",
    };
    let order: Vec<String> = a
        .order
        .iter()
        .map(|k| format!("{}{}", show_n(&k.expr, n), if k.desc { " DESC" } else { "" }))
        .collect();
    format!(
        "{name}({}{}{}{}){filter}",
        if a.distinct { "DISTINCT " } else { "" },
        a.arg.as_ref().map(|x| show_n(x, n)).unwrap_or_default(),
        if order.is_empty() { "" } else { " ORDER BY " },
        order.join(", ")
    )
}

/// A compact rendering of a bound expression (columns by position: `#n`).
pub fn show(e: &Expr) -> String {
    show_n(e, &[])
}

/// [`show`] with column names.
pub fn show_n(e: &Expr, n: &[String]) -> String {
    let show = |e: &Expr| show_n(e, n);
    match e {
        Expr::Lit(v) => match v {
            crate::types::Value::Text(s) => format!("'{}'", s.replace('\'', "''")),
            crate::types::Value::Null => "NULL".into(),
            v => v.to_text().unwrap_or_default(),
        },
        Expr::Col(i) => n.get(*i).cloned().unwrap_or_else(|| format!("#{i}")),
        Expr::Param(i, _) => format!("${}", i + 1),
        Expr::Neg(a, _) => format!("-{}", show(a)),
        Expr::Arith(op, a, b, _) => format!("({} {} {})", show(a), op.sym(), show(b)),
        Expr::Cmp(op, a, b) => format!("{} {} {}", show(a), op.sym(), show(b)),
        Expr::And(a, b) => format!("({} AND {})", show(a), show(b)),
        Expr::Or(a, b) => format!("({} OR {})", show(a), show(b)),
        Expr::Not(a) => format!("NOT {}", show(a)),
        Expr::IsNull(a, n) => format!("{} IS {}NULL", show(a), if *n { "NOT " } else { "" }),
        Expr::IsBool(a, v, n) => format!(
            "{} IS {}{}",
            show(a),
            if *n { "NOT " } else { "" },
            if *v { "TRUE" } else { "FALSE" }
        ),
        Expr::IsDistinct(a, b, n) => format!(
            "{} IS {}DISTINCT FROM {}",
            show(a),
            if *n { "NOT " } else { "" },
            show(b)
        ),
        Expr::InList(a, l, n) => {
            let l: Vec<String> = l.iter().map(show).collect();
            format!(
                "{} {}IN ({})",
                show(a),
                if *n { "NOT " } else { "" },
                l.join(", ")
            )
        }
        Expr::InSub(a, s, n) => format!("{} {}IN ({})", show(a), if *n { "NOT " } else { "" }, show_sub(s)),
        Expr::Quant(op, a, s, all) => format!(
            "{} {} {} ({})",
            show(a),
            op.sym(),
            if *all { "ALL" } else { "ANY" },
            show_sub(s)
        ),
        Expr::Exists(s, n) => format!("{}EXISTS ({})", if *n { "NOT " } else { "" }, show_sub(s)),
        Expr::ScalarSub(s) => format!("({})", show_sub(s)),
        Expr::Outer(k) => format!("outer{k}"),
        Expr::Like(a, b, _, n, ci) => {
            format!(
                "{} {}{} {}",
                show(a),
                if *n { "NOT " } else { "" },
                if *ci { "ILIKE" } else { "LIKE" },
                show(b)
            )
        }
        Expr::Case { .. } => "CASE ... END".into(),
        Expr::Cast(a, t, _) => format!("{}::{}", show(a), t.name()),
        Expr::Concat(a, b) => format!("({} || {})", show(a), show(b)),
        Expr::Func(f, args, _) => {
            let a: Vec<String> = args.iter().map(show).collect();
            format!("{}({})", format!("{f:?}").to_lowercase(), a.join(", "))
        }
        Expr::Agg(i) => format!("agg{i}"),
        Expr::Window(i) => format!("window{i}"),
        Expr::Srf(i) => format!("srf{i}"),
    }
}

/// `subquery N`, with the outer values a correlated subquery reads (`outer0 = ...`).
fn show_sub(s: &SubRef) -> String {
    let mut out = format!("subquery {}", s.id);
    if !s.args.is_empty() {
        let a: Vec<String> = s
            .args
            .iter()
            .enumerate()
            .map(|(k, e)| format!("outer{k} = {}", show(e)))
            .collect();
        out.push_str(&format!(" with {}", a.join(", ")));
    }
    out
}
