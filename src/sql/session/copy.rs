//! COPY ... FROM STDIN: the statement's options, the text and CSV data formats, and loading the
//! rows into the session's transaction a batch at a time (the engine's batch insert,
//! `StatementWrites::insert_rows`; the statement runs the constraints).

use std::borrow::Cow;

use sqlparser::ast as A;

use super::Session;
use crate::error::{Error, Result, SqlState};
use crate::seam::prelude::*;
use crate::seam::{Interrupt, StatementWrites, TableDef};
use crate::sql::bind::{ident, object_name, Binder};
use crate::sql::dml::{bind_checks, bind_default, enforce_checks};
use crate::sql::exec::Exec;
use crate::sql::expr::{assign, Ctx, Expr};
use crate::sql::result::{CopyState, StatementResult};
use crate::types::{DataType, Row, Value};

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
        // A table another session's block altered: wait for the block to end.
        self.wait_for_table(&name)?;
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
            let rows: Vec<(usize, Vec<Option<String>>)> = values
                .chunks(n)
                .enumerate()
                .map(|(i, c)| (i + 1, c.to_vec()))
                .collect();
            let count = self.copy_records(&st, Records::Parsed(rows))?;
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
        self.stmt_stamp = crate::engine::table::constraint_stamp();
        let _zone = self.zone_scope();
        self.under_block_rules(|s| {
            let text = std::str::from_utf8(data)
                .map_err(|_| Error::new(SqlState("22021"), "invalid byte sequence for encoding \"UTF8\""))?;
            let records = if st.csv {
                Records::Parsed(parse_csv(text, st)?)
            } else {
                Records::Text(text)
            };
            s.copy_records(st, records)
        })
    }

    /// Turns the records into rows (defaults, types, CHECK constraints) a batch at a time and
    /// hands each batch to the transaction's batch insert; foreign keys are checked once every
    /// row is in (a row may reference one after it). All or nothing: an error stores none.
    fn copy_records(&mut self, st: &CopyState, records: Records<'_>) -> Result<u64> {
        self.wait_for_table(&st.table)?;
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
        let maker = RowMaker {
            def: &def,
            st,
            defaults: &defaults,
            checks: &checks,
        };
        let stop = self.interrupt();
        let now = self.clock();
        self.with_tx(|tx, db| {
            tx.set_interrupt(stop.clone());
            let r = (|| {
                let mut batch = Batch::default();
                // Defaults are evaluated as their own statement would be (nextval is not
                // transactional); the rows go to the session's transaction.
                let dtx = db.begin();
                let ex = Exec::new(&dtx, &[], &[], now, &stop);
                let cx = ex.ctx();
                let mut each =
                    |line: usize, fields: &mut dyn Iterator<Item = Option<Cow<'_, str>>>| -> Result<()> {
                        let row = maker.row(line, fields, &cx)?;
                        batch.rows.push(row);
                        batch.lines.push(line);
                        if batch.rows.len() >= BATCH_ROWS {
                            batch.insert(tx, &t, &def)?;
                        }
                        Ok(())
                    };
                match records {
                    Records::Parsed(recs) => {
                        for (line, r) in recs {
                            each(line, &mut r.into_iter().map(|f| f.map(Cow::Owned)))?;
                        }
                    }
                    Records::Text(text) => parse_copy_text(text, st, &mut each)?,
                }
                batch.insert(tx, &t, &def)?;
                for (line, row) in &batch.referencing {
                    crate::engine::fk::check_parents(tx, &def, row, None, &stop)
                        .map_err(|e| at_line(e, &def.name, *line, None))?;
                }
                Ok(batch.count)
            })();
            tx.set_interrupt(Interrupt::default());
            r
        })
    }
}

/// Rows handed to the engine at a time: enough that sorting them and taking their row locks a
/// shard at a time pays, few enough that a batch's parsed rows stay small.
const BATCH_ROWS: usize = 65_536;

/// Where a COPY's records come from: text-format data, parsed as the rows are made, or records
/// already split into fields (CSV, inline data), each with its line number.
enum Records<'a> {
    Text(&'a str),
    Parsed(Vec<(usize, Vec<Option<String>>)>),
}

/// What turns one record's fields into a table row.
struct RowMaker<'a> {
    def: &'a TableDef,
    st: &'a CopyState,
    defaults: &'a [Option<Expr>],
    checks: &'a [(String, Expr)],
}

impl RowMaker<'_> {
    fn row(
        &self,
        line: usize,
        fields: &mut dyn Iterator<Item = Option<Cow<'_, str>>>,
        cx: &Ctx,
    ) -> Result<Row> {
        let (def, cols) = (self.def, &self.st.columns);
        let mut row = vec![Value::Null; def.columns.len()];
        for (i, d) in self.defaults.iter().enumerate() {
            if let Some(d) = d {
                row[i] = d.eval(&[], cx)?;
            }
        }
        let mut got = 0;
        for v in fields {
            if let (Some(&c), Some(s)) = (cols.get(got), v) {
                let col = &def.columns[c];
                row[c] = field_value(&s, col.ty, &col.name)
                    .map_err(|e| at_line(e, &def.name, line, Some((&col.name, &s))))?;
            }
            got += 1;
        }
        if got != cols.len() {
            let e = Error::new(
                SqlState("22P04"),
                match cols.get(got) {
                    Some(&c) => format!("missing data for column \"{}\"", def.columns[c].name),
                    None => "extra data after last expected column".to_string(),
                },
            );
            return Err(at_line(e, &def.name, line, None));
        }
        enforce_checks(def, self.checks, &row, cx).map_err(|e| at_line(e, &def.name, line, None))?;
        Ok(row)
    }
}

