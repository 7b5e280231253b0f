//! `augur sql`: an embedded SQL shell over a [`Session`], without a server. Multi-line input
//! ends at `;`; results print as aligned tables like psql's; `-c` runs one string and exits
//! non-zero on error.

use std::io::{self, BufRead, IsTerminal, Write};

use crate::seam::prelude::*;
use crate::sql::{Session, StatementResult};
use crate::types::DataType;

use crate::sql::lexer::{ends_with_terminator, split_statements};

/// Formats a result as psql's aligned output (or the command tag).
pub fn format_result(r: &StatementResult) -> String {
    match r {
        StatementResult::Query { columns, rows, .. } => {
            let cells: Vec<Vec<String>> = rows
                .iter()
                .map(|row| {
                    row.iter()
                        .map(|v| v.to_text().unwrap_or_default().replace('\n', "\\n"))
                        .collect()
                })
                .collect();
            let mut widths: Vec<usize> = columns.iter().map(|(n, _)| n.chars().count()).collect();
            for row in &cells {
                for (i, c) in row.iter().enumerate() {
                    if i < widths.len() {
                        widths[i] = widths[i].max(c.chars().count());
                    }
                }
            }
            let right = |t: &DataType| t.is_numeric();
            let mut out = String::new();
            let header: Vec<String> = columns
                .iter()
                .zip(&widths)
                .map(|((n, _), w)| {
                    let len = n.chars().count();
                    let left = (w - len) / 2;
                    format!("{}{}{}", " ".repeat(left), n, " ".repeat(w - len - left))
                })
                .collect();
            out.push(' ');
            out.push_str(header.join(" | ").trim_end());
            out.push('\n');
            out.push_str(
                &widths
                    .iter()
                    .map(|w| "-".repeat(w + 2))
                    .collect::<Vec<_>>()
                    .join("+"),
            );
            out.push('\n');
            for row in &cells {
                let line: Vec<String> = row
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        let w = widths.get(i).copied().unwrap_or(0);
                        let pad = " ".repeat(w.saturating_sub(c.chars().count()));
                        if columns.get(i).is_some_and(|(_, t)| right(t)) {
                            format!("{pad}{c}")
                        } else {
                            format!("{c}{pad}")
                        }
                    })
                    .collect();
                out.push(' ');
                out.push_str(line.join(" | ").trim_end());
                out.push('\n');
            }
            out.push_str(&format!(
                "({} row{})\n",
                rows.len(),
                if rows.len() == 1 { "" } else { "s" }
            ));
            out
        }
        StatementResult::Command { tag } => format!("{tag}\n"),
        StatementResult::CopyIn(_) => "COPY\n".into(),
        StatementResult::CopyOut { tag, data, .. } => {
            let mut s: String = data.iter().map(|l| String::from_utf8_lossy(l)).collect();
            s.push_str(tag);
            s.push('\n');
            s
        }
    }
}

/// Runs `sql` (one or more statements) and prints each result; COPY FROM STDIN reads its data
/// from `input` until `\.` or end of input. Returns false on the first error.
fn run_text(session: &mut Session, sql: &str, input: &mut dyn BufRead, out: &mut dyn Write) -> bool {
    for stmt in split_statements(sql) {
        match session.execute(stmt, &[]) {
            Ok(results) => {
                for r in results {
                    if let StatementResult::CopyIn(st) = &r {
                        let mut data = Vec::new();
                        let mut line = String::new();
                        loop {
                            line.clear();
                            match input.read_line(&mut line) {
                                Ok(0) | Err(_) => break,
                                Ok(_) if line.trim_end_matches(['\r', '\n']) == "\\." => break,
                                Ok(_) => data.extend_from_slice(line.as_bytes()),
                            }
                        }
                        match session.copy_in(st, &data) {
                            Ok(n) => {
                                let _ = writeln!(out, "COPY {n}");
                            }
                            Err(e) => {
                                eprintln!("ERROR:  {e} (SQLSTATE {})", e.sqlstate());
                                return false;
                            }
                        }
                    } else {
                        let _ = write!(out, "{}", format_result(&r));
                    }
                }
            }
            Err(e) => {
                eprintln!("ERROR:  {e} (SQLSTATE {})", e.sqlstate());
                return false;
            }
        }
    }
    true
}

