//! Settings changed inside a transaction block go back when the block (or the savepoint they
//! were made after) rolls back, as PostgreSQL's GUC stack does; a commit keeps them, except
//! those last set with `SET LOCAL`. Only the old values of settings a block changes are kept,
//! so blocks without `SET` cost nothing.

use super::Session;

/// One `SET` inside a block: the savepoint depth it was made at, the setting, its value
/// before (None if it had none), and whether it was `SET LOCAL`.
pub(super) type Undo = (usize, String, Option<String>, bool);

impl Session {
    /// Records `name`'s value before a `SET` inside a transaction block.
    pub(super) fn log_setting(&mut self, name: &str) {
        if self.tx.is_some() {
            let old = self.settings.get(name).cloned();
            self.settings_undo
                .push((self.savepoints.len(), name.to_string(), old, false));
        }
    }

    /// Restores what `SET` changed at savepoint depth `depth` or deeper, latest first (the
    /// block's end: 0; `ROLLBACK TO` the savepoint at index i: i + 1).
    pub(super) fn undo_settings(&mut self, depth: usize) {
        let keep = self.settings_undo.iter().take_while(|u| u.0 < depth).count();
        let undo: Vec<Undo> = self.settings_undo.drain(keep..).collect();
        self.restore(undo);
    }

    /// A committed block: its `SET`s stay, but a setting whose last change was `SET LOCAL`
    /// takes the value it had before that run of `SET LOCAL`s.
    pub(super) fn commit_settings(&mut self) {
        let log = std::mem::take(&mut self.settings_undo);
        let mut undo: Vec<Undo> = Vec::new();
        let mut decided: Vec<&str> = Vec::new();
        for u in log.iter().rev() {
            if decided.contains(&u.1.as_str()) {
                continue;
            }
            if u.3 {
                // Kept in the log's order: restored latest first, the earliest last.
                undo.insert(0, u.clone());
            } else {
                decided.push(&u.1);
            }
        }
        self.restore(undo);
    }

    /// Puts back the old values of `undo`, latest first.
    fn restore(&mut self, undo: Vec<Undo>) {
        if undo.is_empty() {
            return;
        }
        for (_, name, old, _) in undo.into_iter().rev() {
            match old {
                // A value the setting held before parses again.
                Some(v) => {
                    if self.apply_setting(name.clone(), v.clone()).is_err() {
                        self.settings.insert(name, v);
                    }
                }
                None => {
                    self.settings.remove(&name);
                }
            }
        }
        self.apply_synchronous_commit();
        // Plans made under the undone settings (a folded timestamptz literal) go too.
        self.clear_plan_cache();
    }

    /// `RELEASE` of the savepoint at index `i`: what was set after it now belongs to the level
    /// around it.
    pub(super) fn release_settings(&mut self, i: usize) {
        for u in &mut self.settings_undo {
            if u.0 > i {
                u.0 = i;
            }
        }
    }
}
