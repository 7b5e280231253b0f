//! `to_char(number, template)` with PostgreSQL's common numeric patterns: `9` (a digit, blank
//! when not significant), `0` (a digit, zero-filled), `.` / `D` (the decimal point), `,` / `G`
//! (a group separator once a digit is printed), `S` (a sign, before the number or after it),
//! `MI` (a minus or a blank), `FM` (no padding, no trailing zeros from `9`s), `TH` / `th`
//! (ordinal suffix), `"quoted"` and other literal text. Too many digits print as `#`. Other
//! patterns (`PR`, `PL`, `SG`, `EEEE`, `V`, `RN`, `L`) are 0A000.

use crate::error::{Error, Result};
use crate::types::{numeric, Decimal, Value};

enum Node {
    Digit { zero: bool },
    Point,
    Group,
    Sign,
    Minus,
    Th { upper: bool },
    Lit(String),
}

fn parse(fmt: &str) -> Result<(Vec<Node>, bool)> {
    let chars: Vec<char> = fmt.chars().collect();
    let mut out = Vec::new();
    let mut fm = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let two: String = chars[i..(i + 2).min(chars.len())]
            .iter()
            .collect::<String>()
            .to_uppercase();
        match (c, two.as_str()) {
            (_, "FM") => {
                fm = true;
                i += 2;
            }
            (_, "MI") => {
                out.push(Node::Minus);
                i += 2;
            }
            (_, "TH") => {
                out.push(Node::Th {
                    upper: c.is_ascii_uppercase(),
                });
                i += 2;
            }
            (_, "PR" | "PL" | "SG" | "EE" | "RN") | ('V' | 'v' | 'L' | 'l', _) => {
                return Err(Error::unsupported(format!(
                    "to_char template pattern \"{}\" for numbers is not supported by Augur",
                    two
                )))
            }
            ('9', _) | ('0', _) => {
                out.push(Node::Digit { zero: c == '0' });
                i += 1;
            }
            ('.' | 'D' | 'd', _) => {
                out.push(Node::Point);
                i += 1;
            }
            (',' | 'G' | 'g', _) => {
                out.push(Node::Group);
                i += 1;
            }
            ('S' | 's', _) => {
                out.push(Node::Sign);
                i += 1;
            }
            ('"', _) => {
                let mut s = String::new();
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    s.push(chars[i]);
                    i += 1;
                }
                i += 1;
                out.push(Node::Lit(s));
            }
            _ => {
                out.push(Node::Lit(c.to_string()));
                i += 1;
            }
        }
    }
    Ok((out, fm))
}

