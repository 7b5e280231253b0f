//! COPY ... TO STDOUT: a table's rows (or a query's) in PostgreSQL's text or CSV format, as
//! `COPY table TO STDOUT`, `COPY (query) TO STDOUT` and psql's `\copy ... to` ask for them.
//! The rows are read in the session's transaction, like a SELECT.

use sqlparser::ast as A;

use super::Session;
use crate::error::{Error, Result};
use crate::seam::prelude::*;
use crate::sql::bind::{ident, object_name};
use crate::sql::catalog::deparse::quote_ident;
use crate::sql::result::StatementResult;
use crate::types::Value;

/// The output format a COPY TO statement asks for.
struct Format {
    csv: bool,
    header: bool,
    delimiter: char,
    null: String,
    quote: char,
    escape: char,
    /// CSV: columns quoted whatever their value (FORCE_QUOTE); `None` in it: every column.
    force_quote: Vec<Option<String>>,
}

impl Format {
    fn of(options: &[A::CopyOption], legacy: &[A::CopyLegacyOption]) -> Result<Format> {
        let mut f = Format {
            csv: false,
            header: false,
            delimiter: '\t',
            null: String::new(),
            quote: '"',
            escape: '"',
            force_quote: Vec::new(),
        };
        let (mut delim, mut null, mut escape) = (None, None, None);
        for o in options {
            match o {
                A::CopyOption::Format(x) => {
                    f.csv = match x.value.to_ascii_lowercase().as_str() {
                        "csv" => true,
                        "text" => false,
                        other => return Err(Error::unsupported(format!("COPY format \"{other}\""))),
                    }
                }
                A::CopyOption::Header(h) => f.header = *h,
                A::CopyOption::Delimiter(c) => delim = Some(*c),
                A::CopyOption::Null(n) => null = Some(n.clone()),
                A::CopyOption::Quote(c) => f.quote = *c,
                A::CopyOption::Escape(c) => escape = Some(*c),
                A::CopyOption::ForceQuote(cols) => f.force_quote.extend(cols.iter().map(|c| Some(ident(c)))),
                A::CopyOption::Encoding(_) => {}
                other => return Err(Error::unsupported(format!("COPY TO option {other}"))),
            }
        }
        for o in legacy {
            match o {
                A::CopyLegacyOption::Csv(opts) => {
                    f.csv = true;
                    for c in opts {
                        match c {
                            A::CopyLegacyCsvOption::Header => f.header = true,
                            A::CopyLegacyCsvOption::Quote(q) => f.quote = *q,
                            A::CopyLegacyCsvOption::Escape(e) => escape = Some(*e),
                            A::CopyLegacyCsvOption::ForceQuote(cols) => {
                                f.force_quote.extend(cols.iter().map(|c| Some(ident(c))))
                            }
                            other => return Err(Error::unsupported(format!("COPY TO option {other}"))),
                        }
                    }
                }
                A::CopyLegacyOption::Header => f.header = true,
                A::CopyLegacyOption::Delimiter(c) => delim = Some(*c),
                A::CopyLegacyOption::Null(n) => null = Some(n.clone()),
                other => return Err(Error::unsupported(format!("COPY TO option {other}"))),
            }
        }
        f.delimiter = delim.unwrap_or(if f.csv { ',' } else { '\t' });
        f.null = null.unwrap_or_else(|| if f.csv { String::new() } else { "\\N".into() });
        f.escape = escape.unwrap_or(f.quote);
        Ok(f)
    }

