//! COPY ... FROM STDIN: the statement's options, the text and CSV data formats, and loading the
//! rows into the session's transaction.

use sqlparser::ast as A;

use super::{now_micros, Session};
use crate::engine::Interrupt;
use crate::error::{Error, Result, SqlState};
use crate::sql::bind::{ident, object_name, Binder};
use crate::sql::dml::{bind_checks, bind_default, enforce_checks};
use crate::sql::exec::Exec;
use crate::sql::expr::assign;
use crate::sql::result::{CopyState, StatementResult};
use crate::types::{Row, Value};

impl Session {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn copy(
        &mut self,
        source: &A::CopySource,
        to: bool,
        target: &A::CopyTarget,
        options: &[A::CopyOption],
        legacy: &[A::CopyLegacyOption],
        values: &[Option<String>],
    ) -> Result<StatementResult> {
        if to {
            return self.copy_to(source, target, options, legacy);
        }
        let A::CopySource::Table { table_name, columns } = source else {
            return Err(Error::unsupported("COPY (query) is not supported"));
        };
        if to || !matches!(target, A::CopyTarget::Stdin) {
            return Err(Error::unsupported("only COPY ... FROM STDIN is supported"));
        }
        let name = object_name(table_name)?;
        let t = self.db.table(&name)?;
        let def = t.def();
        let cols = if columns.is_empty() {
            (0..def.columns.len()).collect()
        } else {
            columns
                .iter()
                .map(|c| def.column_index(&ident(c)))
                .collect::<Result<Vec<_>>>()?
        };
        let mut st = CopyState {
            table: name,
            columns: cols,
            csv: false,
            header: false,
            delimiter: '\t',
            null: "\\N".into(),
            quote: '"',
            escape: '"',
        };
        let mut delim = None;
        let mut null = None;
        for o in options {
            match o {
                A::CopyOption::Format(f) => st.csv = f.value.eq_ignore_ascii_case("csv"),
                A::CopyOption::Header(h) => st.header = *h,
                A::CopyOption::Delimiter(c) => delim = Some(*c),
                A::CopyOption::Null(n) => null = Some(n.clone()),
                A::CopyOption::Quote(c) => st.quote = *c,
                A::CopyOption::Escape(c) => st.escape = *c,
                A::CopyOption::Freeze(_) | A::CopyOption::Encoding(_) => {}
                other => {
                    return Err(Error::unsupported(format!(
                        "COPY option {other} is not supported"
                    )))
                }
            }
        }
        for o in legacy {
            match o {
                A::CopyLegacyOption::Csv(opts) => {
                    st.csv = true;
                    for c in opts {
                        match c {
                            A::CopyLegacyCsvOption::Header => st.header = true,
                            A::CopyLegacyCsvOption::Quote(q) => st.quote = *q,
                            A::CopyLegacyCsvOption::Escape(e) => st.escape = *e,
                            _ => {}
                        }
                    }
                }
                A::CopyLegacyOption::Header => st.header = true,
                A::CopyLegacyOption::Delimiter(c) => delim = Some(*c),
                A::CopyLegacyOption::Null(n) => null = Some(n.clone()),
                other => {
                    return Err(Error::unsupported(format!(
                        "COPY option {other} is not supported"
                    )))
                }
            }
        }
        st.delimiter = delim.unwrap_or(if st.csv { ',' } else { '\t' });
        st.null = null.unwrap_or_else(|| if st.csv { String::new() } else { "\\N".into() });
        if !values.is_empty() {
            // Data inline after the statement (a script fed to the parser).
            let n = st.columns.len().max(1);
            let rows: Vec<Vec<Option<String>>> = values.chunks(n).map(|c| c.to_vec()).collect();
            let count = self.copy_rows(&st, rows)?;
            return Ok(StatementResult::Command {
                tag: format!("COPY {count}"),
            });
        }
        Ok(StatementResult::CopyIn(st))
    }

    /// Loads the data of a `COPY ... FROM STDIN` (all of it, as the client sent it).
    /// Returns the number of rows inserted.
    pub fn copy_in(&mut self, st: &CopyState, data: &[u8]) -> Result<u64> {
        let _request = self.cancel.begin();
        if self.failed {
            return Err(Error::new(
                SqlState::IN_FAILED_SQL_TRANSACTION,
                "current transaction is aborted, commands ignored until end of transaction block",
            ));
        }
        let text = std::str::from_utf8(data)
            .map_err(|_| Error::new(SqlState("22021"), "invalid byte sequence for encoding \"UTF8\""))?;
        let rows = if st.csv {
            parse_csv(text, st)?
        } else {
            parse_copy_text(text, st)?
        };
        let r = self.copy_rows(st, rows);
        if r.is_err() && self.tx.is_some() {
            self.failed = true;
        }
        r
    }

