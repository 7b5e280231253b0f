//! SQL text to syntax trees: sqlparser with the PostgreSQL dialect over the lexer's tokens,
//! bounded in expression depth (54001) so that deep statements fail cleanly instead of
//! overflowing the stack.

use sqlparser::ast as A;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace, Word};

use super::lexer::{lex, Nesting};
use crate::error::{Error, Result, SqlState};

/// The deepest expression nesting a statement may have (estimated from its tokens by
/// [`super::nesting_estimate`]); deeper statements fail with 54001 before they are parsed. The
/// parser, binder, executor and the syntax tree's destructor all recurse over an expression's
/// depth, and a chain like `1+1+...+1` is parsed without recursion into a tree as deep as the
/// chain is long: without this bound, 100000 terms overflow the thread's stack and abort the
/// process.
pub const MAX_NESTING: usize = 1000;

fn too_complex(what: &str) -> Error {
    Error::new(
        SqlState("54001"),
        format!("statement is too complex: {what} (stack depth limit exceeded)"),
    )
}

/// Fails a text whose statements nest deeper than [`MAX_NESTING`]: 42601 where the parser
/// itself would recurse that deep (PostgreSQL's parser runs out of its stack on these), 54001
/// otherwise.
pub(super) fn check_depth(n: Nesting) -> Result<()> {
    if n.recursive > MAX_NESTING {
        return Err(Error::syntax(format!(
            "syntax error: parentheses or prefix operators nested {} deep (more than {MAX_NESTING})",
            n.recursive
        )));
    }
    if n.depth > MAX_NESTING {
        return Err(too_complex(&format!(
            "expression nesting of about {} exceeds {MAX_NESTING}",
            n.depth
        )));
    }
    Ok(())
}

/// Runs `f` (a statement of estimated nesting `n`) with enough stack for the recursion of the
/// binder and executor over its depth: on a fresh stack segment when the current thread has
/// too little left (deep statements only; ordinary ones just check the remaining stack).
pub(super) fn with_stack<T>(n: usize, f: impl FnOnce() -> T) -> T {
    let need = (256 << 10) + n * (16 << 10);
    stacker::maybe_grow(need, need * 2, f)
}

/// `RESET TIME ZONE` (PostgreSQL's spelling of `RESET timezone`, which sqlparser does not
/// parse) at the start of a statement, as `RESET timezone`.
fn reset_time_zone(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let kw = |t: &Token, k: Keyword| matches!(t, Token::Word(w) if w.keyword == k && w.quote_style.is_none());
    let blank = |t: &Token| matches!(t, Token::Whitespace(_));
    let mut at_start = true;
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i].token;
        if blank(t) {
            i += 1;
            continue;
        }
        let reset = at_start && kw(t, Keyword::RESET);
        at_start = matches!(t, Token::SemiColon);
        if reset {
            // The next two words, past whitespace.
            let words: Vec<usize> = (i + 1..tokens.len())
                .filter(|&j| !blank(&tokens[j].token))
                .take(2)
                .collect();
            if let [a, b] = words[..] {
                if kw(&tokens[a].token, Keyword::TIME) && kw(&tokens[b].token, Keyword::ZONE) {
                    tokens[a].token = Token::Word(Word {
                        value: "timezone".into(),
                        quote_style: None,
                        keyword: Keyword::NoKeyword,
                    });
                    tokens[b].token = Token::Whitespace(Whitespace::Space);
                }
            }
        }
        i += 1;
    }
    tokens
}

/// `substring(s SIMILAR p ESCAPE e)` (PostgreSQL's SQL-standard spelling, which sqlparser does
/// not parse) as `substring(s, p, e)`: the `SIMILAR` and `ESCAPE` directly inside the call's
/// parentheses become commas.
fn similar_substring(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let kw = |t: &Token, k: Keyword| matches!(t, Token::Word(w) if w.keyword == k && w.quote_style.is_none());
    let mut i = 0;
    while i < tokens.len() {
        if !kw(&tokens[i].token, Keyword::SUBSTRING) {
            i += 1;
            continue;
        }
        let Some(open) = (i + 1..tokens.len()).find(|&j| !matches!(tokens[j].token, Token::Whitespace(_)))
        else {
            break;
        };
        if tokens[open].token != Token::LParen {
            i += 1;
            continue;
        }
        // SIMILAR and ESCAPE at the call's own depth, before its closing parenthesis.
        let (mut depth, mut similar, mut escape) = (0usize, None, None);
        for (j, t) in tokens.iter().enumerate().skip(open) {
            match &t.token {
                Token::LParen => depth += 1,
                Token::RParen => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                t if depth == 1 && similar.is_none() && kw(t, Keyword::SIMILAR) => similar = Some(j),
                t if depth == 1 && similar.is_some() && kw(t, Keyword::ESCAPE) => escape = Some(j),
                _ => {}
            }
        }
        if let (Some(s), Some(e)) = (similar, escape) {
            tokens[s].token = Token::Comma;
            tokens[e].token = Token::Comma;
        }
        i = open + 1;
    }
    tokens
}

/// Parses tokens (statements separated by `;`, checked by [`check_depth`]); syntax errors are
/// 42601.
pub(super) fn parse_tokens(tokens: Vec<TokenWithSpan>) -> Result<Vec<A::Statement>> {
    let tokens = similar_substring(reset_time_zone(tokens));
    let (tokens, set_lists) = super::set_columns::take(tokens)?;
    let dialect = PostgreSqlDialect {};
    let mut stmts = Parser::new(&dialect)
        .with_tokens_with_locations(tokens)
        .parse_statements()
        .map_err(|e| {
            if matches!(e, ParserError::RecursionLimitExceeded) {
                return Error::syntax("syntax error: nesting exceeds the parser's recursion limit");
            }
            let msg = e.to_string();
            let msg = msg.strip_prefix("sql parser error: ").unwrap_or(&msg).to_string();
            Error::syntax(format!("syntax error: {msg}"))
        })?;
    super::set_columns::attach(&mut stmts, set_lists)?;
    Ok(stmts)
}

/// Parses SQL text (PostgreSQL dialect) into statements; syntax errors are 42601, statements
/// nested deeper than `MAX_NESTING` (1000; or than the parser's recursion limit) 54001.
pub fn parse(sql: &str) -> Result<Vec<A::Statement>> {
    let l = lex(sql)?;
    check_depth(l.nesting(0..l.tokens.len()))?;
    parse_tokens(l.tokens)
}
