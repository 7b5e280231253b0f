//! Plan reuse for plain-text statements (the simple protocol): a statement's *shape* is its
//! text with certain literals replaced by parameters; the shape is prepared (parsed, bound,
//! planned) once per session and run with the literals as parameter values. A literal is lifted
//! only where a parameter of the type the binder gives that literal (integers int4 or int8 by
//! size, quoted strings unknown) binds, checks and evaluates exactly as the literal does:
//! - a whole comparison operand (`aid = 42`, `name <> 'x'`), except an UPDATE's `SET a = 5`;
//! - an integer operand of `+ - * / %` in an UPDATE's SET list whose other operand is a column
//!   (`abalance + -2345`), so no constant is folded differently;
//! - a whole item of an INSERT's VALUES rows (`VALUES (1, -5, '12', DEFAULT)`), assigned to
//!   its column by the same cast at run time as at bind time.
//!
//! Literals anywhere else stay in the shape (ORDER BY / GROUP BY positions, LIMIT, typed
//! literals like `timestamp '...'`, NULL, decimals, function arguments), so their meaning
//! cannot change. A cached statement re-plans itself when a table it uses changes
//! ([`Prepared`]); the cache is emptied when the session runs anything else (SET, DDL).

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Arc;

use sqlparser::keywords::Keyword;
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

/// A literal to lift: the first and last of the significant tokens it spans (two for a
/// negative integer, `-` and the digits), its value and its declared type.
struct Lift {
    first: usize,
    last: usize,
    value: Value,
    ty: Option<DataType>,
}

fn is_cmp(t: &Token) -> bool {
    matches!(
        t,
        Token::Eq | Token::Neq | Token::Lt | Token::Gt | Token::LtEq | Token::GtEq | Token::DoubleEq
    )
}

fn is_arith(t: &Token) -> bool {
    matches!(
        t,
        Token::Plus | Token::Minus | Token::Mul | Token::Div | Token::Mod
    )
}

fn is_keyword(t: Option<&Token>, k: Keyword) -> bool {
    matches!(t, Some(Token::Word(w)) if w.keyword == k && w.quote_style.is_none())
}

