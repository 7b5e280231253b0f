//! WITH RECURSIVE: the base rows, then rounds of the step over the previous round's new rows
//! (its work table) until a round adds nothing; UNION (not ALL) drops rows seen before, which
//! also ends cycles. A query that never ends is stopped by statement_timeout or a cancel.

use std::collections::HashSet;
use std::sync::Arc;

use super::run;
use crate::error::Result;
use crate::sql::expr::Ctx;
use crate::sql::plan::Plan;
use crate::types::Row;

pub(super) fn recursive(id: usize, base: &Plan, step: &Plan, distinct: bool, cx: &Ctx) -> Result<Vec<Row>> {
    let mut seen: HashSet<Row> = HashSet::new();
    let mut out = Vec::new();
    let mut fresh = Vec::new();
    let mut add = |rows: Vec<Row>, out: &mut Vec<Row>, fresh: &mut Vec<Row>| {
        for r in rows {
            if !distinct || seen.insert(r.clone()) {
                out.push(r.clone());
                fresh.push(r);
            }
        }
    };
    add(run(base, cx)?, &mut out, &mut fresh);
    while !fresh.is_empty() {
        cx.check_now()?;
        cx.subs.set_work_table(id, Arc::new(std::mem::take(&mut fresh)));
        add(run(step, cx)?, &mut out, &mut fresh);
    }
    cx.subs.set_work_table(id, Arc::new(Vec::new()));
    Ok(out)
}
