//! `ALTER SEQUENCE [IF EXISTS] name ...`, which sqlparser 0.63 does not parse: `RENAME TO
//! new`, `OWNER TO role`, `SET SCHEMA schema`, `SET LOGGED` / `SET UNLOGGED` (the sequence
//! stays logged), or a list of options: RESTART [[WITH] n] and OWNED BY table.column / NONE
//! are read here, the others (AS type, INCREMENT [BY], [NO]
//! MINVALUE / MAXVALUE, START [WITH], [NO] CYCLE, CACHE) by sqlparser as the options of a
//! CREATE SEQUENCE. Anything else is 42601, an option given twice too. It changes the sequence
//! at once and durably; inside a transaction block, of a sequence the block did not create, the
//! block's rollback puts back its parameters and owner but never moves its position back
//! (`Database::restore_sequence`); RENAME TO is refused in a block (25001).

use sqlparser::ast as A;
use sqlparser::tokenizer::{Token, TokenWithSpan};

use super::block_ddl::Created;
use super::sequence_params::{init_params, sequence_type};
use super::Session;
use crate::error::{Error, Result, SqlState};
use crate::seam::prelude::*;
use crate::sql::bind::object_name;
use crate::sql::catalog::{parse_relname, ROLE_NAME};
use crate::sql::result::StatementResult;

/// An ALTER SEQUENCE statement, read from its tokens.
#[derive(Debug)]
pub(super) struct AlterSequence {
    name: A::ObjectName,
    if_exists: bool,
    action: Action,
}

/// What an ALTER SEQUENCE does.
#[derive(Debug)]
enum Action {
    /// `RENAME TO name`.
    Rename(String),
    /// `OWNER TO role`: the role's name, None for CURRENT_USER / SESSION_USER / CURRENT_ROLE.
    Owner(Option<String>),
    /// `SET SCHEMA name`.
    SetSchema(String),
    /// `SET LOGGED` / `SET UNLOGGED`: every sequence stays logged (crash-safe).
    SetLogged,
    Options {
        /// `AS type`, checked once the sequence is found.
        as_type: Option<A::DataType>,
        /// `RESTART` (at the start value) or `RESTART [WITH] n`.
        restart: Option<Option<i64>>,
        /// `OWNED BY [schema.]table.column` or `OWNED BY NONE`.
        owned_by: Option<Option<(String, String)>>,
        /// The schema `OWNED BY` names (public, or 3F000 / 42P01 once the sequence is found).
        owned_schema: Option<String>,
        options: Vec<A::SequenceOptions>,
        /// An option was given twice (42601 once the sequence is found).
        redundant: bool,
    },
}

