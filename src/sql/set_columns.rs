//! PostgreSQL 15's column list after a foreign key's `ON DELETE SET NULL` / `SET DEFAULT`
//! (`REFERENCES p ON DELETE SET NULL (b)`: only `b` is set), which sqlparser does not read:
//! [`take`] removes each list from the tokens before they are parsed, and [`attach`] puts it
//! back into the syntax tree, on the foreign key it follows, in the constraint's `index_name`
//! (MySQL's `FOREIGN KEY name (...)`, which PostgreSQL does not have) marked by a leading NUL,
//! which no SQL text can hold. [`of`] reads it back for the DDL that creates the key.

use sqlparser::ast as A;
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Location, Token, TokenWithSpan};

use crate::error::{Error, Result, SqlState};

/// A column list taken out of the tokens: where its `ON` was, and the columns.
pub(super) struct SetList {
    at: Location,
    columns: Vec<A::Ident>,
}

const MARK: char = '\0';

fn word(t: &Token, k: Keyword) -> bool {
    matches!(t, Token::Word(w) if w.keyword == k)
}

/// Removes every `( columns )` that follows `ON DELETE SET NULL` / `ON DELETE SET DEFAULT`
/// from `tokens`; the same after `ON UPDATE` is PostgreSQL's 0A000.
pub(super) fn take(tokens: Vec<TokenWithSpan>) -> Result<(Vec<TokenWithSpan>, Vec<SetList>)> {
    let mut lists = Vec::new();
    let significant: Vec<usize> = (0..tokens.len())
        .filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
        .collect();
    let mut drop = vec![false; tokens.len()];
    let tok = |k: usize| significant.get(k).map(|&i| &tokens[i].token);
    let mut k = 0;
    while k + 4 < significant.len() {
        let is = |d: usize, kw: Keyword| tok(k + d).is_some_and(|t| word(t, kw));
        let set_what = if is(3, Keyword::NULL) {
            "SET NULL"
        } else if is(3, Keyword::DEFAULT) {
            "SET DEFAULT"
        } else {
            ""
        };
        let action =
            is(0, Keyword::ON) && (is(1, Keyword::DELETE) || is(1, Keyword::UPDATE)) && is(2, Keyword::SET);
        if !action || set_what.is_empty() || tok(k + 4) != Some(&Token::LParen) {
            k += 1;
            continue;
        }
        if is(1, Keyword::UPDATE) {
            return Err(Error::new(
                SqlState::FEATURE_NOT_SUPPORTED,
                format!("a column list with {set_what} is only supported for ON DELETE actions"),
            ));
        }
        let at = tokens[significant[k]].span.start;
        let mut columns = Vec::new();
        let mut j = k + 5;
        loop {
            match tok(j) {
                Some(Token::Word(w)) => columns.push(A::Ident {
                    value: w.value.clone(),
                    quote_style: w.quote_style,
                    span: tokens[significant[j]].span,
                }),
                other => {
                    let near = other.map_or("end of input".to_string(), |t| t.to_string());
                    return Err(Error::syntax(format!("syntax error at or near \"{near}\"")));
                }
            }
            j += 1;
            match tok(j) {
                Some(Token::Comma) => j += 1,
                Some(Token::RParen) => break,
                other => {
                    let near = other.map_or("end of input".to_string(), |t| t.to_string());
                    return Err(Error::syntax(format!("syntax error at or near \"{near}\"")));
                }
            }
        }
        for d in &mut drop[significant[k + 4]..=significant[j]] {
            *d = true;
        }
        lists.push(SetList { at, columns });
        k = j + 1;
    }
    if lists.is_empty() {
        return Ok((tokens, lists));
    }
    let kept = tokens
        .into_iter()
        .zip(drop)
        .filter_map(|(t, d)| (!d).then_some(t))
        .collect();
    Ok((kept, lists))
}

