//! Plan reuse for plain-text statements (the simple protocol): a statement's *shape* is its
//! text with each literal that is a whole comparison operand (`aid = 42`, `name <> 'x'`)
//! replaced by a parameter; the shape is prepared (parsed, bound, planned) once per session and
//! run with the literals as parameter values. Literals anywhere else stay in the shape (ORDER
//! BY / GROUP BY positions, LIMIT, typed literals like `timestamp '...'`, VALUES, arithmetic),
//! so their meaning cannot change. A cached statement re-plans itself when a table it uses
//! changes ([`Prepared`]); the cache is emptied when the session runs anything else (SET, DDL).

use std::collections::HashMap;
use std::sync::Arc;

use sqlparser::tokenizer::{Token, Word};

use super::{Prepared, Session};
use crate::error::Result;
use crate::sql::lexer::lex;
use crate::types::{DataType, Value};

/// Shapes kept per session before the cache is emptied.
const CAPACITY: usize = 256;

#[derive(Default)]
pub(super) struct PlanCache {
    plans: HashMap<String, Arc<Prepared>>,
}

/// A statement's shape and the values lifted out of it (with the parameter types declared for
/// them: integer literals are int4 or int8 as the binder types them, quoted strings unknown).
struct Shape {
    text: String,
    values: Vec<Value>,
    types: Vec<Option<DataType>>,
}

fn is_cmp(t: &Token) -> bool {
    matches!(
        t,
        Token::Eq | Token::Neq | Token::Lt | Token::Gt | Token::LtEq | Token::GtEq | Token::DoubleEq
    )
}

/// Whether `t` may follow a complete comparison operand (so the literal before it is one).
fn ends_operand(t: Option<&Token>) -> bool {
    match t {
        None | Some(Token::SemiColon) | Some(Token::RParen) | Some(Token::EOF) => true,
        Some(Token::Word(Word {
            value,
            quote_style: None,
            ..
        })) => matches!(
            value.to_ascii_lowercase().as_str(),
            "and" | "or" | "order" | "limit" | "offset" | "group" | "having" | "returning"
        ),
        _ => false,
    }
}

fn shape(sql: &str) -> Result<Option<Shape>> {
    let l = lex(sql)?;
    let sig: Vec<usize> = (0..l.tokens.len())
        .filter(|&i| !matches!(l.tokens[i].token, Token::Whitespace(_)))
        .collect();
    let mut text = String::with_capacity(sql.len());
    let mut values = Vec::new();
    let mut types = Vec::new();
    let mut last = 0;
    for (k, &i) in sig.iter().enumerate() {
        let tok = &l.tokens[i].token;
        if matches!(tok, Token::Placeholder(_)) {
            // `$n` in a plain-text statement: leave it to the ordinary path's error.
            return Ok(None);
        }
        let prev = k.checked_sub(1).map(|p| &l.tokens[sig[p]].token);
        if !prev.is_some_and(is_cmp) || !ends_operand(sig.get(k + 1).map(|&n| &l.tokens[n].token)) {
            continue;
        }
        let (v, t) = match tok {
            Token::Number(n, false) => match n.parse::<i64>() {
                Ok(i) if i32::try_from(i).is_ok() => (Value::Int(i), Some(DataType::Int4)),
                Ok(i) => (Value::Int(i), Some(DataType::Int8)),
                Err(_) => continue,
            },
            Token::SingleQuotedString(s) => (Value::Text(s.clone()), None),
            _ => continue,
        };
        let r = &l.ranges[i];
        text.push_str(&sql[last..r.start]);
        values.push(v);
        types.push(t);
        text.push_str(&format!("${}", values.len()));
        last = r.end;
    }
    text.push_str(&sql[last..]);
    Ok(Some(Shape { text, values, types }))
}

impl Session {
    /// The prepared statement for plain-text `sql` (from the cache, or prepared from its shape
    /// and cached) and the parameter values to run it with; None when the shape does not
    /// prepare (the caller then takes the ordinary path, which reports the statement's own
    /// errors).
    pub fn prepare_cached(&mut self, sql: &str) -> Option<(Arc<Prepared>, Vec<Value>)> {
        let s = shape(sql).ok().flatten()?;
        if let Some(p) = self.plan_cache.plans.get(&s.text) {
            if p.declared == s.types {
                return Some((p.clone(), s.values));
            }
        }
        let p = self.prepare_typed(&s.text, &s.types).ok()?;
        if self.plan_cache.plans.len() >= CAPACITY {
            self.plan_cache.plans.clear();
        }
        self.plan_cache.plans.insert(s.text, p.clone());
        Some((p, s.values))
    }

    /// Forgets every cached plan (after SET, DDL and other statements that may change what a
    /// statement means).
    pub fn clear_plan_cache(&mut self) {
        self.plan_cache.plans.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(sql: &str) -> (String, Vec<Value>) {
        let s = shape(sql).unwrap().unwrap();
        (s.text, s.values)
    }

    #[test]
    fn lifts_only_whole_comparison_operands() {
        assert_eq!(
            sh("SELECT abalance FROM a WHERE aid = 42;"),
            (
                "SELECT abalance FROM a WHERE aid = $1;".into(),
                vec![Value::Int(42)]
            )
        );
        assert_eq!(
            sh("SELECT x FROM t WHERE a = 'q' AND b >= 3000000000 ORDER BY 1 LIMIT 5"),
            (
                "SELECT x FROM t WHERE a = $1 AND b >= $2 ORDER BY 1 LIMIT 5".into(),
                vec![Value::Text("q".into()), Value::Int(3_000_000_000)]
            )
        );
        // Not whole operands, typed literals, positions, arithmetic, decimals: kept.
        for sql in [
            "SELECT x FROM t WHERE a = 1 + b",
            "SELECT x FROM t WHERE a = '1'::int",
            "SELECT x FROM t WHERE ts = timestamp '2024-01-01'",
            "SELECT x FROM t GROUP BY 1 ORDER BY 1",
            "SELECT x FROM t WHERE a = -1",
            "SELECT x FROM t WHERE f = 1.5",
            "UPDATE t SET a = 5 WHERE id = x",
            "INSERT INTO t VALUES (1, 'a')",
        ] {
            assert_eq!(sh(sql), (sql.to_string(), vec![]), "{sql}");
        }
        assert!(shape("SELECT $1").unwrap().is_none());
    }
}