    fn copy_rows(&mut self, st: &CopyState, rows: Vec<Vec<Option<String>>>) -> Result<u64> {
        let t = self.db.table(&st.table)?;
        let def = t.def();
        let mut b = Binder::new(&self.db, None);
        let mut defaults = Vec::new();
        for c in &def.columns {
            defaults.push(match &c.default {
                Some(d) if !st.columns.contains(&defaults.len()) => {
                    Some(bind_default(&mut b, d, c.ty, &c.name)?)
                }
                _ => None,
            });
        }
        let checks = bind_checks(&mut b, &def)?;
        let mut full = Vec::with_capacity(rows.len());
        let stop = self.interrupt();
        {
            let tx = self.db.begin();
            let ex = Exec::new(&tx, &[], &[], now_micros(), &stop);
            let cx = ex.ctx();
            for (line, r) in rows.into_iter().enumerate() {
                if r.len() != st.columns.len() {
                    return Err(Error::new(
                        SqlState("22P04"),
                        format!(
                            "{} data for line {}: expected {} columns, got {}",
                            if r.len() < st.columns.len() {
                                "missing"
                            } else {
                                "extra"
                            },
                            line + 1,
                            st.columns.len(),
                            r.len()
                        ),
                    ));
                }
                let mut row = vec![Value::Null; def.columns.len()];
                for (i, d) in defaults.iter().enumerate() {
                    if let Some(d) = d {
                        row[i] = d.eval(&[], &cx)?;
                    }
                }
                for (v, &c) in r.into_iter().zip(&st.columns) {
                    let col = &def.columns[c];
                    row[c] = match v {
                        None => Value::Null,
                        Some(s) => assign(Value::Text(s), col.ty, &col.name)?,
                    };
                }
                enforce_checks(&def, &checks, &row, &cx)?;
                full.push(row);
            }
        }
        let n = full.len() as u64;
        // Foreign keys are checked once every row is in (a row may reference one after it).
        let referencing: Vec<Row> = if def.foreign_keys.is_empty() {
            Vec::new()
        } else {
            full.clone()
        };
        self.with_tx(|tx, _| {
            tx.set_interrupt(stop.clone());
            let mut r = full.into_iter().try_for_each(|r| tx.insert_in(&t, r).map(|_| ()));
            if r.is_ok() {
                r = referencing
                    .iter()
                    .try_for_each(|row| crate::sql::fk::check_parents(tx, &def, row, None, &stop));
            }
            tx.set_interrupt(Interrupt::default());
            r
        })?;
        Ok(n)
    }
}

fn parse_copy_text(text: &str, st: &CopyState) -> Result<Vec<Vec<Option<String>>>> {
    let mut rows = Vec::new();
    for (i, line) in text.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line == "\\." {
            break;
        }
        if line.is_empty() && i > 0 && text[..].ends_with('\n') {
            continue;
        }
        if st.header && i == 0 {
            continue;
        }
        if line.is_empty() {
            continue;
        }
        let mut fields = Vec::new();
        for raw in line.split(st.delimiter) {
            if raw == st.null {
                fields.push(None);
                continue;
            }
            let mut out = String::with_capacity(raw.len());
            let mut it = raw.chars().peekable();
            while let Some(c) = it.next() {
                if c != '\\' {
                    out.push(c);
                    continue;
                }
                match it.next() {
                    Some('t') => out.push('\t'),
                    Some('n') => out.push('\n'),
                    Some('r') => out.push('\r'),
                    Some('b') => out.push('\u{8}'),
                    Some('f') => out.push('\u{c}'),
                    Some('v') => out.push('\u{b}'),
                    Some(d @ '0'..='7') => {
                        let mut v = d.to_digit(8).unwrap_or(0);
                        for _ in 0..2 {
                            match it.peek().and_then(|c| c.to_digit(8)) {
                                Some(x) => {
                                    v = v * 8 + x;
                                    it.next();
                                }
                                None => break,
                            }
                        }
                        out.push(char::from_u32(v).unwrap_or('?'));
                    }
                    Some('x') => {
                        let mut v = 0;
                        for _ in 0..2 {
                            match it.peek().and_then(|c| c.to_digit(16)) {
                                Some(x) => {
                                    v = v * 16 + x;
                                    it.next();
                                }
                                None => break,
                            }
                        }
                        out.push(char::from_u32(v).unwrap_or('?'));
                    }
                    Some(c) => out.push(c),
                    None => out.push('\\'),
                }
            }
            fields.push(Some(out));
        }
        rows.push(fields);
    }
    Ok(rows)
}

fn parse_csv(text: &str, st: &CopyState) -> Result<Vec<Vec<Option<String>>>> {
    let mut rows = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let mut first = true;
    while i < chars.len() {
        // One record.
        let mut fields = Vec::new();
        let line_start = i;
        loop {
            let mut field = String::new();
            let mut quoted = false;
            if i < chars.len() && chars[i] == st.quote {
                quoted = true;
                i += 1;
                loop {
                    if i >= chars.len() {
                        return Err(Error::new(SqlState("22P04"), "unterminated CSV quoted field"));
                    }
                    let c = chars[i];
                    if c == st.escape && i + 1 < chars.len() && chars[i + 1] == st.quote {
                        field.push(st.quote);
                        i += 2;
                    } else if c == st.quote {
                        i += 1;
                        break;
                    } else {
                        field.push(c);
                        i += 1;
                    }
                }
            }
            while i < chars.len() && chars[i] != st.delimiter && chars[i] != '\n' && chars[i] != '\r' {
                field.push(chars[i]);
                i += 1;
            }
            fields.push(if !quoted && field == st.null {
                None
            } else {
                Some(field)
            });
            if i < chars.len() && chars[i] == st.delimiter {
                i += 1;
                continue;
            }
            break;
        }
        if i < chars.len() && chars[i] == '\r' {
            i += 1;
        }
        if i < chars.len() && chars[i] == '\n' {
            i += 1;
        }
        let raw: String = chars[line_start..i].iter().collect();
        if raw.trim_end() == "\\." {
            break;
        }
        if std::mem::replace(&mut first, false) && st.header {
            continue;
        }
        if raw.trim_end_matches(['\r', '\n']).is_empty() {
            continue;
        }
        rows.push(fields);
    }
    Ok(rows)
}
