//! Answers the few catalog queries of psql and pgbench the SQL layer cannot answer yet, from
//! Augur's own catalog: psql 15's queries on relations Augur does not have (policies,
//! statistics objects, publications, inheritance, triggers, rules: no rows), and pgbench's
//! partition probe (`pg_partitioned_table`). Every other query on catalog relations, psql's
//! `\dt`, `\di`, `\l`, `\d NAME`'s lookup, relation flags, columns and indexes among them, is
//! the SQL layer's (`sql::catalog` builds pg_catalog and information_schema as relations).
//!
//! Each query is recognized by the catalog relations it reads (its FROM list) and by psql's
//! quoted OID literals (`WHERE pol.polrelid = '16384'`); the select list is split into items,
//! which name the answer's columns.

use sqlparser::tokenizer::Token;

use crate::error::Result;
use crate::seam::prelude::*;
use crate::sql::lexer::lex;
use crate::types::{DataType, Row, Value};

/// Rows of a catalog answer, as the SQL layer would return them.
#[derive(Debug, Clone)]
pub struct CatalogResult {
    pub columns: Vec<(String, DataType)>,
    pub rows: Vec<Row>,
}

impl CatalogResult {
    pub fn tag(&self) -> String {
        format!("SELECT {}", self.rows.len())
    }
}

/// Cheap test run on every query before parsing it: does it read catalog relations?
pub fn mentions_catalog(sql: &str) -> bool {
    let b = sql.as_bytes();
    // "pg_" followed by one of the catalog names we answer, in any case.
    let lower_has = |needle: &[u8]| {
        b.windows(needle.len())
            .any(|w| w.iter().zip(needle).all(|(x, y)| x.to_ascii_lowercase() == *y))
    };
    lower_has(b"pg_catalog.") || lower_has(b"pg_class") || lower_has(b"pg_database")
}

/// Answers `sql` if it is a catalog query this module knows; None: not ours.
pub fn answer(sql: &str, db: &AnyEngine) -> Option<Result<CatalogResult>> {
    if !mentions_catalog(sql) {
        return None;
    }
    let q = Query::new(sql)?;
    let from = q.from_lower.as_str();
    let r = if from.contains("pg_catalog.pg_partitioned_table") && q.lower.contains("c.relname = '") {
        pgbench_partitions(&q, db)
    } else if [
        "pg_catalog.pg_policy",
        "pg_catalog.pg_statistic_ext",
        "pg_catalog.pg_publication",
        "pg_catalog.pg_inherits",
        "pg_catalog.pg_trigger",
        "pg_catalog.pg_rewrite",
        "pg_catalog.pg_foreign_table",
        "pg_catalog.pg_depend",
        "pg_catalog.pg_event_trigger",
    ]
    .iter()
    .any(|t| from.contains(t))
        && has_oid_literal(&q.lower)
    {
        Some(empty(&q))
    } else {
        None
    }?;
    Some(Ok(r))
}

/// psql's queries about one relation name it by a quoted OID (`pol.polrelid = '16384'`,
/// `pc.oid ='16384'`, `pg_relation_is_publishable('16384')`).
fn has_oid_literal(lower: &str) -> bool {
    let b = lower.as_bytes();
    (0..b.len()).any(|i| {
        if b[i] != b'\'' {
            return false;
        }
        // (A quote is one byte, so `i` is a character boundary.)
        let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        let before = lower[..i].trim_end().bytes().last();
        digits > 0 && b.get(i + 1 + digits) == Some(&b'\'') && matches!(before, Some(b'=' | b'('))
    })
}

/// A catalog query: its text, lower-cased text, select items and FROM clause.
struct Query {
    lower: String,
    /// (expression, lower-cased expression, output name)
    items: Vec<(String, String, String)>,
    from_lower: String,
}

impl Query {
    fn new(sql: &str) -> Option<Query> {
        let lower = sql.to_ascii_lowercase();
        let mask = mask(sql)?;
        let sel = find_word(&mask, "select", 0)?;
        let from = find_word(&mask, "from", sel)?;
        // End of the FROM list: the next top-level WHERE / ORDER / GROUP / UNION / LIMIT.
        let end = ["where", "order", "group", "union", "limit"]
            .iter()
            .filter_map(|k| find_word(&mask, k, from))
            .min()
            .unwrap_or(lower.len());
        let from_lower = normalize_ws(&lower[from + 4..end]);
        let mut items = Vec::new();
        let mut start = sel + 6;
        let list_end = from;
        for (i, c) in mask[..list_end].char_indices().skip(start) {
            if c == ',' {
                items.push(item(&sql[start..i], &lower[start..i], &mask[start..i]));
                start = i + 1;
            }
        }
        items.push(item(
            &sql[start..list_end],
            &lower[start..list_end],
            &mask[start..list_end],
        ));
        Some(Query {
            lower,
            items,
            from_lower,
        })
    }

    fn columns(&self, ty: impl Fn(&str) -> DataType) -> Vec<(String, DataType)> {
        self.items
            .iter()
            .map(|(_, l, name)| (name.clone(), ty(l)))
            .collect()
    }
}