pub(super) fn to_char(v: &Value, fmt: &str) -> Result<Value> {
    let (nodes, fm) = parse(fmt)?;
    let point = nodes.iter().position(|n| matches!(n, Node::Point));
    let is_digit = |n: &Node| matches!(n, Node::Digit { .. });
    let before = |k: usize| point.is_none_or(|p| k < p);
    let pre = nodes
        .iter()
        .enumerate()
        .filter(|(k, n)| is_digit(n) && before(*k))
        .count();
    let post = nodes
        .iter()
        .enumerate()
        .filter(|(k, n)| is_digit(n) && !before(*k))
        .count();
    // The value rounded to the template's fraction digits, as text.
    let finite = !matches!(v, Value::Float(f) if !f.is_finite());
    let text = match v {
        Value::Float(f) if f.is_finite() => format!("{f:.post$}"),
        Value::Float(_) => String::new(),
        Value::Int(i) => numeric::round(Decimal::from(*i), post as i64)?.to_string(),
        Value::Numeric(d) => numeric::round(*d, post as i64)?.to_string(),
        _ => return Ok(Value::Null),
    };
    // A numeric rounded to zero has no sign; a float keeps C's `-0`.
    let negative = text.starts_with('-')
        && (matches!(v, Value::Float(_)) || text.bytes().any(|b| (b'1'..=b'9').contains(&b)));
    let text = text.trim_start_matches('-');
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    // "0.xxx" prints without its zero unless the template asks for it.
    let int = if int == "0" && point.is_some() { "" } else { int };
    let overflow = int.len() > pre || !finite;
    let zero_start = nodes
        .iter()
        .enumerate()
        .filter(|(k, n)| is_digit(n) && before(*k))
        .position(|(_, n)| matches!(n, Node::Digit { zero: true }))
        .unwrap_or(pre);
    let leading_sign = nodes
        .iter()
        .position(|n| matches!(n, Node::Sign))
        .is_some_and(|s| nodes.iter().position(is_digit).is_none_or(|d| s < d));
    let anchored = nodes.iter().any(|n| matches!(n, Node::Sign | Node::Minus)) && !leading_sign;
    let floating = if anchored {
        None
    } else if negative {
        Some("-")
    } else if leading_sign {
        Some("+")
    } else if fm {
        Some("")
    } else {
        Some(" ")
    };
    let mut out = String::new();
    let (mut p, mut f) = (0usize, 0usize);
    let mut printed = false;
    let mut sign_done = floating.is_none();
    let mut frac_out = String::new();
    let mut last_zero_frac = 0;
    let put_sign = |out: &mut String, done: &mut bool| {
        if !*done {
            out.push_str(floating.unwrap_or(""));
            *done = true;
        }
    };
    for node in &nodes {
        match node {
            Node::Digit { .. } if before_point(&nodes, node) => {
                let idx = p as i64 - (pre as i64 - int.len() as i64);
                let c = if overflow {
                    Some('#')
                } else if idx >= 0 {
                    int.chars().nth(idx as usize)
                } else if p >= zero_start {
                    Some('0')
                } else {
                    None
                };
                match c {
                    Some(c) => {
                        put_sign(&mut out, &mut sign_done);
                        out.push(c);
                        printed = true;
                    }
                    None if !fm => out.push(' '),
                    None => {}
                }
                p += 1;
            }
            Node::Digit { zero } => {
                let c = if overflow {
                    '#'
                } else {
                    frac.chars().nth(f).unwrap_or('0')
                };
                frac_out.push(c);
                if *zero {
                    last_zero_frac = frac_out.len();
                }
                f += 1;
            }
            Node::Point => {
                put_sign(&mut out, &mut sign_done);
                out.push('.');
                // Where the fraction goes once FM has trimmed it.
                out.push('\u{0}');
            }
            Node::Group => {
                if printed {
                    out.push(',');
                } else if !fm {
                    out.push(' ');
                }
            }
            Node::Sign => {
                if !leading_sign {
                    out.push(if negative { '-' } else { '+' });
                }
            }
            Node::Minus => {
                if negative {
                    out.push('-');
                } else if !fm {
                    out.push(' ');
                }
            }
            Node::Th { upper } => {
                if !overflow && !negative {
                    // The suffix follows the last two digits (`int` is ASCII digits).
                    let last = &int[int.len().saturating_sub(2)..];
                    out.push_str(super::datetime_fmt::ordinal(last.parse().unwrap_or(0), *upper));
                }
            }
            Node::Lit(s) => out.push_str(s),
        }
    }
    // FM drops the trailing zeros of `9` fraction positions.
    if fm && !overflow {
        let keep = frac_out.trim_end_matches('0').len().max(last_zero_frac);
        frac_out.truncate(keep);
    }
    let has_digits = printed || !frac_out.is_empty();
    let mut out = match out.split_once('\u{0}') {
        Some((a, b)) => {
            let a = if fm && !has_digits {
                // Nothing left of the number: PostgreSQL prints its zero.
                format!("{}0.", &a[..a.len() - 1])
            } else {
                a.to_string()
            };
            format!("{a}{frac_out}{b}")
        }
        None => out,
    };
    if !sign_done {
        out.insert_str(0, floating.unwrap_or(""));
    }
    Ok(Value::Text(out))
}

/// Whether `node` (by identity) comes before the template's decimal point.
fn before_point(nodes: &[Node], node: &Node) -> bool {
    for n in nodes {
        if std::ptr::eq(n, node) {
            return true;
        }
        if matches!(n, Node::Point) {
            return false;
        }
    }
    true
}
