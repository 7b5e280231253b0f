//! Hash-join keys: the equality conjuncts of a join condition that compare an expression over
//! the left row with one over the right row. The executor hashes the right side on them; the
//! whole condition is still checked on each candidate pair.

use super::access::split_and;
use crate::sql::expr::{has_subquery, CmpOp, Expr};

/// (left key over the left row, right key over the right row) for each equality of `on` (an
/// expression over left ++ right rows, the left `lw` columns wide) that splits that way.
pub fn hash_keys(on: &Expr, lw: usize) -> Vec<(Expr, Expr)> {
    let mut conj = Vec::new();
    split_and(on.clone(), &mut conj);
    let mut keys = Vec::new();
    for c in conj {
        let Expr::Cmp(CmpOp::Eq, a, b) = c else { continue };
        if has_subquery(&a) || has_subquery(&b) {
            continue;
        }
        let side = |e: &Expr| {
            let cols = e.columns();
            if cols.is_empty() {
                None
            } else if cols.iter().all(|&i| i < lw) {
                Some(true)
            } else if cols.iter().all(|&i| i >= lw) {
                Some(false)
            } else {
                None
            }
        };
        match (side(&a), side(&b)) {
            (Some(true), Some(false)) => keys.push((*a, b.shift_cols(lw))),
            (Some(false), Some(true)) => keys.push((*b, a.shift_cols(lw))),
            _ => {}
        }
    }
    keys
}