/// The keywords an option other than RESTART and OWNED BY starts with.
const OPTION_KEYWORDS: &[&str] = &[
    "AS",
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
    let name = crate::sql::parse::parse(&format!("DROP SEQUENCE {name_text}"))?
        .pop()
        .and_then(|s| match s {
            A::Statement::Drop { mut names, .. } => names.pop(),
            _ => None,
        })
        .ok_or_else(|| syntax(None))?;
    // RENAME TO, OWNER TO and SET SCHEMA stand alone, each naming one identifier.
    let one_name = |i: usize| -> Result<String> {
        match toks.get(i) {
            Some(Token::Word(w)) if w.quote_style.is_some() && w.value.is_empty() => Err(Error::syntax(
                "zero-length delimited identifier at or near \"\"\"\"",
            )),
            Some(Token::Word(w)) if toks.len() == i + 1 => Ok(ident_of(w)),
            Some(Token::Word(_)) => Err(syntax(toks.get(i + 1))),
            t => Err(syntax(t)),
        }
    };
    let alone = if kw(i, "RENAME") && kw(i + 1, "TO") {
        Some(Action::Rename(one_name(i + 2)?))
    } else if kw(i, "OWNER") && kw(i + 1, "TO") {
        let role = one_name(i + 2)?;
        let special = ["CURRENT_USER", "SESSION_USER", "CURRENT_ROLE"]
            .iter()
            .any(|k| kw(i + 2, k));
        Some(Action::Owner((!special).then_some(role)))
    } else if kw(i, "SET") && kw(i + 1, "SCHEMA") {
        Some(Action::SetSchema(one_name(i + 2)?))
    } else if kw(i, "SET") && (kw(i + 1, "LOGGED") || kw(i + 1, "UNLOGGED")) && toks.len() == i + 2 {
        Some(Action::SetLogged)
    } else {
        None
    };
    if let Some(action) = alone {
        return Ok(AlterSequence {
            name,
            if_exists,
            action,
        });
    }
    let mut restart = None;
    let mut owned_by = None;
    let mut owned_schema = None;
    // The options given, by name: each at most once (42601 once the sequence is found, as
    // PostgreSQL).
    let mut seen: Vec<&str> = Vec::new();
    let mut redundant = false;
    let mut once = |o: &'static str| {
        redundant |= seen.contains(&o);
        seen.push(o);
    };
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
            once("restart");
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
            once("owned_by");
            i += 2;
            if kw(i, "NONE") {
                owned_by = Some(None);
                i += 1;
            } else {
                // [schema.]table.column
                let mut parts = Vec::new();
                while let Some(Token::Word(w)) = toks.get(i) {
                    parts.push(ident_of(w));
                    i += 1;
                    if !matches!(toks.get(i), Some(Token::Period)) {
                        break;
                    }
                    i += 1;
                }
                let c = parts.pop();
                match (parts.len(), c) {
                    (1 | 2, Some(c)) => {
                        let t = parts.pop().expect("one or two parts left");
                        owned_schema = parts.pop();
                        owned_by = Some(Some((t, c)));
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
    let mut as_type = None;
    for r in &rest {
        match crate::sql::parse::parse(&format!("CREATE SEQUENCE augur_alter{r}"))?.pop() {
            Some(A::Statement::CreateSequence {
                sequence_options,
                data_type,
                owned_by: None,
                ..
            }) if sequence_options.len() + usize::from(data_type.is_some()) == 1 => {
                if let Some(dt) = data_type {
                    once("as");
                    as_type = Some(dt);
                }
                for o in &sequence_options {
                    once(match o {
                        A::SequenceOptions::IncrementBy(..) => "increment",
                        A::SequenceOptions::MinValue(_) => "minvalue",
                        A::SequenceOptions::MaxValue(_) => "maxvalue",
                        A::SequenceOptions::StartWith(..) => "start",
                        A::SequenceOptions::Cache(_) => "cache",
                        A::SequenceOptions::Cycle(_) => "cycle",
                    });
                }
                options.extend(sequence_options);
            }
            _ => return Err(Error::syntax(format!("syntax error at or near \"{}\"", r.trim()))),
        }
    }
    if restart.is_none() && owned_by.is_none() && options.is_empty() && as_type.is_none() {
        return Err(syntax(None));
    }
    Ok(AlterSequence {
        name,
        if_exists,
        action: Action::Options {
            as_type,
            restart,
            owned_by,
            owned_schema,
            options,
            redundant,
        },
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
        let name = object_name(&a.name)?;
        let undo = self.tx.is_some() && self.alter_sequence_in_block(&name, a)?;
        let tag = || {
            Ok(StatementResult::Command {
                tag: "ALTER SEQUENCE".into(),
            })
        };
        if !self.db.has_sequence(&name)? {
            if self.relation_exists(&name) {
                return Err(Error::new(
                    SqlState("42809"),
                    format!("\"{name}\" is not a sequence"),
                ));
            }
            if a.if_exists {
                return tag();
            }
            return Err(Error::undefined_table(&name));
        }
        match &a.action {
            Action::Rename(to) => self.rename_sequence(&name, to)?,
            Action::Owner(role) => {
                // Augur has one role, which owns every relation.
                if let Some(r) = role.as_deref().filter(|r| *r != ROLE_NAME) {
                    return Err(Error::new(
                        SqlState("42704"),
                        format!("role \"{r}\" does not exist"),
                    ));
                }
            }
            Action::SetSchema(schema) => set_schema(schema)?,
            // Nothing to do for a logged sequence (PostgreSQL's answer too); an unlogged one is
            // kept logged, as CREATE UNLOGGED TABLE keeps its table.
            Action::SetLogged => {}
            Action::Options {
                as_type,
                restart,
                owned_by,
                owned_schema,
                options,
                redundant,
            } => {
                if *redundant {
                    return Err(Error::syntax("conflicting or redundant options"));
                }
                if let (Some(sch), Some(Some((t, _)))) = (owned_schema.as_deref(), owned_by) {
                    match sch {
                        "public" => {}
                        "pg_catalog" | "information_schema" => {
                            return Err(Error::undefined_table(&format!("{sch}.{t}")))
                        }
                        _ => {
                            return Err(Error::new(
                                SqlState("3F000"),
                                format!("schema \"{sch}\" does not exist"),
                            ))
                        }
                    }
                }
                let as_type = as_type.as_ref().map(sequence_type).transpose()?;
                if let Some(Some((t, c))) = owned_by {
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
                init_params(&mut sd, as_type, options, false)?;
                if let Some(o) = owned_by {
                    sd.owned_by = o.clone();
                }
                let restart = restart.map(|r| r.unwrap_or(sd.start));
                let before = self.db.alter_sequence(&name, &sd, restart)?;
                if undo {
                    self.altered_sequence(before);
                }
            }
        }
        tag()
    }

    /// Inside a transaction block: whether ALTER SEQUENCE of `name` must be recorded for the
    /// block's rollback. Of a sequence the block created after every open savepoint it applies
    /// as it is (the rollback drops the sequence); of any other it is recorded
    /// ([`Session::altered_sequence`]). `RENAME TO` is refused (25001: the rollback could not
    /// follow the new name).
    fn alter_sequence_in_block(&self, name: &str, a: &AlterSequence) -> Result<bool> {
        if matches!(a.action, Action::Rename(_)) {
            return Err(Error::new(
                SqlState::ACTIVE_SQL_TRANSACTION,
                "ALTER SEQUENCE RENAME TO cannot run inside a transaction block in Augur (a ROLLBACK could not undo it); run it outside a transaction block",
            ));
        }
        let c = Created::Sequence(name.to_string());
        let created = self.block.position(&c).is_some();
        let behind = created && self.created_before_savepoint(&c);
        Ok(!created || behind)
    }

    /// `ALTER SEQUENCE from RENAME TO to`: the column defaults that call `nextval` of it
    /// follow it (PostgreSQL's name it by OID).
    fn rename_sequence(&mut self, from: &str, to: &str) -> Result<()> {
        if self.relation_exists(to) {
            return Err(Error::new(
                SqlState::DUPLICATE_TABLE,
                format!("relation \"{to}\" already exists"),
            ));
        }
        self.db.rename_sequence(from, to)?;
        for t in self.db.tables() {
            let d = t.def();
            let mut nd = (*d).clone();
            let mut changed = false;
            for c in &mut nd.columns {
                if let Some(text) = &c.default {
                    let new = rename_sequence_in(text, from, to)?;
                    changed |= new != *text;
                    c.default = Some(new);
                }
            }
            if changed {
                self.db.alter_table_def(&d.name, |_| Ok(nd), None)?;
            }
        }
        self.clear_plan_cache();
        Ok(())
    }
}

/// `SET SCHEMA schema`: Augur has one schema, public, where the sequence already is.
fn set_schema(schema: &str) -> Result<()> {
    let unsupported = |m: &str| Error::new(SqlState::FEATURE_NOT_SUPPORTED, m.to_string());
    match schema {
        "public" => Ok(()),
        "pg_toast" => Err(unsupported("cannot move objects into or out of TOAST schema")),
        s if s == "pg_temp" || s.starts_with("pg_temp_") => Err(unsupported(
            "cannot move objects into or out of temporary schemas",
        )),
        "pg_catalog" | "information_schema" => {
            Err(unsupported("Augur keeps user relations in schema public only"))
        }
        s => Err(Error::new(
            SqlState("3F000"),
            format!("schema \"{s}\" does not exist"),
        )),
    }
}

/// A column default's `text` with each `nextval` / `currval` / `setval` of sequence `from`
/// naming `to` instead; the rest of the text is kept byte for byte.
fn rename_sequence_in(text: &str, from: &str, to: &str) -> Result<String> {
    let l = crate::sql::lexer::lex(text)?;
    let simple = !to.is_empty()
        && to.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && to
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    let quoted = if simple {
        to.to_string()
    } else {
        format!("\"{}\"", to.replace('"', "\"\""))
    };
    let words: Vec<usize> = (0..l.tokens.len())
        .filter(|&i| !matches!(l.tokens[i].token, Token::Whitespace(_)))
        .collect();
    let mut out = String::with_capacity(text.len() + to.len());
    let mut last = 0;
    for w in words.windows(3) {
        let is_fn = matches!(&l.tokens[w[0]].token, Token::Word(f) if f.quote_style.is_none()
            && ["nextval", "currval", "setval"].contains(&f.value.to_lowercase().as_str()));
        match (&l.tokens[w[1]].token, &l.tokens[w[2]].token) {
            (Token::LParen, Token::SingleQuotedString(s)) if is_fn && parse_relname(s) == from => {
                let r = &l.ranges[w[2]];
                out.push_str(&text[last..r.start]);
                out.push('\'');
                out.push_str(&quoted.replace('\'', "''"));
                out.push('\'');
                last = r.end;
            }
            _ => {}
        }
    }
    out.push_str(&text[last..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::rename_sequence_in;

    #[test]
    fn defaults_follow_a_renamed_sequence() {
        let r = |t: &str, to: &str| rename_sequence_in(t, "s", to).unwrap();
        assert_eq!(r("nextval('s')", "t"), "nextval('t')");
        assert_eq!(
            r("NEXTVAL ( 'S'::regclass) + 1", "t"),
            "NEXTVAL ( 't'::regclass) + 1"
        );
        assert_eq!(r("nextval('public.s')", "T"), "nextval('\"T\"')");
        assert_eq!(
            r("nextval('s2') + length('s')", "t"),
            "nextval('s2') + length('s')"
        );
        assert_eq!(r("nextval('\"s\"')", "o'k"), "nextval('\"o''k\"')");
    }
}
