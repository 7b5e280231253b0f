//! SQL text before the parser: sqlparser's tokenizer (PostgreSQL dialect) with each token's byte
//! range, and what is read from the tokens alone: statement boundaries, leading keyword, depth.
//!
//! The embedded API ([`crate::sql::Session`]), the server (simple-protocol query strings, psql's
//! catalog queries) and the `augur sql` shell all split and classify SQL text here, so quoting
//! (`'...'`, `E'...'`, `"..."`, `$tag$...$tag$`) and comments (`--`, nested `/* */`) are
//! understood in one place, the same way the parser understands them.

use std::ops::Range;

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use crate::error::{Error, Result};

/// SQL text and its tokens.
pub struct Lexed<'a> {
    pub sql: &'a str,
    pub tokens: Vec<TokenWithSpan>,
    /// Byte range in `sql` of each token (tokens cover the text: whitespace and comments are
    /// tokens too).
    pub ranges: Vec<Range<usize>>,
}

/// One statement of a text: its tokens (indices into [`Lexed::tokens`], without the `;` that
/// ends it) and its text, trimmed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece<'a> {
    pub tokens: Range<usize>,
    pub text: &'a str,
}

/// Tokenizes `sql`. A text the tokenizer rejects (an unterminated string, quoted identifier,
/// dollar quote or comment) is a syntax error (42601), as the parser reports it.
pub fn lex(sql: &str) -> Result<Lexed<'_>> {
    let mut tokens = Vec::new();
    tokenize(sql, &mut tokens).map_err(|e| Error::syntax(format!("syntax error: {e}")))?;
    let ranges = byte_ranges(sql, &tokens);
    Ok(Lexed { sql, tokens, ranges })
}

fn tokenize(
    sql: &str,
    buf: &mut Vec<TokenWithSpan>,
) -> std::result::Result<(), sqlparser::tokenizer::TokenizerError> {
    let dialect = PostgreSqlDialect {};
    Tokenizer::new(&dialect, sql).tokenize_with_location_into_buf(buf)
}

/// The byte range of each token, from the line and column where each starts (the tokenizer
/// counts columns in characters; every character belongs to exactly one token).
fn byte_ranges(sql: &str, tokens: &[TokenWithSpan]) -> Vec<Range<usize>> {
    let mut starts = Vec::with_capacity(tokens.len() + 1);
    let mut chars = sql.char_indices().peekable();
    let (mut line, mut col) = (1u64, 1u64);
    for t in tokens {
        let want = (t.span.start.line, t.span.start.column);
        while (line, col) < want {
            match chars.next() {
                Some((_, '\n')) => {
                    line += 1;
                    col = 1;
                }
                Some(_) => col += 1,
                None => break,
            }
        }
        starts.push(chars.peek().map_or(sql.len(), |&(i, _)| i));
    }
    starts.push(sql.len());
    starts.windows(2).map(|w| w[0]..w[1]).collect()
}

fn is_blank(t: &Token) -> bool {
    matches!(t, Token::Whitespace(_))
}

impl<'a> Lexed<'a> {
    /// The statements, in order: the text between top-level `;` tokens, each trimmed. A piece
    /// with nothing but whitespace and comments is dropped.
    pub fn statements(&self) -> Vec<Piece<'a>> {
        let mut out = Vec::new();
        let mut start = 0;
        for i in 0..=self.tokens.len() {
            if i < self.tokens.len() && self.tokens[i].token != Token::SemiColon {
                continue;
            }
            if self.tokens[start..i].iter().any(|t| !is_blank(&t.token)) {
                let bytes = self.ranges[start].start..self.ranges[i - 1].end;
                out.push(Piece {
                    tokens: start..i,
                    text: self.sql[bytes].trim(),
                });
            }
            start = i + 1;
        }
        out
    }

    /// The first word of the tokens in `r` (not whitespace or a comment), upper-cased: the
    /// command a statement starts with (`SELECT`, `BEGIN`, `VACUUM`, ...). Empty if the first
    /// token is not a word.
    pub fn leading_keyword(&self, r: Range<usize>) -> String {
        match self.tokens[r].iter().find(|t| !is_blank(&t.token)) {
            Some(TokenWithSpan {
                token: Token::Word(w),
                ..
            }) if w.quote_style.is_none() => w.value.to_ascii_uppercase(),
            _ => String::new(),
        }
    }

    /// The [`Nesting`] of the tokens in `r`.
    pub fn nesting(&self, r: Range<usize>) -> Nesting {
        nesting(self.sql, &self.tokens[r.clone()], &self.ranges[r])
    }
}

