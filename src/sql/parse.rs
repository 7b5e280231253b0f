//! SQL text to syntax trees: sqlparser with the PostgreSQL dialect, bounded in expression depth
//! (54001) so that deep statements fail cleanly instead of overflowing the stack.

use sqlparser::ast as A;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use crate::error::{Error, Result, SqlState};

/// The deepest expression nesting a statement may have (estimated from its tokens by
/// [`nesting_estimate`]); deeper statements fail with 54001 before they are parsed. The parser,
/// binder, executor and the syntax tree's destructor all recurse over an expression's depth, and
/// a chain like `1+1+...+1` is parsed without recursion into a tree as deep as the chain is long:
/// without this bound, 100000 terms overflow the thread's stack and abort the process.
pub const MAX_NESTING: usize = 1000;

fn too_complex(what: &str) -> Error {
    Error::new(
        SqlState("54001"),
        format!("statement is too complex: {what} (stack depth limit exceeded)"),
    )
}

/// An upper estimate of the expression depth of SQL text, without parsing it: along each path
/// of parentheses, the operators (`+ - * / % ^ < > = ! | & ~ # @ :` runs and the keywords AND,
/// OR, NOT, IS, LIKE, ILIKE, BETWEEN, CASE, WHEN, SELECT) in the enclosing comma-separated
/// segments, plus one per parenthesis. Quoted text and comments are skipped. O(n), no recursion.
pub fn nesting_estimate(sql: &str) -> usize {
    nesting(sql).0
}

/// [`nesting_estimate`], and the part of it that the parser itself recurses over: parentheses
/// and prefix operators (`- - 1`, `NOT NOT x`, `CASE WHEN ... CASE`), where an operand was due.
fn nesting(sql: &str) -> (usize, usize) {
    #[derive(Default)]
    struct Nest {
        /// Per open parenthesis: operators and prefix operators in its current segment.
        ops: Vec<(usize, usize)>,
        cur: usize,
        max: usize,
        rcur: usize,
        rmax: usize,
    }
    impl Nest {
        fn bump(&mut self, prefix: bool) {
            let p = usize::from(prefix);
            if let Some(top) = self.ops.last_mut() {
                top.0 += 1;
                top.1 += p;
            }
            self.cur += 1;
            self.rcur += p;
            self.max = self.max.max(self.cur);
            self.rmax = self.rmax.max(self.rcur);
        }
    }
    let b = sql.as_bytes();
    let mut st = Nest {
        ops: vec![(0, 0)],
        ..Nest::default()
    };
    let mut operand_due = true;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'\'' | b'"' => {
                // E'...' strings take backslash escapes.
                let escapes = c == b'\'' && i > 0 && (b[i - 1] == b'E' || b[i - 1] == b'e');
                i += 1;
                while i < b.len() && b[i] != c {
                    i += if escapes && b[i] == b'\\' { 2 } else { 1 };
                }
                operand_due = false;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            b'$' => {
                // A dollar quote ($$...$$ or $tag$...$tag$); `$1` is a parameter.
                let mut j = i + 1;
                while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                    j += 1;
                }
                if j < b.len() && b[j] == b'$' && !b[i + 1].is_ascii_digit() {
                    let tag = &sql[i..=j];
                    i = match sql[j + 1..].find(tag) {
                        Some(k) => j + 1 + k + tag.len() - 1,
                        None => b.len(),
                    };
                } else {
                    i = j - 1;
                }
                operand_due = false;
            }
            b'(' => {
                st.bump(true);
                st.ops.push((0, 0));
                operand_due = true;
            }
            b')' => {
                if st.ops.len() > 1 {
                    let (n, p) = st.ops.pop().unwrap_or((0, 0));
                    // Back to where the parenthesis opened: the group is one operand.
                    if let Some(top) = st.ops.last_mut() {
                        top.0 = top.0.saturating_sub(1);
                        top.1 = top.1.saturating_sub(1);
                    }
                    st.cur = st.cur.saturating_sub(n + 1);
                    st.rcur = st.rcur.saturating_sub(p + 1);
                }
                operand_due = false;
            }
            b',' => {
                if let Some(top) = st.ops.last_mut() {
                    st.cur = st.cur.saturating_sub(top.0);
                    st.rcur = st.rcur.saturating_sub(top.1);
                    *top = (0, 0);
                }
                operand_due = true;
            }
            b';' => {
                st.ops = vec![(0, 0)];
                st.cur = 0;
                st.rcur = 0;
                operand_due = true;
            }
            b'+' | b'-' | b'*' | b'/' | b'%' | b'^' | b'<' | b'>' | b'=' | b'!' | b'|' | b'&' | b'~'
            | b'#' | b'@' | b':' => {
                while i + 1 < b.len() && b"+-*/%^<>=!|&~#@:".contains(&b[i + 1]) {
                    i += 1;
                }
                st.bump(operand_due);
                operand_due = true;
            }
            c if c.is_ascii_alphanumeric() || c == b'_' => {
                let start = i;
                while i + 1 < b.len()
                    && (b[i + 1].is_ascii_alphanumeric() || b[i + 1] == b'_' || b[i + 1] == b'.')
                {
                    i += 1;
                }
                let w = &sql[start..=i];
                if [
                    "and", "or", "not", "is", "like", "ilike", "between", "case", "when", "select",
                ]
                .iter()
                .any(|k| w.eq_ignore_ascii_case(k))
                {
                    st.bump(operand_due);
                    operand_due = true;
                } else {
                    operand_due = false;
                }
            }
            c if c.is_ascii_whitespace() => {}
            _ => operand_due = false,
        }
        i += 1;
    }
    (st.max, st.rmax)
}

/// Runs `f` (a statement of estimated nesting `n`) with enough stack for the recursion of the
/// binder and executor over its depth: on a fresh stack segment when the current thread has
/// too little left (deep statements only; ordinary ones just check the remaining stack).
pub(super) fn with_stack<T>(n: usize, f: impl FnOnce() -> T) -> T {
    let need = (256 << 10) + n * (16 << 10);
    stacker::maybe_grow(need, need * 2, f)
}

/// Parses SQL text (PostgreSQL dialect) into statements; syntax errors are 42601, statements
/// nested deeper than [`MAX_NESTING`] (or than the parser's recursion limit) 54001.
pub fn parse(sql: &str) -> Result<Vec<A::Statement>> {
    // Depth can only exceed the limit with at least that many bytes.
    if sql.len() > MAX_NESTING {
        let (n, recursive) = nesting(sql);
        if recursive > MAX_NESTING {
            // PostgreSQL's parser runs out of its stack on these: a syntax error.
            return Err(Error::syntax(format!(
                "syntax error: parentheses or prefix operators nested {recursive} deep (more than {MAX_NESTING})"
            )));
        }
        if n > MAX_NESTING {
            return Err(too_complex(&format!(
                "expression nesting of about {n} exceeds {MAX_NESTING}"
            )));
        }
    }
    let dialect = PostgreSqlDialect {};
    Parser::new(&dialect)
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_statements())
        .map_err(|e| {
            if matches!(e, sqlparser::parser::ParserError::RecursionLimitExceeded) {
                return Error::syntax("syntax error: nesting exceeds the parser's recursion limit");
            }
            let msg = e.to_string();
            let msg = msg.strip_prefix("sql parser error: ").unwrap_or(&msg).to_string();
            Error::syntax(format!("syntax error: {msg}"))
        })
}
