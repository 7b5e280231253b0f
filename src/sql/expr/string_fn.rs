//! String functions at run time (bound by `bind/string_fn.rs` with PostgreSQL's argument
//! types): padding, repetition, case, splitting, hashing, translation, character codes,
//! `format`, quoting, `concat_ws`, `overlay` and the regular-expression functions.

use super::cast::text_arg;
use crate::error::{Error, Result, SqlState};
use crate::types::Value;

/// A string function (see [`super::Func::Str`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrFn {
    /// `lpad(s, n [, fill])`, `rpad(s, n [, fill])`.
    Lpad,
    Rpad,
    Repeat,
    Reverse,
    Initcap,
    SplitPart,
    /// `md5(text)` or `md5(bytea)`: the digest in hexadecimal.
    Md5,
    Translate,
    Ascii,
    Chr,
    StartsWith,
    BitLength,
    /// `to_hex(integer)`, `to_hex(bigint)`: a negative value as its two's complement of 32 or
    /// 64 bits.
    ToHex32,
    ToHex64,
    /// `concat_ws(sep, ...)`: NULL arguments skipped, NULL when the separator is.
    ConcatWs,
    /// `format(fmt, ...)`: `%s`, `%I`, `%L`, `%%`, positions `%n$`, widths and `-`.
    Format,
    QuoteLiteral,
    /// `quote_nullable(x)`: `NULL` for NULL, else as quote_literal.
    QuoteNullable,
    /// `regexp_replace(s, pattern, replacement [, flags])`.
    RegexpReplace,
    /// `regexp_replace(s, pattern, replacement, start [, n [, flags]])`: the search from
    /// character `start` (from 1), replacing the `n`th match (every one when `n` is 0; the
    /// first without `n`).
    RegexpReplaceN,
    /// `similar_to_escape(pattern [, escape])`: a SIMILAR TO pattern as a regular expression
    /// (`x SIMILAR TO p` is `x ~ similar_to_escape(p)`, as in PostgreSQL).
    SimilarEscape,
    /// `substring(s SIMILAR p ESCAPE e)` / `substring(s FROM p FOR e)` / `substring(s, p, e)`:
    /// the part of `s` between the pattern's escape-double-quote separators (all of `s`
    /// without them) when the pattern matches all of `s`, else NULL.
    SimilarSubstring,
    /// `regexp_match(s, pattern [, flags])`: the first match's groups as a text[].
    RegexpMatch,
    /// `regexp_like(s, pattern [, flags])`, `regexp_count(s, pattern)`.
    RegexpLike,
    RegexpCount,
    /// `regexp_split_to_array(s, pattern [, flags])`.
    RegexpSplit,
    /// The rows of `regexp_matches(s, pattern [, flags])` as an array of their text forms:
    /// the groups of the first match, or of every match with flag `g`.
    RegexpMatches,
    /// `substring(s FROM pattern)`: the first group of the first match (or the match).
    RegexpSubstring,
    /// `string_to_array(s, delim [, null_string])`.
    StringToArray,
    /// `overlay(s PLACING t FROM start [FOR count])`.
    Overlay,
}

/// The largest value PostgreSQL allocates (MaxAllocSize): longer results are 54000.
const MAX_ALLOC: i64 = 0x3fff_ffff;

fn too_large() -> Error {
    Error::new(SqlState::PROGRAM_LIMIT_EXCEEDED, "requested length too large")
}

fn invalid(msg: impl Into<String>) -> Error {
    Error::new(SqlState::INVALID_PARAMETER_VALUE, msg)
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        _ => 0,
    }
}

fn text(v: &Value) -> String {
    text_arg(v).unwrap_or_default()
}

fn bytes(v: &Value) -> Vec<u8> {
    match v {
        Value::Bytes(b) => b.clone(),
        v => text(v).into_bytes(),
    }
}