fn item(orig: &str, lower: &str, mask: &str) -> (String, String, String) {
    let orig = orig.trim();
    let lower = lower.trim();
    let mask = mask.trim();
    let name = match mask.rfind(" as ") {
        Some(i) => orig[i + 4..].trim().trim_matches('"').to_string(),
        None => {
            let head = mask.split('(').next().unwrap_or(mask);
            let last = head.rsplit('.').next().unwrap_or(head).trim();
            if lower.contains('(') && !head.trim().is_empty() {
                last.to_string()
            } else if head.trim().is_empty() || last.starts_with('_') || last.starts_with('\'') {
                "?column?".to_string()
            } else {
                last.to_string()
            }
        }
    };
    (orig.to_string(), lower.to_string(), name)
}

/// The text lower-cased, with quoted strings, quoted identifiers and parenthesized parts
/// replaced by `_` and whitespace and comments by spaces (byte for byte, so positions match the
/// text): top-level keywords and commas can then be found by plain search. None if the SQL
/// lexer rejects the text (it is then no catalog query of ours).
fn mask(sql: &str) -> Option<String> {
    let l = lex(sql).ok()?;
    let mut out = String::with_capacity(sql.len());
    let mut depth = 0usize;
    for (t, r) in l.tokens.iter().zip(&l.ranges) {
        let text = &sql[r.clone()];
        let paren = match t.token {
            Token::LParen => {
                depth += 1;
                true
            }
            Token::RParen => {
                depth = depth.saturating_sub(1);
                true
            }
            _ => false,
        };
        let quoted = text.contains(['\'', '"']) || matches!(t.token, Token::DollarQuotedString(_));
        if paren || quoted || depth > 0 {
            out.extend(std::iter::repeat_n('_', text.len()));
        } else if matches!(t.token, Token::Whitespace(_)) {
            out.extend(std::iter::repeat_n(' ', text.len()));
        } else {
            out.push_str(&text.to_ascii_lowercase());
        }
    }
    Some(out)
}

fn find_word(mask: &str, word: &str, from: usize) -> Option<usize> {
    let b = mask.as_bytes();
    let mut i = from;
    while let Some(p) = mask.get(i..)?.find(word) {
        let s = i + p;
        let e = s + word.len();
        let before = s == 0 || !(b[s - 1].is_ascii_alphanumeric() || b[s - 1] == b'_' || b[s - 1] == b'.');
        let after = e >= b.len() || !(b[e].is_ascii_alphanumeric() || b[e] == b'_');
        if before && after {
            return Some(s);
        }
        i = e;
    }
    None
}

fn normalize_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn t_text(_: &str) -> DataType {
    DataType::Text(None)
}

/// pgbench's probe for a partitioned pgbench_accounts: (search-path position, strategy, count).
fn pgbench_partitions(q: &Query, db: &AnyEngine) -> Option<CatalogResult> {
    let key = "c.relname = '";
    let i = q.lower.find(key)? + key.len();
    let name = &q.lower[i..i + q.lower[i..].find('\'')?];
    let rows = if db.table(name).is_ok() {
        vec![vec![Value::Int(1), Value::Null, Value::Int(0)]]
    } else {
        vec![]
    };
    Some(CatalogResult {
        columns: vec![
            ("n".into(), DataType::Int4),
            ("partstrat".into(), DataType::Text(None)),
            ("count".into(), DataType::Int8),
        ],
        rows,
    })
}

/// Relations that never have rows in Augur.
fn empty(q: &Query) -> CatalogResult {
    CatalogResult {
        columns: q.columns(t_text),
        rows: vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn select_items() {
        let q = Query::new(
            "SELECT n.nspname as \"Schema\",\n  c.relname as \"Name\",\n  CASE c.relkind WHEN 'r' THEN 'table' END as \"Type\"\nFROM pg_catalog.pg_class c\n     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace\nWHERE c.relkind IN ('r','p','')\nORDER BY 1,2;",
        )
        .unwrap();
        let names: Vec<&str> = q.items.iter().map(|i| i.2.as_str()).collect();
        assert_eq!(names, ["Schema", "Name", "Type"]);
        assert!(q.from_lower.starts_with("pg_catalog.pg_class c left join"));
        let q = Query::new("SELECT c.relchecks, c.relkind FROM pg_catalog.pg_class c WHERE c.oid = '16484';")
            .unwrap();
        assert_eq!(q.items[1].2, "relkind");
    }

    #[test]
    fn only_psqls_queries_are_answered_here() {
        assert!(has_oid_literal(
            "select 1 from pg_catalog.pg_policy pol where pol.polrelid = '16384' order by 1"
        ));
        assert!(has_oid_literal(
            "where pc.oid ='16384' and pg_catalog.pg_relation_is_publishable('16384')"
        ));
        assert!(!has_oid_literal(
            "select * from pg_catalog.pg_constraint where conname = 't_pkey'"
        ));
    }
}
