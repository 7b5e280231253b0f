//! Splits a simple-protocol query string into its statements, so that each statement gets its
//! own result (or error) on the wire, as PostgreSQL sends them.
//!
//! Understands single-quoted strings (`''` and, in `E'...'`, backslash escapes), double-quoted
//! identifiers, dollar quoting (`$tag$ ... $tag$`), `--` line comments and nested `/* */`
//! comments. A piece with nothing but whitespace and comments is dropped.

/// Statement texts in order, without their terminating `;`.
pub fn split_statements(sql: &str) -> Vec<&str> {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut has_code = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'\'' => {
                let escapes = i > 0 && (b[i - 1] == b'E' || b[i - 1] == b'e') && !ident_char_before(b, i - 1);
                i = skip_quoted(b, i, b'\'', escapes);
                has_code = true;
                continue;
            }
            b'"' => {
                i = skip_quoted(b, i, b'"', false);
                has_code = true;
                continue;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0;
                while i < b.len() {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
                continue;
            }
            b'$' if !ident_char_before(b, i) => {
                if let Some(tag_end) = dollar_tag(b, i) {
                    let tag = &b[i..=tag_end];
                    let mut j = tag_end + 1;
                    let mut closed = false;
                    while j + tag.len() <= b.len() {
                        if &b[j..j + tag.len()] == tag {
                            j += tag.len();
                            closed = true;
                            break;
                        }
                        j += 1;
                    }
                    i = if closed { j } else { b.len() };
                    has_code = true;
                    continue;
                }
                has_code = true;
            }
            b';' => {
                if has_code {
                    out.push(sql[start..i].trim());
                }
                start = i + 1;
                has_code = false;
            }
            c if c.is_ascii_whitespace() => {}
            _ => has_code = true,
        }
        i += 1;
    }
    if has_code {
        out.push(sql[start..].trim());
    }
    out
}

/// True if `sql` ends with a `;` outside strings and comments (the shell's end of input).
pub fn ends_with_terminator(sql: &str) -> bool {
    let t = sql.trim_end();
    if !t.ends_with(';') {
        return false;
    }
    // The text up to and including the last ';' splits into complete statements only if that
    // ';' is real: appending a marker after it must start a new statement.
    let probe = format!("{t}\n\u{1}");
    split_statements(&probe).last().is_some_and(|s| *s == "\u{1}")
}

fn ident_char_before(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] >= 0x80)
}

/// Index just past the closing quote (or the end of the text if unterminated).
fn skip_quoted(b: &[u8], open: usize, q: u8, backslash: bool) -> usize {
    let mut i = open + 1;
    while i < b.len() {
        if backslash && b[i] == b'\\' {
            i += 2;
            continue;
        }
        if b[i] == q {
            if b.get(i + 1) == Some(&q) {
                i += 2;
                continue;
            }
            return i + 1;
        }
        i += 1;
    }
    b.len()
}

/// If a dollar-quote tag (`$$` or `$name$`) starts at `i`, the index of its closing `$`.
fn dollar_tag(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'$' => return Some(j),
            c if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 => j += 1,
            c if c.is_ascii_digit() && j > i + 1 => j += 1,
            _ => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::split_statements;

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
        assert!(split_statements(" ; -- only\n ;").is_empty());
        assert!(split_statements("").is_empty());
        assert!(super::ends_with_terminator("select 1;\n"));
        assert!(!super::ends_with_terminator("select ';"));
        assert!(!super::ends_with_terminator("select 1 -- ;"));
        assert!(!super::ends_with_terminator("select $$;"));
    }
}
