//! `json`: JSON text kept exactly as it was written (whitespace, key order and duplicate keys
//! included), validated on input. Its operators read the stored text in place: an element or a
//! field is the original text of that part of the document, as PostgreSQL's json operators
//! return it.

use crate::error::{Error, Result, SqlState};

/// Checks that `s` is JSON (22P02 with PostgreSQL's message otherwise) and returns it as the
/// value stores it.
pub fn parse(s: &str) -> Result<String> {
    match super::jsonb::parse(s) {
        Ok(_) => Ok(s.to_string()),
        Err(e) if e.sqlstate() == SqlState::INVALID_TEXT_REPRESENTATION => Err(e),
        // jsonb's own limits (`\u0000`, numbers past numeric) are not json's.
        Err(_) if accepts_beyond_jsonb(s) => Ok(s.to_string()),
        Err(e) => Err(e),
    }
}

/// JSON that jsonb refuses only for its own limits (a `\u0000` escape, a number beyond
/// Augur's numeric): json keeps the text.
fn accepts_beyond_jsonb(s: &str) -> bool {
    let mut sc = Scan::new(s);
    sc.ws();
    sc.skip_value().is_some() && {
        sc.ws();
        sc.i == sc.b.len()
    }
}

/// A reader over valid JSON text.
struct Scan<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
}

impl<'a> Scan<'a> {
    fn new(s: &'a str) -> Scan<'a> {
        Scan {
            s,
            b: s.as_bytes(),
            i: 0,
        }
    }

    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    /// Skips one value (after blanks); its text.
    fn skip_value(&mut self) -> Option<&'a str> {
        self.ws();
        let start = self.i;
        match self.peek()? {
            b'{' => {
                self.i += 1;
                if !self.eat(b'}') {
                    loop {
                        self.ws();
                        self.string()?;
                        if !self.eat(b':') {
                            return None;
                        }
                        self.skip_value()?;
                        if self.eat(b'}') {
                            break;
                        }
                        if !self.eat(b',') {
                            return None;
                        }
                    }
                }
            }
            b'[' => {
                self.i += 1;
                if !self.eat(b']') {
                    loop {
                        self.skip_value()?;
                        if self.eat(b']') {
                            break;
                        }
                        if !self.eat(b',') {
                            return None;
                        }
                    }
                }
            }
            b'"' => {
                self.string()?;
            }
            _ => {
                let n = self.b[self.i..]
                    .iter()
                    .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'+' | b'.'))
                    .count();
                if n == 0 {
                    return None;
                }
                let word = &self.s[self.i..self.i + n];
                let number = is_number(word);
                if !(number || matches!(word, "true" | "false" | "null")) {
                    return None;
                }
                self.i += n;
            }
        }
        Some(&self.s[start..self.i])
    }

    /// Reads a string (at its opening quote), decoded.
    fn string(&mut self) -> Option<String> {
        if self.peek() != Some(b'"') {
            return None;
        }
        self.i += 1;
        let mut out = String::new();
        loop {
            let c = self.s[self.i..].chars().next()?;
            self.i += c.len_utf8();
            match c {
                '"' => return Some(out),
                '\\' => {
                    let e = *self.b.get(self.i)?;
                    self.i += 1;
                    out.push(match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let mut cp = self.hex4()?;
                            if (0xD800..0xDC00).contains(&cp) && self.s[self.i..].starts_with("\\u") {
                                self.i += 2;
                                let lo = self.hex4()?;
                                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo.wrapping_sub(0xDC00) & 0x3ff);
                            }
                            char::from_u32(cp).unwrap_or('\u{fffd}')
                        }
                        _ => return None,
                    });
                }
                c => out.push(c),
            }
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let h = self.s.get(self.i..self.i + 4)?;
        self.i += 4;
        u32::from_str_radix(h, 16).ok()
    }
}

