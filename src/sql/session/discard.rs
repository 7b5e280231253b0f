//! `DISCARD ALL | PLANS | SEQUENCES | TEMP`: what a connection pooler (PgBouncer's
//! `server_reset_query`, pgpool) sends before handing a server connection to another client,
//! so that nothing of the last client's session reaches the next one.

use sqlparser::ast as A;

use super::Session;
use crate::error::{Error, Result, SqlState};
use crate::sql::result::StatementResult;

impl Session {
    /// `DISCARD ALL` (not inside a transaction block, 25001, as in PostgreSQL): every setting
    /// back to its reset value (`RESET ALL`), the sequence values `currval` remembers
    /// forgotten, and [`Session::take_discarded`] set for the server, which then drops the
    /// connection's named prepared statements and portals (PostgreSQL's `DEALLOCATE ALL` and
    /// `CLOSE ALL`). `SEQUENCES` forgets the sequence values only; `PLANS` and `TEMP` change
    /// nothing (a plan is made again whenever a table it reads changes, and Augur has no
    /// temporary tables).
    pub(super) fn discard(&mut self, what: A::DiscardObject) -> Result<StatementResult> {
        let tag = match what {
            A::DiscardObject::ALL => {
                if self.tx.is_some() {
                    return Err(Error::new(
                        SqlState::ACTIVE_SQL_TRANSACTION,
                        "DISCARD ALL cannot run inside a transaction block",
                    ));
                }
                self.reset(&A::Reset::ALL)?;
                self.seq_mem.lock().clear();
                self.discarded = true;
                "DISCARD ALL"
            }
            A::DiscardObject::SEQUENCES => {
                self.seq_mem.lock().clear();
                "DISCARD SEQUENCES"
            }
            A::DiscardObject::PLANS => "DISCARD PLANS",
            A::DiscardObject::TEMP => "DISCARD TEMP",
        };
        Ok(StatementResult::Command { tag: tag.into() })
    }

    /// Whether a `DISCARD ALL` ran since the last call (the server then closes the
    /// connection's named prepared statements and portals).
    pub fn take_discarded(&mut self) -> bool {
        std::mem::take(&mut self.discarded)
    }
}