pub(super) fn eval(f: StrFn, vals: &[Value]) -> Result<Value> {
    let null = Ok(Value::Null);
    // The functions that are not strict first.
    match f {
        StrFn::ConcatWs => {
            let Some(sep) = text_arg(&vals[0]) else {
                return null;
            };
            let parts: Vec<String> = vals[1..].iter().filter_map(text_arg).collect();
            return Ok(Value::Text(parts.join(&sep)));
        }
        StrFn::Format => {
            let Some(fmt) = text_arg(&vals[0]) else {
                return null;
            };
            return format(&fmt, &vals[1..]).map(Value::Text);
        }
        StrFn::QuoteNullable => {
            return Ok(Value::Text(match text_arg(&vals[0]) {
                Some(s) => quote_literal(&s),
                None => "NULL".into(),
            }))
        }
        StrFn::StringToArray => {
            let Some(s) = text_arg(&vals[0]) else {
                return null;
            };
            let null_text = vals.get(2).and_then(text_arg);
            return Ok(Value::Text(string_to_array(&s, text_arg(&vals[1]), null_text)));
        }
        _ => {}
    }
    if vals.iter().any(Value::is_null) {
        return null;
    }
    let s = text(&vals[0]);
    Ok(match f {
        StrFn::Lpad | StrFn::Rpad => {
            let n = int(&vals[1]);
            let fill = vals.get(2).map_or(" ".to_string(), text);
            Value::Text(pad(&s, n, &fill, f == StrFn::Lpad)?)
        }
        StrFn::Repeat => {
            let n = int(&vals[1]).max(0);
            if n.saturating_mul(s.len() as i64) > MAX_ALLOC - 4 {
                return Err(too_large());
            }
            Value::Text(s.repeat(n as usize))
        }
        StrFn::Reverse => Value::Text(s.chars().rev().collect()),
        StrFn::Initcap => Value::Text(initcap(&s)),
        StrFn::SplitPart => Value::Text(split_part(&s, &text(&vals[1]), int(&vals[2]))?),
        StrFn::Md5 => Value::Text(format!("{:x}", md5::compute(bytes(&vals[0])))),
        StrFn::Translate => Value::Text(translate(&s, &text(&vals[1]), &text(&vals[2]))),
        StrFn::Ascii => Value::Int(s.chars().next().map_or(0, |c| c as i64)),
        StrFn::Chr => Value::Text(chr(int(&vals[0]))?.to_string()),
        StrFn::StartsWith => Value::Bool(s.starts_with(&text(&vals[1]))),
        StrFn::BitLength => Value::Int(bytes(&vals[0]).len() as i64 * 8),
        StrFn::ToHex32 => Value::Text(format!("{:x}", int(&vals[0]) as i32)),
        StrFn::ToHex64 => Value::Text(format!("{:x}", int(&vals[0]))),
        StrFn::QuoteLiteral => Value::Text(quote_literal(&s)),
        StrFn::RegexpReplace => {
            let flags = Flags::parse(vals.get(3).map(text).as_deref().unwrap_or(""))?;
            let re = flags.compile(&text(&vals[1]))?;
            let n = if flags.global { 0 } else { 1 };
            Value::Text(regexp_replace(&s, &re, &text(&vals[2]), 0, n))
        }
        StrFn::SimilarSubstring => {
            let esc = escape_char(&text(&vals[2]))?;
            let re = Flags::default().compile(&similar_escape(&text(&vals[1]), esc)?)?;
            let Some(c) = re.captures(&s) else {
                return null;
            };
            let m = if c.len() > 1 { c.get(1) } else { c.get(0) };
            m.map_or(Value::Null, |m| Value::Text(m.as_str().to_string()))
        }
        StrFn::SimilarEscape => {
            let esc = match vals.get(1) {
                None => Some('\\'),
                Some(v) => escape_char(&text(v))?,
            };
            Value::Text(similar_escape(&s, esc)?)
        }
        StrFn::RegexpReplaceN => {
            let start = int(&vals[3]);
            if start <= 0 {
                return Err(invalid(format!("invalid value for parameter \"start\": {start}")));
            }
            let n = vals.get(4).map_or(1, int);
            if n < 0 {
                return Err(invalid(format!("invalid value for parameter \"n\": {n}")));
            }
            let flags = Flags::parse(vals.get(5).map(text).as_deref().unwrap_or(""))?;
            let re = flags.compile(&text(&vals[1]))?;
            // Past the end, nothing is replaced.
            let at = s
                .char_indices()
                .nth(usize::try_from(start - 1).unwrap_or(usize::MAX))
                .map(|(i, _)| i);
            match at {
                Some(at) => Value::Text(regexp_replace(&s, &re, &text(&vals[2]), at, n)),
                None => Value::Text(s),
            }
        }
        StrFn::RegexpMatch => {
            let flags = Flags::parse(vals.get(2).map(text).as_deref().unwrap_or(""))?;
            if flags.global {
                return Err(invalid("regexp_match() does not support the \"global\" option"));
            }
            let re = flags.compile(&text(&vals[1]))?;
            let Some(c) = re.captures(&s) else {
                return null;
            };
            Value::Text(crate::types::array::format(groups(&c)))
        }
        StrFn::RegexpLike | StrFn::RegexpCount => {
            let flags = Flags::parse(vals.get(2).map(text).as_deref().unwrap_or(""))?;
            if flags.global {
                let name = if f == StrFn::RegexpLike {
                    "regexp_like"
                } else {
                    "regexp_count"
                };
                return Err(invalid(format!(
                    "{name}() does not support the \"global\" option"
                )));
            }
            let re = flags.compile(&text(&vals[1]))?;
            if f == StrFn::RegexpLike {
                Value::Bool(re.is_match(&s))
            } else {
                Value::Int(matches(&re, &s).count() as i64)
            }
        }
        StrFn::RegexpMatches => {
            let flags = Flags::parse(vals.get(2).map(text).as_deref().unwrap_or(""))?;
            let re = flags.compile(&text(&vals[1]))?;
            let rows: Vec<String> = matches(&re, &s)
                .take(if flags.global { usize::MAX } else { 1 })
                .map(|c| crate::types::array::format(groups(&c)))
                .collect();
            Value::Text(crate::types::array::format(rows.iter().map(|r| Some(r.as_str()))))
        }
        StrFn::RegexpSplit => {
            let flags = Flags::parse(vals.get(2).map(text).as_deref().unwrap_or(""))?;
            if flags.global {
                return Err(invalid(
                    "regexp_split_to_array() does not support the \"global\" option",
                ));
            }
            let re = flags.compile(&text(&vals[1]))?;
            Value::Text(crate::types::array::format(
                regexp_split(&s, &re).into_iter().map(Some),
            ))
        }
        StrFn::RegexpSubstring => {
            let re = Flags::default().compile(&text(&vals[1]))?;
            let Some(c) = re.captures(&s) else {
                return null;
            };
            let m = if c.len() > 1 { c.get(1) } else { c.get(0) };
            m.map_or(Value::Null, |m| Value::Text(m.as_str().to_string()))
        }
        StrFn::Overlay => {
            let t = text(&vals[1]);
            let start = int(&vals[2]);
            let count = vals.get(3).map_or(t.chars().count() as i64, int);
            let end = start
                .checked_add(count)
                .filter(|e| i32::try_from(*e).is_ok())
                .ok_or_else(|| Error::out_of_range("integer out of range"))?;
            if start < 1 {
                return Err(Error::new(
                    SqlState("22011"),
                    "negative substring length not allowed",
                ));
            }
            let chars: Vec<char> = s.chars().collect();
            let head = (start as usize - 1).min(chars.len());
            let tail = (end.max(1) as usize - 1).min(chars.len());
            let mut out: String = chars[..head].iter().collect();
            out.push_str(&t);
            out.extend(&chars[tail..]);
            Value::Text(out)
        }
        StrFn::ConcatWs | StrFn::Format | StrFn::QuoteNullable | StrFn::StringToArray => {
            unreachable!("handled above")
        }
    })
}