/// Puts each list taken by [`take`] back on its foreign key in `stmts`: the last key whose
/// referenced table's name starts before the list's `ON`.
pub(super) fn attach(stmts: &mut [A::Statement], lists: Vec<SetList>) -> Result<()> {
    if lists.is_empty() {
        return Ok(());
    }
    let mut keys: Vec<&mut A::ForeignKeyConstraint> = Vec::new();
    for s in stmts.iter_mut() {
        match s {
            A::Statement::CreateTable(ct) => {
                for c in &mut ct.columns {
                    keys.extend(column_keys(c));
                }
                for c in &mut ct.constraints {
                    if let A::TableConstraint::ForeignKey(fk) = c {
                        keys.push(fk);
                    }
                }
            }
            A::Statement::AlterTable(at) => {
                for op in &mut at.operations {
                    match op {
                        A::AlterTableOperation::AddConstraint {
                            constraint: A::TableConstraint::ForeignKey(fk),
                            ..
                        } => keys.push(fk),
                        A::AlterTableOperation::AddColumn { column_def, .. } => {
                            keys.extend(column_keys(column_def))
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    let start = |fk: &A::ForeignKeyConstraint| {
        fk.foreign_table
            .0
            .first()
            .and_then(|p| p.as_ident())
            .map(|i| i.span.start)
    };
    for l in lists {
        let owner = keys
            .iter_mut()
            .filter(|fk| start(fk).is_some_and(|s| s < l.at))
            .max_by_key(|fk| start(fk));
        let Some(fk) = owner else {
            return Err(Error::syntax("syntax error at or near \"(\""));
        };
        // Each column as the mark, `"` when it was quoted (else a space), and its name.
        let mut v = String::new();
        for c in &l.columns {
            v.push(MARK);
            v.push(if c.quote_style.is_some() { '"' } else { ' ' });
            v.push_str(&c.value);
        }
        fk.index_name = Some(A::Ident::new(v));
    }
    Ok(())
}

fn column_keys(c: &mut A::ColumnDef) -> impl Iterator<Item = &mut A::ForeignKeyConstraint> {
    c.options.iter_mut().filter_map(|o| match &mut o.option {
        A::ColumnOption::ForeignKey(fk) => Some(fk),
        _ => None,
    })
}

/// The columns a foreign key's ON DELETE SET NULL / SET DEFAULT names (None: all of the key's);
/// a name given after `FOREIGN KEY` (MySQL's index name) is PostgreSQL's 42601.
pub fn of(fk: &A::ForeignKeyConstraint) -> Result<Option<Vec<A::Ident>>> {
    match &fk.index_name {
        None => Ok(None),
        Some(i) if i.value.starts_with(MARK) => Ok(Some(
            i.value[1..]
                .split(MARK)
                .map(|c| match c.strip_prefix('"') {
                    Some(q) => A::Ident::with_quote('"', q),
                    None => A::Ident::new(c.strip_prefix(' ').unwrap_or(c)),
                })
                .collect(),
        )),
        Some(i) => Err(Error::syntax(format!("syntax error at or near \"{i}\""))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(sql: &str) -> Vec<(String, Option<Vec<String>>)> {
        let stmts = crate::sql::parse(sql).unwrap();
        let mut out = Vec::new();
        for s in &stmts {
            if let A::Statement::CreateTable(ct) = s {
                let named = |fk: &A::ForeignKeyConstraint| {
                    let cols = of(fk)
                        .unwrap()
                        .map(|c| c.iter().map(|i| i.value.clone()).collect());
                    (fk.foreign_table.to_string(), cols)
                };
                for c in &ct.columns {
                    for o in &c.options {
                        if let A::ColumnOption::ForeignKey(fk) = &o.option {
                            out.push(named(fk));
                        }
                    }
                }
                for c in &ct.constraints {
                    if let A::TableConstraint::ForeignKey(fk) = c {
                        out.push(named(fk));
                    }
                }
            }
        }
        out
    }

    #[test]
    fn lists_go_to_their_keys() {
        let got = keys(
            "CREATE TABLE c (a int REFERENCES p1 ON DELETE SET NULL (a), b int REFERENCES p2, \
             \"C\" int, FOREIGN KEY (b, \"C\") REFERENCES p3 ON UPDATE CASCADE ON DELETE SET DEFAULT (\"C\", b));\
             CREATE TABLE d (x int REFERENCES p4 ON DELETE SET NULL)",
        );
        let some = |v: &[&str]| Some(v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(
            got,
            vec![
                ("p1".into(), some(&["a"])),
                ("p2".into(), None),
                ("p3".into(), some(&["C", "b"])),
                ("p4".into(), None),
            ]
        );
    }

    #[test]
    fn bad_lists() {
        let e = crate::sql::parse("CREATE TABLE c (a int REFERENCES p ON UPDATE SET NULL (a))").unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::FEATURE_NOT_SUPPORTED);
        let e = crate::sql::parse("CREATE TABLE c (a int REFERENCES p ON DELETE SET NULL (a,))").unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::SYNTAX_ERROR);
        // MySQL's index name after FOREIGN KEY is not PostgreSQL's.
        let stmts = crate::sql::parse("CREATE TABLE c (a int, FOREIGN KEY ix (a) REFERENCES p)").unwrap();
        let A::Statement::CreateTable(ct) = &stmts[0] else {
            panic!("not a CREATE TABLE")
        };
        let A::TableConstraint::ForeignKey(fk) = &ct.constraints[0] else {
            panic!("not a foreign key")
        };
        assert_eq!(of(fk).unwrap_err().sqlstate(), SqlState::SYNTAX_ERROR);
    }
}
