//! UNION / INTERSECT / EXCEPT over two materialized inputs, with PostgreSQL's duplicate rules:
//! without ALL each distinct row appears once; with ALL, INTERSECT keeps min(m, n) copies of
//! a row and EXCEPT max(m - n, 0). Rows compare with NULLs equal (not distinct), and their
//! array columns by their elements' values ([`distinct_key`]).

use std::collections::{HashMap, HashSet};

use super::distinct_key;
use crate::error::Result;
use crate::sql::plan::{ArrayCols, SetOpKind};
use crate::types::Row;

pub(super) fn set_op(
    kind: SetOpKind,
    all: bool,
    left: Vec<Row>,
    right: Vec<Row>,
    arrays: &ArrayCols,
) -> Result<Vec<Row>> {
    let key = |r: &Row| -> Result<Row> {
        if arrays.is_empty() {
            Ok(r.clone())
        } else {
            distinct_key(r, arrays)
        }
    };
    Ok(match kind {
        SetOpKind::Union if all => {
            let mut out = left;
            out.extend(right);
            out
        }
        SetOpKind::Union => {
            let mut seen = HashSet::new();
            let mut out = Vec::new();
            for r in left.into_iter().chain(right) {
                if seen.insert(key(&r)?) {
                    out.push(r);
                }
            }
            out
        }
        SetOpKind::Intersect | SetOpKind::Except => {
            let mut counts: HashMap<Row, usize> = HashMap::new();
            for r in &right {
                *counts.entry(key(r)?).or_default() += 1;
            }
            let intersect = kind == SetOpKind::Intersect;
            let mut emitted = HashSet::new();
            let mut out = Vec::new();
            for r in left {
                let k = key(&r)?;
                let n = counts.get_mut(&k);
                let keep = if all {
                    match n {
                        Some(n) if *n > 0 => {
                            *n -= 1;
                            intersect
                        }
                        _ => !intersect,
                    }
                } else {
                    n.is_some() == intersect && emitted.insert(k)
                };
                if keep {
                    out.push(r);
                }
            }
            out
        }
    })
}