/// Statement texts in order, without their terminating `;` (as PostgreSQL sends one result per
/// statement of a simple-protocol query). A text the tokenizer rejects is returned whole, as one
/// statement, for the parser to report its error.
pub fn split_statements(sql: &str) -> Vec<&str> {
    split_with_keywords(sql).into_iter().map(|(s, _)| s).collect()
}

/// [`split_statements`], each statement with its [`leading_keyword`] (from the same tokens).
pub fn split_with_keywords(sql: &str) -> Vec<(&str, String)> {
    match single_statement(sql) {
        Some(one) => vec![one],
        None => split_tokenized(sql),
    }
}

/// [`split_with_keywords`] from the tokens.
fn split_tokenized(sql: &str) -> Vec<(&str, String)> {
    match lex(sql) {
        Ok(l) => l
            .statements()
            .into_iter()
            .map(|p| (p.text, l.leading_keyword(p.tokens)))
            .collect(),
        Err(_) if sql.trim().is_empty() => vec![],
        Err(_) => vec![(sql.trim(), leading_keyword(sql))],
    }
}

/// What [`split_with_keywords`] returns for the common text, read without tokenizing it: one
/// statement (no `;`, or a `;` that ends the text where nothing before it can hide one: no
/// quote, dollar quote or comment), and, when it starts with a plain word followed by
/// whitespace or the end, that word as its leading keyword. Tokenizing costs microseconds per
/// statement, and the simple protocol splits every query string (pgbench's TPC-B sends seven a
/// transaction). Anything else is None: the tokenizer decides.
fn single_statement(sql: &str) -> Option<(&str, String)> {
    let b = sql.as_bytes();
    let body = match b.iter().position(|&c| c == b';') {
        None => sql,
        Some(i) => {
            let (head, tail) = (&b[..i], &b[i + 1..]);
            let hides = head.iter().any(|&c| matches!(c, b'\'' | b'"' | b'$'))
                || head.windows(2).any(|w| w == b"--" || w == b"/*");
            if hides || !tail.iter().all(u8::is_ascii_whitespace) {
                return None;
            }
            &sql[..i]
        }
    };
    let b = body.as_bytes();
    let start = b.iter().position(|c| !c.is_ascii_whitespace())?;
    if !b[start].is_ascii_alphabetic() {
        return None;
    }
    let len = b[start..]
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_' || **c == b'$')
        .count();
    if b.get(start + len).is_some_and(|c| !c.is_ascii_whitespace()) {
        return None;
    }
    Some((body.trim(), body[start..start + len].to_ascii_uppercase()))
}

/// True if `sql` ends with a `;` outside strings and comments (the shell's end of input). A text
/// that ends inside a string, quoted identifier or comment does not.
pub fn ends_with_terminator(sql: &str) -> bool {
    match lex(sql) {
        Ok(l) => l
            .tokens
            .iter()
            .rev()
            .find(|t| !is_blank(&t.token))
            .is_some_and(|t| t.token == Token::SemiColon),
        Err(_) => false,
    }
}

/// The command `sql` starts with, upper-cased (`BEGIN`, `COMMIT`, ...), read from the tokens
/// before any the tokenizer rejects.
pub fn leading_keyword(sql: &str) -> String {
    let mut tokens = Vec::new();
    let _ = tokenize(sql, &mut tokens);
    let ranges = byte_ranges(sql, &tokens);
    let l = Lexed { sql, tokens, ranges };
    l.leading_keyword(0..l.tokens.len())
}

