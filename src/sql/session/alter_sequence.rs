//! `ALTER SEQUENCE [IF EXISTS] name option ...`, which sqlparser 0.63 does not parse: RESTART
//! [[WITH] n] and OWNED BY table.column / NONE are read here, the other options (INCREMENT
//! [BY], [NO] MINVALUE / MAXVALUE, START [WITH], [NO] CYCLE, CACHE) by sqlparser as the options
//! of a CREATE SEQUENCE. Anything else is 42601. It changes the sequence at once and durably;
//! inside a transaction block it is refused (25001), as a rollback could not undo it.

use sqlparser::ast as A;
use sqlparser::tokenizer::{Token, TokenWithSpan};

use super::ddl::{check_cache, integer_max, integer_min, sequence_int};
use super::Session;
use crate::engine::SequenceDef;
use crate::error::{Error, Result, SqlState};
use crate::seam::prelude::*;
use crate::sql::bind::object_name;
use crate::sql::result::StatementResult;

/// An ALTER SEQUENCE statement, read from its tokens.
#[derive(Debug)]
pub(super) struct AlterSequence {
    name: A::ObjectName,
    if_exists: bool,
    /// `RESTART` (at the start value) or `RESTART [WITH] n`.
    restart: Option<Option<i64>>,
    /// `OWNED BY table.column` or `OWNED BY NONE`.
    owned_by: Option<Option<(String, String)>>,
    options: Vec<A::SequenceOptions>,
}

/// The keywords an option other than RESTART and OWNED BY starts with.
const OPTION_KEYWORDS: &[&str] = &[
    "INCREMENT",
    "MINVALUE",
    "MAXVALUE",
    "NO",
    "START",
    "CACHE",
    "CYCLE",
];

fn word(t: &Token) -> Option<String> {
    match t {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
        _ => None,
    }
}

/// Whether `tokens` (one statement's) begin `ALTER SEQUENCE`.
pub(super) fn is_alter_sequence(tokens: &[TokenWithSpan]) -> bool {
    let mut w = tokens
        .iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_)))
        .map(|t| word(&t.token));
    w.next().flatten().as_deref() == Some("ALTER") && w.next().flatten().as_deref() == Some("SEQUENCE")
}

/// Reads an ALTER SEQUENCE statement's tokens (those [`is_alter_sequence`] accepted).
pub(super) fn parse(tokens: &[TokenWithSpan]) -> Result<AlterSequence> {
    let toks: Vec<&Token> = tokens
        .iter()
        .map(|t| &t.token)
        .filter(|t| !matches!(t, Token::Whitespace(_) | Token::SemiColon))
        .collect();
    let syntax = |t: Option<&&Token>| match t {
        Some(t) => Error::syntax(format!("syntax error at or near \"{t}\"")),
        None => Error::syntax("syntax error at end of input"),
    };
    let kw = |i: usize, k: &str| toks.get(i).and_then(|t| word(t)).as_deref() == Some(k);
    let mut i = 2;
    let if_exists = kw(i, "IF") && kw(i + 1, "EXISTS");
    if if_exists {
        i += 2;
    }
    // The name: a word, possibly schema-qualified.
    let mut name_text = String::new();
    loop {
        match toks.get(i) {
            Some(t @ Token::Word(_)) => name_text.push_str(&t.to_string()),
            t => return Err(syntax(t)),
        }
        i += 1;
        if matches!(toks.get(i), Some(Token::Period)) {
            name_text.push('.');
            i += 1;
        } else {
            break;
        }
    }
    let mut restart = None;
    let mut owned_by = None;
    let mut rest: Vec<String> = Vec::new();
    let number = |i: usize| -> Option<(i64, usize)> {
        let (neg, j) = match toks.get(i) {
            Some(Token::Minus) => (true, i + 1),
            _ => (false, i),
        };
        match toks.get(j) {
            Some(Token::Number(n, _)) => n.parse::<i64>().ok().map(|v| (if neg { -v } else { v }, j + 1)),
            _ => None,
        }
    };
    while i < toks.len() {
        if kw(i, "RESTART") {
            i += 1;
            let with = kw(i, "WITH");
            if with {
                i += 1;
            }
            match number(i) {
                Some((v, j)) => {
                    restart = Some(Some(v));
                    i = j;
                }
                None if with => return Err(syntax(toks.get(i))),
                None => restart = Some(None),
            }
        } else if kw(i, "OWNED") && kw(i + 1, "BY") {
            i += 2;
            if kw(i, "NONE") {
                owned_by = Some(None);
                i += 1;
            } else {
                match (toks.get(i), toks.get(i + 1), toks.get(i + 2)) {
                    (Some(Token::Word(t)), Some(Token::Period), Some(Token::Word(c))) => {
                        owned_by = Some(Some((ident_of(t), ident_of(c))));
                        i += 3;
                    }
                    _ => return Err(syntax(toks.get(i))),
                }
            }
        } else {
            // Each option is read on its own (sqlparser takes them in one order only; PostgreSQL
            // in any): a new one starts at its keyword, `NO x` being one.
            let starts = toks[i].to_string().to_ascii_uppercase();
            let after_no = i > 0 && kw(i - 1, "NO");
            if rest.last().is_none() || (OPTION_KEYWORDS.contains(&starts.as_str()) && !after_no) {
                rest.push(String::new());
            }
            let r = rest.last_mut().expect("pushed above");
            r.push(' ');
            r.push_str(&toks[i].to_string());
            i += 1;
        }
    }
    let mut options = Vec::new();
    for r in &rest {
        match crate::sql::parse::parse(&format!("CREATE SEQUENCE augur_alter{r}"))?.pop() {
            Some(A::Statement::CreateSequence {
                sequence_options,
                data_type: None,
                owned_by: None,
                ..
            }) => options.extend(sequence_options),
            _ => return Err(Error::syntax(format!("syntax error at or near \"{}\"", r.trim()))),
        }
    }
    if restart.is_none() && owned_by.is_none() && options.is_empty() {
        return Err(syntax(None));
    }
    let name = crate::sql::parse::parse(&format!("DROP SEQUENCE {name_text}"))?
        .pop()
        .and_then(|s| match s {
            A::Statement::Drop { mut names, .. } => names.pop(),
            _ => None,
        })
        .ok_or_else(|| syntax(None))?;
    Ok(AlterSequence {
        name,
        if_exists,
        restart,
        owned_by,
        options,
    })
}