    /// One field (a value's text or a column name) as the format writes it.
    fn field(&self, s: &str, force_quote: bool, single_column: bool, out: &mut String) {
        if !self.csv {
            // PostgreSQL's CopyAttributeOutText.
            for c in s.chars() {
                match c {
                    '\u{8}' => out.push_str("\\b"),
                    '\u{c}' => out.push_str("\\f"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    '\u{b}' => out.push_str("\\v"),
                    '\\' => out.push_str("\\\\"),
                    c if c == self.delimiter => {
                        out.push('\\');
                        out.push(c);
                    }
                    c => out.push(c),
                }
            }
            return;
        }
        // CopyAttributeOutCSV: quoted when asked, when it reads as the NULL string, when it
        // holds the delimiter, the quote or a line break, and `\.` alone on a line.
        let quote = force_quote
            || s == self.null
            || (single_column && s == "\\.")
            || s.contains([self.delimiter, self.quote, '\n', '\r']);
        if !quote {
            out.push_str(s);
            return;
        }
        out.push(self.quote);
        for c in s.chars() {
            if c == self.quote || c == self.escape {
                out.push(self.escape);
            }
            out.push(c);
        }
        out.push(self.quote);
    }
}

impl Session {
    /// `COPY table [(columns)] TO STDOUT` or `COPY (query) TO STDOUT`: the lines to send.
    pub(super) fn copy_to(
        &mut self,
        source: &A::CopySource,
        target: &A::CopyTarget,
        options: &[A::CopyOption],
        legacy: &[A::CopyLegacyOption],
    ) -> Result<StatementResult> {
        if !matches!(target, A::CopyTarget::Stdout) {
            return Err(Error::unsupported(
                "COPY TO a file or program is not supported: the server's files are not the \
                 client's (psql's \\copy writes the client's)",
            ));
        }
        let f = Format::of(options, legacy)?;
        let query = match source {
            A::CopySource::Query(q) => A::Statement::Query(q.clone()),
            A::CopySource::Table { table_name, columns } => {
                let name = object_name(table_name)?;
                // PostgreSQL: "cannot copy from view" (42809) for a view named here.
                if self.db.table(&name).is_err() && self.db.view(&name)?.is_some() {
                    return Err(Error::new(
                        crate::error::SqlState("42809"),
                        format!("cannot copy from view \"{name}\""),
                    ));
                }
                let cols = if columns.is_empty() {
                    "*".to_string()
                } else {
                    columns
                        .iter()
                        .map(|c| quote_ident(&ident(c)))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let sql = format!("SELECT {cols} FROM {}", quote_ident(&name));
                let mut st = crate::sql::parse::parse(&sql)?;
                st.pop().ok_or_else(|| Error::internal("COPY TO query"))?
            }
        };
        let r = self.run_in_tx(&query, &[], None)?;
        let StatementResult::Query { columns, rows, .. } = r else {
            return Err(Error::syntax("COPY query must have a RETURNING clause"));
        };
        let forced: Vec<bool> = columns
            .iter()
            .map(|(n, _)| f.force_quote.iter().any(|q| q.as_deref().is_none_or(|q| q == n)))
            .collect();
        if let Some(Some(c)) = f
            .force_quote
            .iter()
            .find(|q| q.as_ref().is_some_and(|q| !columns.iter().any(|(n, _)| n == q)))
        {
            return Err(Error::new(
                crate::error::SqlState::UNDEFINED_COLUMN,
                format!("FORCE_QUOTE column \"{c}\" not referenced by COPY"),
            ));
        }
        if !f.force_quote.is_empty() && !f.csv {
            return Err(Error::new(
                crate::error::SqlState::FEATURE_NOT_SUPPORTED,
                "COPY force quote available only in CSV mode",
            ));
        }
        let single = columns.len() == 1;
        let mut lines = Vec::with_capacity(rows.len() + 1);
        let delim = f.delimiter.to_string();
        if f.header {
            let mut line = String::new();
            for (i, (n, _)) in columns.iter().enumerate() {
                if i > 0 {
                    line.push_str(&delim);
                }
                f.field(n, false, single, &mut line);
            }
            line.push('\n');
            lines.push(line.into_bytes());
        }
        for row in &rows {
            let mut line = String::new();
            for (i, v) in row.iter().enumerate() {
                if i > 0 {
                    line.push_str(&delim);
                }
                match v {
                    Value::Null => line.push_str(&f.null),
                    v => f.field(&v.to_text().unwrap_or_default(), forced[i], single, &mut line),
                }
            }
            line.push('\n');
            lines.push(line.into_bytes());
        }
        Ok(StatementResult::CopyOut {
            tag: format!("COPY {}", rows.len()),
            columns: columns.len(),
            header: f.header,
            data: lines,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Format;

    fn csv() -> Format {
        Format::of(&[], &[sqlparser::ast::CopyLegacyOption::Csv(vec![])]).unwrap()
    }

    #[test]
    fn text_fields_are_escaped() {
        let f = Format::of(&[], &[]).unwrap();
        let mut s = String::new();
        f.field("a\tb\\c\nd\re", false, false, &mut s);
        assert_eq!(s, "a\\tb\\\\c\\nd\\re");
    }

    #[test]
    fn csv_fields_are_quoted_when_they_must_be() {
        let f = csv();
        let q = |s: &str| {
            let mut o = String::new();
            f.field(s, false, false, &mut o);
            o
        };
        assert_eq!(q("plain"), "plain");
        assert_eq!(q(""), "\"\"");
        assert_eq!(q("a,b"), "\"a,b\"");
        assert_eq!(q("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(q("two\nlines"), "\"two\nlines\"");
        let mut o = String::new();
        f.field("\\.", false, true, &mut o);
        assert_eq!(o, "\"\\.\"");
    }
}