/// How deeply a statement's expressions may nest, estimated from its tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Nesting {
    /// Along each path of parentheses, the operators (`+ - * / % ^ < > = ! | & ~ # @ : ?`
    /// runs and the keywords AND, OR, NOT, IS, LIKE, ILIKE, BETWEEN, CASE, WHEN, SELECT) in the
    /// enclosing comma-separated segments, plus one per parenthesis: an upper estimate of the
    /// depth of the syntax tree.
    pub depth: usize,
    /// The part of `depth` the parser itself recurses over: parentheses and prefix operators
    /// (`- - 1`, `NOT NOT x`, `CASE WHEN ... CASE`), where an operand was due.
    pub recursive: usize,
}

/// An upper estimate of the expression depth of SQL text ([`Nesting::depth`]), without parsing
/// it. O(n), no recursion; 0 for a text the tokenizer rejects (the parser reports it).
pub fn nesting_estimate(sql: &str) -> usize {
    lex(sql).map_or(0, |l| l.nesting(0..l.tokens.len()).depth)
}

const NESTING_KEYWORDS: [&str; 10] = [
    "and", "or", "not", "is", "like", "ilike", "between", "case", "when", "select",
];

fn nesting(sql: &str, tokens: &[TokenWithSpan], ranges: &[Range<usize>]) -> Nesting {
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
    let mut st = Nest {
        ops: vec![(0, 0)],
        ..Nest::default()
    };
    let mut operand_due = true;
    // The previous token was an operator: a run of operator characters (`<=`, `||`, `+-`) is
    // one operator, however the tokenizer cuts it.
    let mut after_op = false;
    for (t, r) in tokens.iter().zip(ranges) {
        let text = &sql[r.clone()];
        let op = !text.is_empty() && text.bytes().all(|c| b"+-*/%^<>=!|&~#@:?".contains(&c));
        if !op {
            after_op = false;
        }
        match &t.token {
            Token::Whitespace(_) => {}
            Token::LParen => {
                st.bump(true);
                st.ops.push((0, 0));
                operand_due = true;
            }
            Token::RParen => {
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
            Token::Comma => {
                if let Some(top) = st.ops.last_mut() {
                    st.cur = st.cur.saturating_sub(top.0);
                    st.rcur = st.rcur.saturating_sub(top.1);
                    *top = (0, 0);
                }
                operand_due = true;
            }
            Token::SemiColon => {
                st.ops = vec![(0, 0)];
                st.cur = 0;
                st.rcur = 0;
                operand_due = true;
            }
            _ if op => {
                if !after_op {
                    st.bump(operand_due);
                }
                after_op = true;
                operand_due = true;
            }
            Token::Word(w)
                if w.quote_style.is_none()
                    && NESTING_KEYWORDS.iter().any(|k| w.value.eq_ignore_ascii_case(k)) =>
            {
                st.bump(operand_due);
                operand_due = true;
            }
            _ => operand_due = false,
        }
    }
    Nesting {
        depth: st.max,
        recursive: st.rmax,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits() {
        assert_eq!(
            split_statements("select 1; select 2"),
            vec!["select 1", "select 2"]
        );
        assert_eq!(
            split_statements("select ';'; select 2;"),
            vec!["select ';'", "select 2"]
        );
        assert_eq!(split_statements("select 'it''s;'"), vec!["select 'it''s;'"]);
        assert_eq!(
            split_statements("select E'a\\';b'; x"),
            vec!["select E'a\\';b'", "x"]
        );
        assert_eq!(
            split_statements("select \"a;b\" from t"),
            vec!["select \"a;b\" from t"]
        );
        assert_eq!(
            split_statements("select $$a;b$$; select $x$;$x$"),
            vec!["select $$a;b$$", "select $x$;$x$"]
        );
        assert_eq!(
            split_statements("select $1; select 2"),
            vec!["select $1", "select 2"]
        );
        assert_eq!(
            split_statements("-- c;\nselect 1 /* ; /* ; */ */;"),
            vec!["-- c;\nselect 1 /* ; /* ; */ */"]
        );
        assert_eq!(
            split_statements("select 'é;'; select 'ü'"),
            vec!["select 'é;'", "select 'ü'"]
        );
        assert_eq!(
            split_statements("select 1;\r\n  select\n 2 ;\n"),
            vec!["select 1", "select\n 2"]
        );
        assert!(split_statements(" ; -- only\n ;").is_empty());
        assert!(split_statements("").is_empty());
        // Unterminated: one statement, for the parser to reject.
        assert_eq!(
            split_statements("select 1; select 'x"),
            vec!["select 1; select 'x"]
        );
    }

    #[test]
    fn one_statement_read_without_tokens_is_what_the_tokens_say() {
        // Read without tokenizing: the answer must be the tokenizer's.
        for sql in [
            "SELECT abalance FROM pgbench_accounts WHERE aid = 5;",
            "UPDATE pgbench_branches SET bbalance = bbalance + -42 WHERE bid = 1;",
            "INSERT INTO h (tid, bid, aid, delta, mtime) VALUES (1, 1, 7, -42, CURRENT_TIMESTAMP);",
            "BEGIN;",
            "END;",
            "  begin  ",
            "\n\tselect\n1 ;\r\n ",
            "vacuum 'unterminated",
            "select $1",
            "x$y z",
            "COMMIT",
        ] {
            let one = single_statement(sql).unwrap_or_else(|| panic!("not read without tokens: {sql:?}"));
            assert_eq!(vec![one], split_tokenized(sql), "{sql:?}");
        }
        // Left to the tokenizer: a `;` that may not end the statement, two statements, a
        // comment or quote first, a word run into a quote or another character.
        for sql in [
            "select ';'",
            "select 'a;'",
            "select 'a;b' -- x",
            "select 'a;",
            "select $$;$$",
            "select 1 -- ;",
            "select 1 /* ; */",
            "select \"a;\"",
            "select 1; select 2",
            "select 1;;",
            ";",
            "",
            "   ",
            "-- c\nselect 1",
            "/* c */ select 1",
            "(select 1)",
            "E'x'",
            "U&\"x\"",
            "select(1)",
            "selecté 1",
            "select\u{a0}1",
        ] {
            assert_eq!(single_statement(sql), None, "{sql:?}");
            assert_eq!(split_with_keywords(sql), split_tokenized(sql), "{sql:?}");
        }
    }

    #[test]
    fn terminators_and_keywords() {
        assert!(ends_with_terminator("select 1;\n"));
        assert!(!ends_with_terminator("select ';"));
        assert!(!ends_with_terminator("select 1 -- ;"));
        assert!(!ends_with_terminator("select $$;"));
        assert!(!ends_with_terminator("select 1 /* ; "));
        assert_eq!(leading_keyword("  -- c\n begin;"), "BEGIN");
        assert_eq!(leading_keyword("/* x */COMMIT"), "COMMIT");
        assert_eq!(leading_keyword("vacuum 'unterminated"), "VACUUM");
        assert_eq!(leading_keyword("(select 1)"), "");
    }

    #[test]
    fn nesting_estimates() {
        assert_eq!(nesting_estimate("SELECT 1"), 1);
        assert_eq!(nesting_estimate("SELECT 1 + 2 * 3"), 3);
        assert!(nesting_estimate(&format!("SELECT 1{}", "+1".repeat(500))) >= 500);
        assert!(nesting_estimate(&format!("SELECT {}1{}", "(".repeat(300), ")".repeat(300))) >= 300);
        // Operator runs count once; a list is as deep as its deepest item.
        assert_eq!(nesting_estimate("SELECT 1 <= 2"), 2);
        assert!(nesting_estimate("SELECT f(1, 2, 3, 4, 5, 6, 7, 8)") < 4);
        let l = lex("SELECT - - - 1").unwrap();
        let n = l.nesting(0..l.tokens.len());
        assert_eq!(n.recursive, 4);
    }
}