fn ident_of(w: &sqlparser::tokenizer::Word) -> String {
    if w.quote_style.is_some() {
        w.value.clone()
    } else {
        w.value.to_lowercase()
    }
}

impl Session {
    pub(super) fn alter_sequence(&mut self, a: &AlterSequence) -> Result<StatementResult> {
        if self.tx.is_some() {
            return Err(Error::new(
                SqlState("25001"),
                "ALTER SEQUENCE cannot run inside a transaction block in Augur",
            ));
        }
        let name = object_name(&a.name)?;
        let tag = || {
            Ok(StatementResult::Command {
                tag: "ALTER SEQUENCE".into(),
            })
        };
        if !self.db.has_sequence(&name)? {
            if a.if_exists {
                return tag();
            }
            return Err(Error::new(
                SqlState::UNDEFINED_TABLE,
                format!("relation \"{name}\" does not exist"),
            ));
        }
        if let Some(Some((t, c))) = &a.owned_by {
            let def = self.db.table(t)?.def();
            if !def.columns.iter().any(|col| col.name == *c) {
                return Err(Error::new(
                    SqlState::UNDEFINED_COLUMN,
                    format!("column \"{c}\" of relation \"{t}\" does not exist"),
                ));
            }
        }
        let mut sd = self
            .db
            .sequences()?
            .into_iter()
            .find(|s| s.name == name)
            .ok_or_else(|| Error::internal(format!("sequence {name} vanished")))?;
        apply(&mut sd, &a.options)?;
        if let Some(o) = &a.owned_by {
            sd.owned_by = o.clone();
        }
        let restart = a.restart.map(|r| r.unwrap_or(sd.start));
        self.db.alter_sequence(&name, &sd, restart)?;
        tag()
    }
}

/// Applies ALTER SEQUENCE's options to `sd`: a bound given is set, `NO MINVALUE` / `NO
/// MAXVALUE` go back to the default for the (new) direction and the sequence's type.
fn apply(sd: &mut SequenceDef, opts: &[A::SequenceOptions]) -> Result<()> {
    let int = sequence_int;
    let type_max = integer_max(crate::sql::catalog::sequence_type(sd.max)).unwrap_or(i64::MAX);
    let type_min = integer_min(type_max);
    let (mut no_min, mut no_max) = (false, false);
    for o in opts {
        match o {
            A::SequenceOptions::IncrementBy(e, _) => sd.increment = int(e)?,
            A::SequenceOptions::MinValue(Some(e)) => sd.min = int(e)?,
            A::SequenceOptions::MinValue(None) => no_min = true,
            A::SequenceOptions::MaxValue(Some(e)) => sd.max = int(e)?,
            A::SequenceOptions::MaxValue(None) => no_max = true,
            A::SequenceOptions::StartWith(e, _) => sd.start = int(e)?,
            A::SequenceOptions::Cache(e) => check_cache(e)?,
            A::SequenceOptions::Cycle(no) => sd.cycle = !*no,
        }
    }
    let up = sd.increment > 0;
    if no_min {
        sd.min = if up { 1 } else { type_min };
    }
    if no_max {
        sd.max = if up { type_max } else { -1 };
    }
    Ok(())
}
