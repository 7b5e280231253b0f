//! Executing INSERT / UPDATE / DELETE plans: compute every change against the snapshot, lock
//! the rows, then apply them (constraint checks and foreign keys included).

use super::*;

fn returning_rows(ret: &Option<(Vec<Expr>, Vec<Column>)>, rows: &[Row], cx: &Ctx) -> Result<Vec<Row>> {
    let Some((exprs, _)) = ret else { return Ok(vec![]) };
    rows.iter()
        .map(|r| exprs.iter().map(|e| e.eval(r, cx)).collect())
        .collect()
}

fn full_row(p: &InsertPlan, src: Row, cx: &Ctx) -> Result<Row> {
    let mut row = vec![Value::Null; p.def.columns.len()];
    let mut given = vec![false; row.len()];
    for (v, &c) in src.into_iter().zip(&p.targets) {
        row[c] = v;
        given[c] = true;
    }
    for (c, col) in p.def.columns.iter().enumerate() {
        if !given[c] {
            if let Some(d) = &p.defaults[c] {
                row[c] = d.eval(&[], cx)?;
            }
        }
        let v = std::mem::replace(&mut row[c], Value::Null);
        row[c] = assign(v, col.ty, &col.name)?;
    }
    Ok(row)
}

enum Op {
    Insert(Row),
    /// The key, the new row, the row it replaces.
    Update(Key, Row, Arc<Row>),
}

/// Runs an INSERT; returns (rows affected, RETURNING rows).
pub fn exec_insert(
    p: &InsertPlan,
    tx: &mut AnyTxn,
    params: &[Value],
    subplans: &[Plan],
    now: crate::sql::exec::Clock,
    stop: &Interrupt,
) -> Result<(u64, Vec<Row>)> {
    let mut ops = Vec::new();
    let mut ret_src = Vec::new();
    {
        let ex = Exec::new(tx, params, subplans, now, stop);
        let cx = ex.ctx();
        let src = run(&p.source, &cx)?;
        let mut seen: HashSet<Key> = HashSet::new();
        for r in src {
            cx.check()?;
            let row = full_row(p, r, &cx)?;
            enforce_checks(&p.def, &p.checks, &row, &cx)?;
            match &p.conflict {
                None => {
                    ret_src.push(row.clone());
                    ops.push(Op::Insert(row));
                }
                Some(c) => {
                    let row = p.def.check_row(row)?;
                    let key = p.def.key_of(&row)?;
                    let first = seen.insert(key.clone());
                    if !first {
                        if let Conflict::Update { .. } = c {
                            return Err(Error::new(
                                SqlState::CARDINALITY_VIOLATION,
                                "ON CONFLICT DO UPDATE command cannot affect row a second time",
                            ));
                        }
                        continue;
                    }
                    // Lock the key first: a concurrent insert or update of it then waits, and
                    // (read committed) its newest version decides between insert and update.
                    let current = match tx.lock_row_by(&p.table, &key, cx.stop)? {
                        Locked::Unchanged => tx.get_in(&p.table, &key)?,
                        Locked::Changed(r) => r,
                    };
                    match current {
                        None => {
                            ret_src.push(row.clone());
                            ops.push(Op::Insert(row));
                        }
                        Some(old) => match c {
                            Conflict::Nothing => {}
                            Conflict::Update { sets, filter } => {
                                let mut both: Row = (*old).clone();
                                both.extend(row.iter().cloned());
                                if let Some(f) = filter {
                                    if !f.test(&both, &cx)? {
                                        continue;
                                    }
                                }
                                let mut new = (*old).clone();
                                for (c, e) in sets {
                                    let col = &p.def.columns[*c];
                                    new[*c] = assign(e.eval(&both, &cx)?, col.ty, &col.name)?;
                                }
                                enforce_checks(&p.def, &p.checks, &new, &cx)?;
                                ret_src.push(new.clone());
                                ops.push(Op::Update(key, new, old));
                            }
                        },
                    }
                }
            }
        }
        let ret = returning_rows(&p.returning, &ret_src, &cx)?;
        drop(cx);
        let n = ops.len() as u64;
        let written: Vec<(Option<Arc<Row>>, Row)> = if p.fk {
            ops.iter()
                .map(|o| match o {
                    Op::Insert(r) => (None, r.clone()),
                    Op::Update(_, r, old) => (Some(old.clone()), r.clone()),
                })
                .collect()
        } else {
            Vec::new()
        };
        apply(ops, tx, &p.table)?;
        if p.fk {
            for (old, new) in &written {
                fk::check_parents(tx, &p.def, new, old.as_deref().map(|r| r.as_slice()), stop)?;
            }
            let changed: Vec<(Arc<Row>, Option<Row>)> = written
                .into_iter()
                .filter_map(|(old, new)| old.map(|o| (o, Some(new))))
                .collect();
            fk::on_parent_change(tx, &p.table, &changed, 0, stop)?;
        }
        Ok((n, ret))
    }
}