/// The rows made since the last batch insert, with their line numbers.
#[derive(Default)]
struct Batch {
    rows: Vec<Row>,
    lines: Vec<usize>,
    /// Every row of a table with foreign keys, checked once all are in.
    referencing: Vec<(usize, Row)>,
    count: u64,
}

impl Batch {
    fn insert(&mut self, tx: &mut AnyTxn, t: &AnyTable, def: &TableDef) -> Result<()> {
        if self.rows.is_empty() {
            return Ok(());
        }
        if !def.foreign_keys.is_empty() {
            self.referencing
                .extend(self.lines.iter().copied().zip(self.rows.iter().cloned()));
        }
        let rows = std::mem::replace(&mut self.rows, Vec::with_capacity(BATCH_ROWS));
        let n = tx.insert_rows(t, rows).map_err(|e| match e.row {
            Some(i) => at_line(e.error, &def.name, self.lines[i], None),
            None => e.error,
        })?;
        self.count += n;
        self.lines.clear();
        Ok(())
    }
}

/// A field's value for a column of type `ty`: the common types parsed from the field in place,
/// the others through the assignment cast (as an INSERT of the text would).
fn field_value(s: &str, ty: DataType, col: &str) -> Result<Value> {
    match ty {
        DataType::Int2
        | DataType::Int4
        | DataType::Int8
        | DataType::Float8
        | DataType::Bool
        | DataType::Bytea => Value::parse_text(s, ty),
        DataType::Text(None) | DataType::Varchar(None) => Ok(Value::Text(s.to_owned())),
        _ => assign(Value::Text(s.to_owned()), ty, col),
    }
}

/// `e` with the place in the data it is about, as PostgreSQL's context line says it
/// (`COPY t, line 3, column b: "x"`).
fn at_line(e: Error, table: &str, line: usize, column: Option<(&str, &str)>) -> Error {
    match column {
        Some((c, v)) => e.with_context(format!("COPY {table}, line {line}, column {c}: \"{v}\"")),
        None => e.with_context(format!("COPY {table}, line {line}")),
    }
}

/// One record's fields, each `None` for the NULL marker.
type Fields<'a, 'b> = &'a mut dyn Iterator<Item = Option<Cow<'b, str>>>;

/// Splits text-format data into records and hands each, with its line number, to `each`.
/// A field without a backslash is lent in place; the others are unescaped into a new string.
fn parse_copy_text(
    text: &str,
    st: &CopyState,
    each: &mut dyn FnMut(usize, Fields<'_, '_>) -> Result<()>,
) -> Result<()> {
    for (i, line) in text.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line == "\\." {
            break;
        }
        if line.is_empty() || (st.header && i == 0) {
            continue;
        }
        let mut fields = line.split(st.delimiter).map(|raw| {
            if raw == st.null {
                None
            } else if !raw.contains('\\') {
                Some(Cow::Borrowed(raw))
            } else {
                Some(Cow::Owned(unescape(raw)))
            }
        });
        each(i + 1, &mut fields)?;
    }
    Ok(())
}

/// A text-format field with its backslash escapes replaced. The runs between backslashes are
/// copied whole (a bytea field is `\\x` and then hundreds of plain hex digits).
fn unescape(raw: &str) -> String {
    let b = raw.as_bytes();
    let mut out = String::with_capacity(raw.len());
    let mut i = 0;
    while i < b.len() {
        let Some(at) = b[i..].iter().position(|&c| c == b'\\') else {
            out.push_str(&raw[i..]);
            break;
        };
        // Backslashes and escape letters are ASCII: every cut is at a character boundary.
        out.push_str(&raw[i..i + at]);
        i += at + 1;
        let Some(&c) = b.get(i) else {
            out.push('\\');
            break;
        };
        i += 1;
        match c {
            b't' => out.push('\t'),
            b'n' => out.push('\n'),
            b'r' => out.push('\r'),
            b'b' => out.push('\u{8}'),
            b'f' => out.push('\u{c}'),
            b'v' => out.push('\u{b}'),
            b'0'..=b'7' | b'x' => {
                let (radix, first, max) = if c == b'x' {
                    (16, 0, 2)
                } else {
                    (8, (c - b'0') as u32, 2)
                };
                let mut v = first;
                let mut taken = 0;
                while taken < max {
                    match b.get(i).and_then(|&d| (d as char).to_digit(radix)) {
                        Some(d) => {
                            v = v * radix + d;
                            i += 1;
                            taken += 1;
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(v).unwrap_or('?'));
            }
            _ => {
                // Any other character stands for itself (a multi-byte one is copied whole).
                let start = i - 1;
                let end = (start + 1..=b.len())
                    .find(|&e| raw.is_char_boundary(e))
                    .unwrap_or(b.len());
                out.push_str(&raw[start..end]);
                i = end;
            }
        }
    }
    out
}

/// Splits CSV data into records, each with the line it starts on.
fn parse_csv(text: &str, st: &CopyState) -> Result<Vec<(usize, Vec<Option<String>>)>> {
    let mut rows = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let mut first = true;
    let mut line = 1;
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
        let at = line;
        line += raw.matches('\n').count();
        if raw.trim_end() == "\\." {
            break;
        }
        if std::mem::replace(&mut first, false) && st.header {
            continue;
        }
        if raw.trim_end_matches(['\r', '\n']).is_empty() {
            continue;
        }
        rows.push((at, fields));
    }
    Ok(rows)
}
