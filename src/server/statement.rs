//! Parse for the extended protocol: a statement prepared by the connection's session (with the
//! parameter types the client declared), and what Describe reports.

use std::sync::Arc;

use async_trait::async_trait;
use pgwire::api::portal::Format;
use pgwire::api::results::FieldInfo;
use pgwire::api::stmt::QueryParser;
use pgwire::api::{ClientInfo, Type};
use pgwire::error::PgWireResult;

use super::conn::{blocking, conn, Shared};
use super::reply::user_error;
use super::values::{self, is_binary};
use crate::sql::lexer::leading_keyword;
use crate::sql::Prepared;
use crate::types::DataType;

/// Rewrites what clients send that the SQL parser does not take yet: pgbench's
/// `COPY ... WITH (FREEZE ON)` (FREEZE is a no-op in Augur).
pub(super) fn rewrite(sql: &str) -> std::borrow::Cow<'_, str> {
    // Bytes, not `&str` slicing: the fifth byte may be inside a multi-byte character.
    if sql.len() > 6 && sql.as_bytes()[..4].eq_ignore_ascii_case(b"copy") {
        let lower = sql.to_ascii_lowercase();
        for opt in ["with (freeze on)", "with (freeze true)", "with (freeze)"] {
            if let Some(i) = lower.find(opt) {
                return format!("{}{}", &sql[..i], &sql[i + opt.len()..]).into();
            }
        }
    }
    sql.into()
}

/// A statement of the extended protocol.
#[derive(Debug)]
pub struct Stmt {
    pub(super) kind: StmtKind,
    /// Parameter types: declared by the client or inferred by the SQL layer.
    pub(super) params: Vec<DataType>,
    pub(super) columns: Vec<(String, DataType)>,
    /// What Describe of the statement reports, where it differs from what a portal's does
    /// ([`Prepared::statement_columns`]).
    pub(super) statement_columns: Option<Vec<(String, DataType)>>,
    pub(super) keyword: String,
}

#[derive(Debug)]
pub(super) enum StmtKind {
    Sql(Arc<Prepared>),
}

/// Parses extended-protocol statements with the connection's session, so Parse reports errors
/// and Describe reports the real parameter and result types.
pub struct AugurParser {
    pub(super) shared: Arc<Shared>,
}

#[async_trait]
impl QueryParser for AugurParser {
    type Statement = Arc<Stmt>;

    async fn parse_sql<C>(
        &self,
        client: &C,
        sql: &str,
        types: &[Option<Type>],
    ) -> PgWireResult<Option<Arc<Stmt>>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let conn = conn(client, &self.shared);
        let size = conn.session.lock().check_statement_size(sql);
        size.map_err(|e| {
            conn.fail_block();
            user_error(&e)
        })?;
        let sql = &*rewrite(sql);
        // Parameter types the client declared are honoured, as in PostgreSQL (an OID Augur has
        // no type for is left to inference).
        let declared: Vec<Option<DataType>> = types
            .iter()
            .map(|t| t.as_ref().and_then(|t| values::type_of_oid(t.oid())))
            .collect();
        let p = blocking(|| conn.session.lock().prepare_typed(sql, &declared)).map_err(|e| {
            if let Some(m) = &self.shared.metrics {
                m.error(e.sqlstate().code());
            }
            conn.fail_block();
            user_error(&e)
        })?;
        Ok(Some(Arc::new(Stmt {
            params: p.param_types.clone(),
            columns: p.columns.clone(),
            statement_columns: p.statement_columns.clone(),
            keyword: leading_keyword(sql),
            kind: StmtKind::Sql(p),
        })))
    }

    fn get_parameter_types(&self, stmt: &Arc<Stmt>) -> PgWireResult<Vec<Type>> {
        Ok(stmt.params.iter().map(|t| values::pg_type(*t)).collect())
    }

    fn get_result_schema(
        &self,
        stmt: &Arc<Stmt>,
        column_format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        let columns = stmt.statement_columns.as_ref().unwrap_or(&stmt.columns);
        Ok(values::fields(columns, |i| {
            column_format.is_some_and(|f| is_binary(f, i))
        }))
    }
}