/// A name that can only be a column reference where an operand is expected: a quoted
/// identifier or a word that is no keyword (keywords include `CURRENT_DATE`, `NULL`, `END`).
fn is_column_word(t: &Token) -> bool {
    matches!(t, Token::Word(w) if w.quote_style.is_some() || w.keyword == Keyword::NoKeyword)
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

/// An integer literal's value and the type the binder gives it (`bind::expr::number`): int4 if
/// it fits, else int8; None for anything else (decimals, exponents, beyond int8: numeric).
fn integer(digits: &str, negative: bool) -> Option<(Value, Option<DataType>)> {
    if !digits.bytes().all(|b| b.is_ascii_digit()) || digits.is_empty() {
        return None;
    }
    let i = if negative {
        format!("-{digits}").parse::<i64>().ok()?
    } else {
        digits.parse::<i64>().ok()?
    };
    let ty = if i32::try_from(i).is_ok() {
        DataType::Int4
    } else {
        DataType::Int8
    };
    Some((Value::Int(i), Some(ty)))
}

/// The literal that starts at `k`: an integer (`42`, or `-` then digits when `negative_ok`:
/// the caller knows the `-` is unary there) or a plain quoted string (when `strings`).
fn literal_at(toks: &[&Token], k: usize, negative_ok: bool, strings: bool) -> Option<Lift> {
    let lift = |last: usize, (value, ty): (Value, Option<DataType>)| Lift {
        first: k,
        last,
        value,
        ty,
    };
    match toks[k] {
        Token::Number(n, false) => integer(n, false).map(|v| lift(k, v)),
        Token::Minus if negative_ok => match toks.get(k + 1) {
            Some(Token::Number(n, false)) => integer(n, true).map(|v| lift(k + 1, v)),
            _ => None,
        },
        Token::SingleQuotedString(s) if strings => Some(lift(k, (Value::Text(s.clone()), None))),
        _ => None,
    }
}

/// Whether the `=` at `eq` assigns a column (`SET a = 5`, `, b = 6`; `t.a` too) rather than
/// compares. A lifted int4 parameter assigned to a smallint column would be range-checked only
/// when a row is updated, where the literal is checked when the statement is bound, even if
/// no row matches; so assignments keep their literals.
fn is_assignment(toks: &[&Token], eq: usize) -> bool {
    let mut j = eq;
    loop {
        if j == 0 || !matches!(toks[j - 1], Token::Word(_)) {
            return false;
        }
        j -= 1;
        if j >= 2 && matches!(toks[j - 1], Token::Period) {
            j -= 1;
            continue;
        }
        return j > 0 && (is_keyword(Some(toks[j - 1]), Keyword::SET) || matches!(toks[j - 1], Token::Comma));
    }
}

/// Whole comparison operands: an integer or quoted string between a comparison operator and
/// what may end an operand.
fn comparison_operands(toks: &[&Token], out: &mut Vec<Lift>) {
    for k in 1..toks.len() {
        if !is_cmp(toks[k - 1]) || !ends_operand(toks.get(k + 1).copied()) || is_assignment(toks, k - 1) {
            continue;
        }
        if let Some(l) = literal_at(toks, k, false, true) {
            out.push(l);
        }
    }
}

/// Paren/bracket depth before each token.
fn depths(toks: &[&Token]) -> Vec<usize> {
    let mut d = 0usize;
    toks.iter()
        .map(|t| {
            let here = d;
            match t {
                Token::LParen | Token::LBracket => d += 1,
                Token::RParen | Token::RBracket => d = d.saturating_sub(1),
                _ => {}
            }
            here
        })
        .collect()
}

/// In an UPDATE's SET list (top level, up to WHERE / FROM / RETURNING), each integer that is
/// the right operand of `+ - * / %` with a column on its left and that ends its operand
/// (`abalance + -2345,` or before WHERE). The binder types `col + $n` with an int4 or int8
/// parameter exactly as `col + <literal>`, and nothing is folded into a constant there.
fn set_arithmetic(toks: &[&Token], depth: &[usize], out: &mut Vec<Lift>) {
    if !is_keyword(toks.first().copied(), Keyword::UPDATE) {
        return;
    }
    let Some(set) = (0..toks.len()).find(|&k| depth[k] == 0 && is_keyword(Some(toks[k]), Keyword::SET))
    else {
        return;
    };
    let end = (set + 1..toks.len())
        .find(|&k| {
            depth[k] == 0
                && [Keyword::WHERE, Keyword::FROM, Keyword::RETURNING]
                    .iter()
                    .any(|&w| is_keyword(Some(toks[k]), w))
        })
        .unwrap_or(toks.len());
    let mut k = set + 1;
    while k < end {
        let operand = k >= 3
            && depth[k] == 0
            && is_arith(toks[k - 1])
            && is_column_word(toks[k - 2])
            && !matches!(toks[k - 3], Token::DoubleColon);
        if let Some(l) = literal_at(toks, k, true, false).filter(|_| operand) {
            let next = l.last + 1;
            if next == end || matches!(toks.get(next), None | Some(Token::Comma) | Some(Token::SemiColon)) {
                k = next;
                out.push(l);
                continue;
            }
        }
        k += 1;
    }
}

/// Each item of an INSERT's VALUES rows that is one integer (`-` allowed) or quoted string:
/// the binder assigns it to its column by the same cast, at run time for a parameter as at
/// bind time for the literal, with the same errors (`'12x'` 22P02, 2^40 into int4 22003).
/// Only a VALUES list that is the whole source (what may follow: ON CONFLICT, RETURNING).
fn values_items(toks: &[&Token], depth: &[usize], out: &mut Vec<Lift>) {
    if !is_keyword(toks.first().copied(), Keyword::INSERT) {
        return;
    }
    let Some(values) = (0..toks.len()).find(|&k| depth[k] == 0 && is_keyword(Some(toks[k]), Keyword::VALUES))
    else {
        return;
    };
    let mut found = Vec::new();
    let mut k = values + 1;
    loop {
        if !matches!(toks.get(k), Some(Token::LParen)) {
            return;
        }
        k += 1;
        // The row's items up to its `)`.
        loop {
            let start = k;
            let mut d = 0usize;
            while k < toks.len() {
                match toks[k] {
                    Token::LParen | Token::LBracket => d += 1,
                    Token::RParen | Token::Comma if d == 0 => break,
                    Token::RParen | Token::RBracket => d = d.saturating_sub(1),
                    _ => {}
                }
                k += 1;
            }
            if k == toks.len() {
                return;
            }
            if let Some(l) = literal_at(toks, start, true, true) {
                if l.last + 1 == k {
                    found.push(l);
                }
            }
            k += 1;
            if matches!(toks[k - 1], Token::RParen) {
                break;
            }
        }
        match toks.get(k).copied() {
            Some(Token::Comma) => k += 1,
            None | Some(Token::SemiColon) => break,
            t if is_keyword(t, Keyword::ON) || is_keyword(t, Keyword::RETURNING) => break,
            _ => return,
        }
    }
    out.extend(found);
}

fn shape(sql: &str) -> Result<Option<Shape>> {
    let l = lex(sql)?;
    let sig: Vec<usize> = (0..l.tokens.len())
        .filter(|&i| !matches!(l.tokens[i].token, Token::Whitespace(_) | Token::EOF))
        .collect();
    let toks: Vec<&Token> = sig.iter().map(|&i| &l.tokens[i].token).collect();
    if toks.iter().any(|t| matches!(t, Token::Placeholder(_))) {
        // `$n` in a plain-text statement: leave it to the ordinary path's error.
        return Ok(None);
    }
    let depth = depths(&toks);
    let mut lifts = Vec::new();
    comparison_operands(&toks, &mut lifts);
    set_arithmetic(&toks, &depth, &mut lifts);
    values_items(&toks, &depth, &mut lifts);
    lifts.sort_by_key(|l| l.first);
    let mut text = String::with_capacity(sql.len());
    let mut values = Vec::with_capacity(lifts.len());
    let mut types = Vec::with_capacity(lifts.len());
    let mut last = 0;
    let mut next_token = 0;
    for lift in lifts {
        if lift.first < next_token {
            continue;
        }
        let (start, end) = (l.ranges[sig[lift.first]].start, l.ranges[sig[lift.last]].end);
        text.push_str(&sql[last..start]);
        values.push(lift.value);
        types.push(lift.ty);
        let _ = write!(text, "${}", values.len());
        last = end;
        next_token = lift.last + 1;
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

    fn kept(sqls: &[&str]) {
        for sql in sqls {
            assert_eq!(sh(sql), (sql.to_string(), vec![]), "{sql}");
        }
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
        // Not whole operands, typed literals, positions, arithmetic, decimals, assignments: kept.
        kept(&[
            "SELECT x FROM t WHERE a = 1 + b",
            "SELECT x FROM t WHERE a = '1'::int",
            "SELECT x FROM t WHERE ts = timestamp '2024-01-01'",
            "SELECT x FROM t GROUP BY 1 ORDER BY 1",
            "SELECT x FROM t WHERE a = -1",
            "SELECT x FROM t WHERE f = 1.5",
            "SELECT a + 1 FROM t GROUP BY a + 1",
            "UPDATE t SET a = 5 WHERE id = x",
            "UPDATE t SET a = 5",
            "UPDATE t SET b = 1, t.a = 5",
        ]);
        assert_eq!(
            sh("INSERT INTO t VALUES (1) ON CONFLICT (id) DO UPDATE SET a = 5").0,
            "INSERT INTO t VALUES ($1) ON CONFLICT (id) DO UPDATE SET a = 5"
        );
        assert!(shape("SELECT $1").unwrap().is_none());
    }

    #[test]
    fn lifts_pgbench_tpcb_statements() {
        assert_eq!(
            sh("UPDATE pgbench_accounts SET abalance = abalance + -2345 WHERE aid = 123;"),
            (
                "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2;".into(),
                vec![Value::Int(-2345), Value::Int(123)]
            )
        );
        assert_eq!(
            sh("INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (3, 1, 77, 4000, CURRENT_TIMESTAMP);"),
            (
                "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP);".into(),
                vec![Value::Int(3), Value::Int(1), Value::Int(77), Value::Int(4000)]
            )
        );
    }

    #[test]
    fn lifts_set_arithmetic_with_a_column_operand() {
        let s =
            shape("UPDATE t SET a = a - -2147483648, b = t.b * 3000000000, \"c\" = \"c\" % 7 RETURNING a")
                .unwrap()
                .unwrap();
        assert_eq!(
            s.text,
            "UPDATE t SET a = a - $1, b = t.b * $2, \"c\" = \"c\" % $3 RETURNING a"
        );
        assert_eq!(
            s.values,
            vec![
                Value::Int(-2_147_483_648),
                Value::Int(3_000_000_000),
                Value::Int(7)
            ]
        );
        assert_eq!(
            s.types,
            vec![Some(DataType::Int4), Some(DataType::Int8), Some(DataType::Int4)]
        );
        assert_eq!(
            sh("UPDATE t SET a = b - 5 WHERE id = 1").0,
            "UPDATE t SET a = b - $1 WHERE id = $2"
        );
        // A constant or a non-column on the left, an operand that goes on (`::`, `*`, `>`), a
        // decimal, beyond int8, a string, inside parentheses or a CASE, in WHERE: kept.
        kept(&[
            "UPDATE t SET a = 1 + 2",
            "UPDATE t SET a = current_date + 1",
            "UPDATE t SET a = x::int4 + 1",
            "UPDATE t SET a = b + 1::int8",
            "UPDATE t SET a = b + 2 * c",
            "UPDATE t SET a = b + 1 > c",
            "UPDATE t SET a = b + 1.5",
            "UPDATE t SET a = b + 9223372036854775808",
            "UPDATE t SET a = b || '1'",
            "UPDATE t SET a = b + '1'",
            "UPDATE t SET a = f(b + 1)",
            "UPDATE t SET a = CASE WHEN c THEN b + 1 ELSE 0 END",
            "UPDATE t SET a = b - - - 1",
            "UPDATE t SET a = 0 WHERE b + 1 > c",
            "SELECT a + 1 FROM t",
            "DELETE FROM t WHERE a + 1 > b",
        ]);
    }

    #[test]
    fn lifts_whole_values_items() {
        let s = shape("INSERT INTO t (a, b, c, d, e, f) VALUES (1, -5, '12', DEFAULT, NULL, 2.5), (2, 1099511627776, 'x', 1 + 2, f(3), ARRAY[4, 5]) RETURNING a")
            .unwrap()
            .unwrap();
        assert_eq!(
            s.text,
            "INSERT INTO t (a, b, c, d, e, f) VALUES ($1, $2, $3, DEFAULT, NULL, 2.5), ($4, $5, $6, 1 + 2, f(3), ARRAY[4, 5]) RETURNING a"
        );
        assert_eq!(
            s.values,
            vec![
                Value::Int(1),
                Value::Int(-5),
                Value::Text("12".into()),
                Value::Int(2),
                Value::Int(1_099_511_627_776),
                Value::Text("x".into())
            ]
        );
        assert_eq!(
            s.types,
            vec![
                Some(DataType::Int4),
                Some(DataType::Int4),
                None,
                Some(DataType::Int4),
                Some(DataType::Int8),
                None
            ]
        );
        assert_eq!(
            sh("INSERT INTO t VALUES (7, 'a') ON CONFLICT (id) DO NOTHING").0,
            "INSERT INTO t VALUES ($1, $2) ON CONFLICT (id) DO NOTHING"
        );
        // VALUES that is not the whole source, typed literals, casts, E'' strings: kept.
        kept(&[
            "INSERT INTO t VALUES (1) UNION SELECT 2",
            "INSERT INTO t VALUES (1) ORDER BY 1",
            "INSERT INTO t SELECT * FROM (VALUES (1)) v",
            "WITH x AS (SELECT 1) INSERT INTO t VALUES (1)",
            "INSERT INTO t VALUES (date '2024-01-01', '1'::int, E'x', -1.5, 'a' 'b')",
            "INSERT INTO t VALUES (1",
        ]);
    }
}