/// lpad / rpad: `s` cut or filled with `fill` to `n` characters (cut only when `fill` is
/// empty).
fn pad(s: &str, n: i64, fill: &str, left: bool) -> Result<String> {
    let n = n.max(0);
    // PostgreSQL reserves the encoding's longest character (4 bytes in UTF8) per character.
    if n.saturating_mul(4) > MAX_ALLOC - 4 {
        return Err(too_large());
    }
    let n = n as usize;
    let chars: Vec<char> = s.chars().collect();
    if chars.len() >= n || fill.is_empty() {
        return Ok(chars.iter().take(n).collect());
    }
    let filler: String = fill.chars().cycle().take(n - chars.len()).collect();
    Ok(if left { filler + s } else { s.to_string() + &filler })
}

/// initcap as PostgreSQL's C locale has it: the first ASCII letter or digit of each run of
/// them upper case, the others lower case; other characters unchanged.
fn initcap(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_word = false;
    for c in s.chars() {
        if in_word {
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c.to_ascii_uppercase());
        }
        in_word = c.is_ascii_alphanumeric();
    }
    out
}

/// Field `n` (from 1; from the end when negative) of `s` split at `delim`; empty past the
/// last field.
fn split_part(s: &str, delim: &str, n: i64) -> Result<String> {
    if n == 0 {
        return Err(invalid("field position must not be zero"));
    }
    if s.is_empty() {
        return Ok(String::new());
    }
    let fields: Vec<&str> = if delim.is_empty() {
        vec![s]
    } else {
        s.split(delim).collect()
    };
    let k = if n > 0 {
        usize::try_from(n - 1).ok()
    } else {
        usize::try_from(fields.len() as i64 + n).ok()
    };
    Ok(k.and_then(|k| fields.get(k))
        .map_or(String::new(), |f| f.to_string()))
}

