//! Writes whose table gained constraints while the transaction ran. An `ALTER TABLE` that adds
//! a NOT NULL, CHECK or FOREIGN KEY checks the committed rows under the commit lock; the rows
//! of a transaction still open were checked by their statements against the definition as it
//! was. PostgreSQL's ALTER waits for such transactions (its table lock); Augur's does not, so
//! the commit checks them instead, under the same commit lock: every row it writes to a table
//! whose constraints changed after the transaction (or the statement that planned its writes,
//! [`Transaction::saw_constraints_at`]) began meets the NOT NULL and CHECK constraints of the
//! definition it commits under (23502, 23514), and a write that a new foreign key governs (a
//! row of its referencing table, or any write to the table it references) fails with 40001:
//! the constraint's check ran without it, and the write's own checks and actions ran without
//! the constraint. Running it again runs it under the new definition.

use super::*;
use crate::engine::constraint;
use crate::engine::table::constraint_stamp;

impl Transaction {
    /// Lowers the stamp this transaction's writes were checked against to `stamp`
    /// ([`constraint_stamp`] read before a statement was planned). The transaction's begin
    /// is the default.
    pub fn saw_constraints_at(&mut self, stamp: u64) {
        self.seen_constraints = self.seen_constraints.min(stamp);
    }

    /// Called by the commit under the commit lock (see the module comment).
    pub(super) fn check_altered_meanwhile(&mut self, writes: &HashMap<u32, TableWrites>) -> Result<()> {
        let seen = self.seen_constraints;
        if constraint_stamp() <= seen {
            return Ok(());
        }
        let mine = self.party.unwrap_or(0);
        let changed = |t: &Table| t.constraints_at() > seen && (mine == 0 || t.lock_owner() != mine);
        for w in writes.values() {
            let t = &w.table;
            let def = t.def();
            let puts = w.ops.values().any(|p| matches!(p, Pending::Put(_)));
            // A referencing table whose foreign keys changed: the key's check and actions ran
            // without this table's writes.
            if self.db.referenced.contains(t, || self.all_defs()) {
                let children = self.db.referenced.referencing(&def.name, || self.all_defs());
                let altered = children
                    .iter()
                    .filter_map(|c| self.db.tables.read().get(c).cloned())
                    .any(|c| changed(&c));
                if altered {
                    return Err(altered_meanwhile(&def.name));
                }
            }
            if t.constraints_at() <= seen || !puts {
                continue;
            }
            if !def.foreign_keys.is_empty() && changed(t) {
                return Err(altered_meanwhile(&def.name));
            }
            for p in w.ops.values() {
                let Pending::Put(r) = p else { continue };
                let row = def.complete_row(Vec::clone(r));
                if let Some(c) = row
                    .iter()
                    .zip(&def.columns)
                    .find(|(v, c)| v.is_null() && !c.nullable)
                {
                    return Err(Error::new(
                        SqlState::NOT_NULL_VIOLATION,
                        format!(
                            "null value in column \"{}\" of relation \"{}\" violates not-null constraint (added by an ALTER TABLE that committed while this transaction ran)",
                            c.1.name, def.name
                        ),
                    ));
                }
                if !def.checks.is_empty() {
                    self.as_any(|tx| constraint::evaluator().check(tx, &def, &row))?;
                }
            }
        }
        Ok(())
    }
}

fn altered_meanwhile(table: &str) -> Error {
    Error::new(
        SqlState::SERIALIZATION_FAILURE,
        format!(
            "could not serialize access: a foreign key of table \"{table}\" or of a table referencing it changed while this transaction ran; run it again"
        ),
    )
}