fn apply(ops: Vec<Op>, tx: &mut AnyTxn, t: &AnyTable) -> Result<()> {
    for op in ops {
        match op {
            Op::Insert(r) => {
                tx.insert_row(t, r)?;
            }
            Op::Update(k, r, _) => {
                tx.update_row(t, &k, r)?;
            }
        }
    }
    Ok(())
}

/// The rows an UPDATE or DELETE changes: those its scan chooses, each then row-locked
/// (waiting for other writers). A row a concurrent transaction changed after the statement's
/// snapshot (read committed) is replaced by its newest version if that still satisfies WHERE,
/// and dropped otherwise (or if it was deleted), as PostgreSQL re-checks rows in READ
/// COMMITTED.
fn chosen_rows(scan: &Scan, recheck: &Option<Expr>, cx: &Ctx) -> Result<Vec<(Key, Arc<Row>)>> {
    let mut rows: Vec<(Key, Arc<Row>)> = Vec::new();
    scan_rows(scan, cx, &mut |k, r| {
        rows.push((k.clone(), r.clone()));
        Ok(true)
    })?;
    let t = &scan.table;
    let mut out = Vec::with_capacity(rows.len());
    for (k, row) in rows {
        match cx.tx.lock_row_by(t, &k, cx.stop)? {
            Locked::Unchanged => out.push((k, row)),
            Locked::Changed(None) => {}
            Locked::Changed(Some(r)) => {
                if match recheck {
                    Some(e) => e.test(&r, cx)?,
                    None => true,
                } {
                    out.push((k, r));
                }
            }
        }
    }
    Ok(out)
}

pub fn exec_update(
    p: &UpdatePlan,
    tx: &mut AnyTxn,
    params: &[Value],
    subplans: &[Plan],
    now: crate::sql::exec::Clock,
    stop: &Interrupt,
) -> Result<(u64, Vec<Row>)> {
    let def = &p.scan.def;
    let mut changes: Vec<(Key, Row)> = Vec::new();
    // (old, new) of each row, for the foreign keys.
    let mut pairs: Vec<(Arc<Row>, Option<Row>)> = Vec::new();
    let ret;
    {
        let ex = Exec::new(tx, params, subplans, now, stop);
        let cx = ex.ctx();
        let olds = chosen_rows(&p.scan, &p.recheck, &cx)?;
        for (k, old) in olds {
            cx.check()?;
            let mut new = (*old).clone();
            for (c, e) in &p.sets {
                let col = &def.columns[*c];
                new[*c] = assign(e.eval(&old, &cx)?, col.ty, &col.name)?;
            }
            enforce_checks(def, &p.checks, &new, &cx)?;
            if p.fk {
                pairs.push((old.clone(), Some(new.clone())));
            }
            changes.push((k, new));
        }
        let news: Vec<Row> = changes.iter().map(|c| c.1.clone()).collect();
        ret = returning_rows(&p.returning, &news, &cx)?;
    }
    let n = changes.len() as u64;
    let t = &p.scan.table;
    let mut moved = Vec::new();
    for (k, new) in changes {
        let new = def.check_row(new)?;
        if def.has_primary_key() && def.key_of(&new)? != k {
            moved.push((k, new));
        } else {
            tx.update_row(t, &k, new)?;
        }
    }
    for (k, _) in &moved {
        tx.delete_row(t, k)?;
    }
    for (_, new) in moved {
        tx.insert_row(t, new)?;
    }
    if p.fk {
        for (old, new) in &pairs {
            if let Some(new) = new {
                fk::check_parents(tx, def, new, Some(old.as_slice()), stop)?;
            }
        }
        fk::on_parent_change(tx, t, &pairs, 0, stop)?;
    }
    Ok((n, ret))
}

pub fn exec_delete(
    p: &DeletePlan,
    tx: &mut AnyTxn,
    params: &[Value],
    subplans: &[Plan],
    now: crate::sql::exec::Clock,
    stop: &Interrupt,
) -> Result<(u64, Vec<Row>)> {
    let (olds, ret) = {
        let ex = Exec::new(tx, params, subplans, now, stop);
        let cx = ex.ctx();
        let olds = chosen_rows(&p.scan, &p.recheck, &cx)?;
        let rows: Vec<Row> = match p.returning {
            Some(_) => olds.iter().map(|(_, r)| (**r).clone()).collect(),
            None => Vec::new(),
        };
        let ret = returning_rows(&p.returning, &rows, &cx)?;
        (olds, ret)
    };
    let n = olds.len() as u64;
    let mut gone: Vec<(Arc<Row>, Option<Row>)> = Vec::new();
    for (k, old) in olds {
        if tx.delete_row(&p.scan.table, &k)? && p.fk {
            gone.push((old, None));
        }
    }
    if p.fk {
        fk::on_parent_change(tx, &p.scan.table, &gone, 0, stop)?;
    }
    Ok((n, ret))
}