/// Each character of `s` found in `from` replaced by the one at the same place in `to`, or
/// removed when `to` is shorter (the first occurrence in `from` counts).
fn translate(s: &str, from: &str, to: &str) -> String {
    let from: Vec<char> = from.chars().collect();
    let to: Vec<char> = to.chars().collect();
    s.chars()
        .filter_map(|c| match from.iter().position(|f| *f == c) {
            Some(i) => to.get(i).copied(),
            None => Some(c),
        })
        .collect()
}

/// chr(n): the character of code point `n` (UTF8).
fn chr(n: i64) -> Result<char> {
    if n == 0 {
        return Err(Error::new(
            SqlState::PROGRAM_LIMIT_EXCEEDED,
            "null character not permitted",
        ));
    }
    if n < 0 {
        return Err(invalid("character number must be positive"));
    }
    let limit = |what: &str| {
        Error::new(
            SqlState::PROGRAM_LIMIT_EXCEEDED,
            format!("requested character {what} for encoding: {n}"),
        )
    };
    if n > 0x10ffff {
        return Err(limit("too large"));
    }
    char::from_u32(n as u32).ok_or_else(|| limit("not valid"))
}

/// quote_literal: single quotes doubled; with a backslash, `E'...'` with backslashes doubled.
pub fn quote_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    if s.contains('\\') {
        out.push('E');
    }
    out.push('\'');
    for c in s.chars() {
        if c == '\'' || c == '\\' {
            out.push(c);
        }
        out.push(c);
    }
    out.push('\'');
    out
}

/// string_to_array: `s` split at `delim` (each character alone when it is NULL, `s` as one
/// element when it is empty); elements equal to `null_text` are NULL; an empty `s` is `{}`.
fn string_to_array(s: &str, delim: Option<String>, null_text: Option<String>) -> String {
    let parts: Vec<String> = if s.is_empty() {
        vec![]
    } else {
        match delim.as_deref() {
            None => s.chars().map(String::from).collect(),
            Some("") => vec![s.to_string()],
            Some(d) => s.split(d).map(String::from).collect(),
        }
    };
    crate::types::array::format(
        parts
            .iter()
            .map(|p| (Some(p) != null_text.as_ref()).then_some(p.as_str())),
    )
}

fn unterminated() -> Error {
    invalid("unterminated format() type specifier")
}

