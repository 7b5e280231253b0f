//! UNION / INTERSECT / EXCEPT over two materialized inputs, with PostgreSQL's duplicate rules:
//! without ALL each distinct row appears once; with ALL, INTERSECT keeps min(m, n) copies of
//! a row and EXCEPT max(m - n, 0). Rows compare with NULLs equal (not distinct).

use std::collections::{HashMap, HashSet};

use crate::sql::plan::SetOpKind;
use crate::types::Row;

pub(super) fn set_op(kind: SetOpKind, all: bool, left: Vec<Row>, right: Vec<Row>) -> Vec<Row> {
    match kind {
        SetOpKind::Union if all => {
            let mut out = left;
            out.extend(right);
            out
        }
        SetOpKind::Union => {
            let mut seen = HashSet::new();
            left.into_iter()
                .chain(right)
                .filter(|r| seen.insert(r.clone()))
                .collect()
        }
        SetOpKind::Intersect | SetOpKind::Except => {
            let mut counts: HashMap<Row, usize> = HashMap::new();
            for r in right {
                *counts.entry(r).or_default() += 1;
            }
            let intersect = kind == SetOpKind::Intersect;
            let mut emitted = HashSet::new();
            let mut out = Vec::new();
            for r in left {
                let n = counts.get_mut(&r);
                let keep = if all {
                    match n {
                        Some(n) if *n > 0 => {
                            *n -= 1;
                            intersect
                        }
                        _ => !intersect,
                    }
                } else {
                    n.is_some() == intersect && emitted.insert(r.clone())
                };
                if keep {
                    out.push(r);
                }
            }
            out
        }
    }
}