/// JSON's number syntax: `-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`.
pub(crate) fn is_number(w: &str) -> bool {
    let b = w.strip_prefix('-').unwrap_or(w).as_bytes();
    let digits = |b: &[u8], i: &mut usize| {
        let s = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i > s
    };
    let mut i = 0;
    if b.first() == Some(&b'0') {
        i = 1;
    } else if !digits(b, &mut i) {
        return false;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if !digits(b, &mut i) {
            return false;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !digits(b, &mut i) {
            return false;
        }
    }
    i == b.len()
}

/// The elements of a JSON array, each as its text; None when the document is no array.
pub fn elements(doc: &str) -> Option<Vec<&str>> {
    let mut sc = Scan::new(doc);
    if !sc.eat(b'[') {
        return None;
    }
    let mut out = Vec::new();
    if sc.eat(b']') {
        return Some(out);
    }
    loop {
        out.push(sc.skip_value()?);
        if sc.eat(b']') {
            return Some(out);
        }
        if !sc.eat(b',') {
            return None;
        }
    }
}

/// The fields of a JSON object in their order (duplicates kept), each value as its text;
/// None when the document is no object.
pub fn fields(doc: &str) -> Option<Vec<(String, &str)>> {
    let mut sc = Scan::new(doc);
    if !sc.eat(b'{') {
        return None;
    }
    let mut out = Vec::new();
    if sc.eat(b'}') {
        return Some(out);
    }
    loop {
        sc.ws();
        let k = sc.string()?;
        if !sc.eat(b':') {
            return None;
        }
        out.push((k, sc.skip_value()?));
        if sc.eat(b'}') {
            return Some(out);
        }
        if !sc.eat(b',') {
            return None;
        }
    }
}

/// `json -> key`: the text of the field's value (the last of duplicate keys, as PostgreSQL
/// finds it); None when there is none or the document is no object.
pub fn get_key<'a>(doc: &'a str, key: &str) -> Option<&'a str> {
    fields(doc)?
        .into_iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v)
}

/// `json -> index`: the text of an array's element (from 0; negative counts from the end).
pub fn get_index(doc: &str, i: i64) -> Option<&str> {
    let items = elements(doc)?;
    let n = items.len() as i64;
    let i = if i < 0 { n + i } else { i };
    usize::try_from(i).ok().and_then(|i| items.get(i).copied())
}

/// `json #> path`: each step a key of an object or an index of an array.
pub fn get_path<'a>(doc: &'a str, path: &[Option<String>]) -> Option<&'a str> {
    let mut cur = doc.trim_matches([' ', '\t', '\n', '\r']);
    for step in path {
        let step = step.as_deref()?;
        cur = match typeof_(cur) {
            "object" => get_key(cur, step)?,
            "array" => get_index(cur, step.trim().parse().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// `->>` of an element's text: a string's contents, JSON null as SQL NULL, anything else its
/// text.
pub fn as_text(elem: &str) -> Option<String> {
    let t = elem.trim_matches([' ', '\t', '\n', '\r']);
    match t.as_bytes().first() {
        Some(b'"') => Scan::new(t).string(),
        _ if t == "null" => None,
        _ => Some(t.to_string()),
    }
}

/// `json_typeof`: object, array, string, number, boolean or null.
pub fn typeof_(doc: &str) -> &'static str {
    match doc.trim_start_matches([' ', '\t', '\n', '\r']).as_bytes().first() {
        Some(b'{') => "object",
        Some(b'[') => "array",
        Some(b'"') => "string",
        Some(b't' | b'f') => "boolean",
        Some(b'n') => "null",
        _ => "number",
    }
}

/// `json_array_length`: 22023 for an object or a scalar, as PostgreSQL.
pub fn array_length(doc: &str) -> Result<i64> {
    match elements(doc) {
        Some(items) => Ok(items.len() as i64),
        None => Err(Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            if typeof_(doc) == "object" {
                "cannot get array length of a non-array"
            } else {
                "cannot get array length of a scalar"
            },
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_parts_in_place() {
        let doc = r#" {"a" : [1, {"b":  "x\"y"}, null] , "a": 2, "c":{"d" : true}} "#;
        assert_eq!(parse(doc).unwrap(), doc);
        assert_eq!(get_key(doc, "a"), Some("2"));
        assert_eq!(get_key(doc, "c"), Some(r#"{"d" : true}"#));
        let first = fields(doc).unwrap()[0].1;
        assert_eq!(get_index(first, 1), Some(r#"{"b":  "x\"y"}"#));
        assert_eq!(get_index(first, -1), Some("null"));
        assert_eq!(
            as_text(get_key(get_index(first, 1).unwrap(), "b").unwrap()).as_deref(),
            Some("x\"y")
        );
        assert_eq!(as_text("null"), None);
        let path = [Some("c".to_string()), Some("d".to_string())];
        assert_eq!(get_path(doc, &path), Some("true"));
        assert_eq!(typeof_(" [1]"), "array");
        assert_eq!(array_length("[1, [2, 3], {}]").unwrap(), 3);
        assert!(array_length("{}").is_err());
        assert!(parse("{\"a\":}").is_err());
        assert_eq!(parse(r#""\u0000""#).unwrap(), r#""\u0000""#);
    }
}