/// format(fmt, args): PostgreSQL's text_format.
fn format(fmt: &str, args: &[Value]) -> Result<String> {
    let chars: Vec<char> = fmt.chars().collect();
    let mut out = String::new();
    let mut next = 0usize; // the argument a specifier without a position takes
    let mut i = 0;
    // A number at `chars[*i..]` (None when there is no digit).
    let number = |i: &mut usize| -> Result<Option<usize>> {
        let start = *i;
        let mut n: usize = 0;
        while *i < chars.len() && chars[*i].is_ascii_digit() {
            n = n
                .checked_mul(10)
                .and_then(|n| n.checked_add(chars[*i] as usize - '0' as usize))
                .filter(|n| *n <= i32::MAX as usize)
                .ok_or_else(|| Error::out_of_range("number is out of range"))?;
            *i += 1;
        }
        Ok((*i > start).then_some(n))
    };
    let arg = |k: usize| -> Result<&Value> {
        args.get(k)
            .ok_or_else(|| invalid("too few arguments for format()"))
    };
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if c != '%' {
            out.push(c);
            continue;
        }
        if i >= chars.len() {
            return Err(unterminated());
        }
        if chars[i] == '%' {
            out.push('%');
            i += 1;
            continue;
        }
        // [argpos$][flags][width]type; width is a number, `*` or `*n$`.
        let mut pos = None;
        let save = i;
        if let Some(n) = number(&mut i)? {
            if i < chars.len() && chars[i] == '$' {
                pos = Some(n);
                i += 1;
            } else {
                i = save;
            }
        }
        let mut left = false;
        while i < chars.len() && chars[i] == '-' {
            left = true;
            i += 1;
        }
        let mut width: Option<i64> = None;
        if i < chars.len() && chars[i] == '*' {
            i += 1;
            let save = i;
            let mut wpos = None;
            if let Some(n) = number(&mut i)? {
                if i < chars.len() && chars[i] == '$' {
                    wpos = Some(n);
                    i += 1;
                } else {
                    i = save;
                }
            }
            let k = match wpos {
                Some(0) => return Err(zero_position()),
                Some(n) => n - 1,
                None => next,
            };
            next = k + 1;
            width = Some(match arg(k)? {
                Value::Null => 0,
                Value::Int(w) if *w == i64::from(i32::MIN) => {
                    return Err(Error::out_of_range("number is out of range"))
                }
                Value::Int(w) => *w,
                v => text(v)
                    .trim()
                    .parse()
                    .map_err(|_| invalid("width argument must be an integer"))?,
            });
        } else if let Some(n) = number(&mut i)? {
            width = Some(n as i64);
        }
        if i >= chars.len() {
            return Err(unterminated());
        }
        let ty = chars[i];
        i += 1;
        if !matches!(ty, 's' | 'I' | 'L') {
            return Err(invalid(format!("unrecognized format() type specifier \"{ty}\"")));
        }
        let k = match pos {
            Some(0) => return Err(zero_position()),
            Some(n) => n - 1,
            None => next,
        };
        next = k + 1;
        let v = arg(k)?;
        let s = match (ty, text_arg(v)) {
            ('s', s) => s.unwrap_or_default(),
            ('I', Some(s)) => crate::sql::catalog::deparse::quote_ident(&s),
            ('I', None) => {
                return Err(Error::new(
                    SqlState("22004"),
                    "null values cannot be formatted as an SQL identifier",
                ))
            }
            (_, Some(s)) => quote_literal(&s),
            (_, None) => "NULL".into(),
        };
        let w = width.unwrap_or(0);
        let left = left || w < 0;
        if w.unsigned_abs() > MAX_ALLOC as u64 {
            return Err(too_large());
        }
        let w = w.unsigned_abs() as usize;
        let len = s.chars().count();
        if len >= w {
            out.push_str(&s);
        } else if left {
            out.push_str(&s);
            out.extend(std::iter::repeat_n(' ', w - len));
        } else {
            out.extend(std::iter::repeat_n(' ', w - len));
            out.push_str(&s);
        }
    }
    Ok(out)
}

fn zero_position() -> Error {
    invalid("format specifies argument 0, but arguments are numbered from 1")
}

/// The options of a regular-expression function's `flags` argument.
#[derive(Default)]
struct Flags {
    global: bool,
    case_insensitive: bool,
    /// `n`: `.` and bracket expressions do not match a newline, `^` `$` match at lines.
    newline: bool,
    /// `p`: partial newline sensitivity (`.` stops at newlines, anchors do not).
    partial: bool,
    /// `w`: inverse partial (anchors at lines, `.` matches newlines).
    weird: bool,
    expanded: bool,
    literal: bool,
}