fn describe(db: &AnyEngine, name: Option<&str>, out: &mut dyn Write) {
    match name {
        None => {
            let _ = writeln!(out, "      List of relations");
            for t in db.tables() {
                let _ = writeln!(
                    out,
                    " public | {} | table | {}",
                    t.name(),
                    t.key_index_kind().name()
                );
            }
        }
        Some(n) => match db.table(n) {
            Ok(t) => {
                let d = t.def();
                let _ = writeln!(
                    out,
                    "Table \"public.{}\" (primary index: {})",
                    d.name,
                    t.key_index_kind().name()
                );
                for (i, c) in d.columns.iter().enumerate() {
                    let not_null = !c.nullable || d.primary_key.contains(&i);
                    let _ = writeln!(
                        out,
                        " {} | {} |{}{}",
                        c.name,
                        c.ty.sql_name(),
                        if not_null { " not null" } else { "" },
                        c.default
                            .as_ref()
                            .map(|x| format!(" default {x}"))
                            .unwrap_or_default()
                    );
                }
                if d.has_primary_key() {
                    let cols: Vec<&str> = d
                        .primary_key
                        .iter()
                        .map(|&i| d.columns[i].name.as_str())
                        .collect();
                    let _ = writeln!(out, " PRIMARY KEY ({})", cols.join(", "));
                }
                for ix in &d.indexes {
                    let cols: Vec<&str> = ix.columns.iter().map(|&i| d.columns[i].name.as_str()).collect();
                    let _ = writeln!(
                        out,
                        " {}INDEX {} ({})",
                        if ix.unique { "UNIQUE " } else { "" },
                        ix.name,
                        cols.join(", ")
                    );
                }
            }
            Err(e) => eprintln!("ERROR:  {e}"),
        },
    }
}

/// The `augur sql` entry point. With `command`, runs it and returns the exit code (1 on
/// error); otherwise reads statements from standard input until end of input or `\q`.
pub fn run(db: impl Into<AnyEngine>, command: Option<&str>) -> i32 {
    let db: AnyEngine = db.into();
    let mut session = Session::new(db.clone());
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    if let Some(c) = command {
        let ok = run_text(&mut session, c, &mut input, &mut out);
        let _ = out.flush();
        return if ok { 0 } else { 1 };
    }
    let interactive = io::stdin().is_terminal();
    if interactive {
        let _ = writeln!(
            out,
            "augur {} embedded shell on {} (end statements with ;  \\q quits, \\dt lists tables, \\d NAME describes)",
            env!("CARGO_PKG_VERSION"),
            db.location()
        );
    }
    let mut buf = String::new();
    let mut failed = false;
    loop {
        if interactive {
            let _ = write!(out, "{}", if buf.is_empty() { "augur=> " } else { "augur-> " });
            let _ = out.flush();
        }
        let mut line = String::new();
        match input.read_line(&mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                eprintln!("error reading input: {e}");
                return 1;
            }
        }
        if buf.is_empty() {
            let t = line.trim();
            if t == "\\q" {
                break;
            }
            if let Some(rest) = t.strip_prefix("\\d") {
                let rest = rest.trim_start_matches('t').trim();
                describe(&db, (!rest.is_empty()).then_some(rest), &mut out);
                continue;
            }
            if t.is_empty() {
                continue;
            }
        }
        buf.push_str(&line);
        if ends_with_terminator(&buf) {
            let text = std::mem::take(&mut buf);
            if !run_text(&mut session, &text, &mut input, &mut out) {
                failed = true;
            }
            let _ = out.flush();
        }
    }
    if !buf.trim().is_empty() && !run_text(&mut session, &buf, &mut input, &mut out) {
        failed = true;
    }
    let _ = out.flush();
    if failed && !interactive {
        1
    } else {
        0
    }
}