impl Flags {
    fn parse(s: &str) -> Result<Flags> {
        let mut f = Flags::default();
        for c in s.chars() {
            match c {
                'g' => f.global = true,
                'i' => f.case_insensitive = true,
                'c' => f.case_insensitive = false,
                'n' | 'm' => f.newline = true,
                's' => (f.newline, f.partial, f.weird) = (false, false, false),
                'p' => f.partial = true,
                'w' => f.weird = true,
                'x' => f.expanded = true,
                'q' => f.literal = true,
                't' => f.expanded = false,
                'b' | 'e' => {
                    return Err(Error::unsupported(
                        "basic and extended regular expressions (flags b, e) are not supported by Augur",
                    ))
                }
                c => return Err(invalid(format!("invalid regular expression option: \"{c}\""))),
            }
        }
        Ok(f)
    }

    /// The pattern compiled with these options (PostgreSQL's `.` matches a newline unless
    /// told otherwise).
    fn compile(&self, p: &str) -> Result<regex::Regex> {
        let p = if self.literal {
            regex::escape(p)
        } else {
            p.to_string()
        };
        let dot_nl = !(self.newline || self.partial);
        let lines = self.newline || self.weird;
        // Flag i folds the case of ASCII letters only (the C locale's).
        let p = super::regex_fold::pg_pattern(&p, self.case_insensitive, self.expanded).unwrap_or(p);
        regex::RegexBuilder::new(&p)
            .dot_matches_new_line(dot_nl)
            .multi_line(lines)
            .ignore_whitespace(self.expanded)
            .build()
            .map_err(super::func::regex_error)
    }
}

/// The matches of `re` in `s` as PostgreSQL's regexp functions find them with flag `g`: each
/// search starts where the last match ended, or one character further after an empty match
/// (so `a*` matches `aaa` twice: `aaa`, then the empty string at the end).
fn matches<'s>(re: &regex::Regex, s: &'s str) -> impl Iterator<Item = regex::Captures<'s>> {
    matches_from(re, s, 0)
}

/// [`matches`] searching from byte `from` of `s` (anchors still see the whole string).
fn matches_from<'s>(re: &regex::Regex, s: &'s str, from: usize) -> impl Iterator<Item = regex::Captures<'s>> {
    let re = re.clone();
    let mut pos = Some(from);
    std::iter::from_fn(move || {
        let c = re.captures_at(s, pos?)?;
        let m = c.get(0).expect("group 0 is the match");
        pos = if m.is_empty() {
            s[m.end()..].chars().next().map(|ch| m.end() + ch.len_utf8())
        } else {
            Some(m.end())
        };
        Some(c)
    })
}

/// A match's groups (NULL for a group that took no part), or the match when the pattern has
/// none: a row of regexp_match / regexp_matches.
fn groups<'s>(c: &regex::Captures<'s>) -> Vec<Option<&'s str>> {
    if c.len() == 1 {
        vec![c.get(0).map(|m| m.as_str())]
    } else {
        (1..c.len()).map(|i| c.get(i).map(|m| m.as_str())).collect()
    }
}

/// regexp_split_to_array: the pieces of `s` between the matches of `re`, leaving out empty
/// matches at the start or end of `s` or right after the previous match, as PostgreSQL does
/// (`''` splits into characters; an empty `s` is one empty piece).
fn regexp_split<'s>(s: &'s str, re: &regex::Regex) -> Vec<&'s str> {
    let mut out = Vec::new();
    let mut prev = 0;
    for c in matches(re, s) {
        let m = c.get(0).expect("group 0 is the match");
        if m.start() < s.len() && m.end() > prev {
            out.push(&s[prev..m.start()]);
            prev = m.end();
        }
    }
    out.push(&s[prev..]);
    out
}

/// regexp_replace: the `n`th match searching from byte `from` (every match when `n` is 0)
/// replaced by `rep`, in which `\1`..`\9` are the groups, `\&` the match and `\\` a
/// backslash.
fn regexp_replace(s: &str, re: &regex::Regex, rep: &str, from: usize, n: i64) -> String {
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    for (c, k) in matches_from(re, s, from).zip(1..) {
        if n != 0 && k < n {
            continue;
        }
        let m = c.get(0).expect("group 0 is the match");
        out.push_str(&s[last..m.start()]);
        let mut it = rep.chars().peekable();
        while let Some(ch) = it.next() {
            if ch != '\\' {
                out.push(ch);
                continue;
            }
            match it.peek().copied() {
                Some(d @ '1'..='9') => {
                    it.next();
                    let k = d as usize - '0' as usize;
                    if let Some(g) = c.get(k) {
                        out.push_str(g.as_str());
                    }
                }
                Some('&') => {
                    it.next();
                    out.push_str(m.as_str());
                }
                Some('\\') => {
                    it.next();
                    out.push('\\');
                }
                _ => out.push('\\'),
            }
        }
        last = m.end();
        if n != 0 {
            break;
        }
    }
    out.push_str(&s[last..]);
    out
}

/// The escape character of a SIMILAR TO pattern: none for an empty string, 22025 for more
/// than one character.
fn escape_char(e: &str) -> Result<Option<char>> {
    let mut it = e.chars();
    match (it.next(), it.next()) {
        (None, _) => Ok(None),
        (Some(c), None) => Ok(Some(c)),
        _ => Err(Error::new(SqlState("22025"), "invalid escape string")),
    }
}

/// A SIMILAR TO pattern as the regular expression PostgreSQL's similar_escape makes of it: the
/// whole string must match; `%` is `.*`, `_` is `.`, `.` `^` `$` and `\` are literal, groups do
/// not capture, bracket expressions are copied, and the escape character makes the next
/// character literal (its `"` separators, for `substring`, are 0A000).
fn similar_escape(p: &str, esc: Option<char>) -> Result<String> {
    let mut out = String::from("^(?:");
    let mut after_escape = false;
    // The escape-double-quote separators seen: the part before the first is matched as short
    // as it can be, the one between them returned by substring(s SIMILAR p ESCAPE e).
    let mut separators = 0;
    // 0: outside brackets; 1: right after `[`; 2: after `[^`; 3: inside.
    let mut class = 0;
    for c in p.chars() {
        if after_escape {
            after_escape = false;
            if c == '"' && class == 0 {
                out.push_str(match separators {
                    0 => "){1,1}?(",
                    1 => "){1,1}(?:",
                    _ => return Err(Error::new(
                        SqlState("2200C"),
                        "SQL regular expression may not contain more than two escape-double-quote separators",
                    )),
                });
                separators += 1;
                continue;
            }
            out.push('\\');
            out.push(c);
        } else if Some(c) == esc {
            after_escape = true;
        } else if class > 0 {
            if c == '\\' {
                out.push('\\');
            }
            out.push(c);
            class = match (class, c) {
                (1, '^') => 2,
                (3, ']') => 0,
                _ => 3,
            };
        } else {
            match c {
                '[' => {
                    out.push('[');
                    class = 1;
                }
                '%' => out.push_str(".*"),
                '_' => out.push('.'),
                '(' => out.push_str("(?:"),
                '\\' | '.' | '^' | '$' => {
                    out.push('\\');
                    out.push(c);
                }
                c => out.push(c),
            }
        }
    }
    out.push_str(")$");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_specifiers() {
        let t = |s: &str| Value::Text(s.into());
        let args = [t("a b"), Value::Null, t("it's")];
        assert_eq!(
            format("%s|%I|%L", &[t("x"), t("a b"), t("it's")]).unwrap(),
            "x|\"a b\"|'it''s'"
        );
        assert_eq!(format("%3$s %1$s", &args).unwrap(), "it's a b");
        assert_eq!(
            format("[%5s][%-5s]", &[t("ab"), t("cd")]).unwrap(),
            "[   ab][cd   ]"
        );
        assert_eq!(format("%s%%", &args[1..2]).unwrap(), "%");
        assert!(format("%s %s %s %s", &args).is_err());
        assert!(format("%I", &args[1..2]).is_err());
        assert!(format("%", &args).is_err());
        assert!(format("%*s", &[Value::Int(i64::from(i32::MIN)), t("x")]).is_err());
    }

    #[test]
    fn padding_and_splitting() {
        assert_eq!(pad("hi", 5, "xy", true).unwrap(), "xyxhi");
        assert_eq!(pad("hello", 2, "x", false).unwrap(), "he");
        assert_eq!(split_part("a,b,c", ",", -1).unwrap(), "c");
        assert_eq!(split_part("a,b,c", ",", 4).unwrap(), "");
        assert_eq!(translate("12345", "143", "ax"), "a2x5");
        assert_eq!(initcap("hi THOMAS_x y2k"), "Hi Thomas_X Y2k");
    }
}
