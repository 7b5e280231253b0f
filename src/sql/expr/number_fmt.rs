//! `to_char(number, template)` with PostgreSQL's common numeric patterns: `9` (a digit, blank
//! when not significant), `0` (a digit, zero-filled), `.` / `D` (the decimal point), `,` / `G`
//! (a group separator once a digit is printed), `S` (a sign, before the number or after it),
//! `MI` (a minus or a blank), `FM` (no padding, no trailing zeros from `9`s), `TH` / `th`
//! (ordinal suffix), `PL` (a plus sign, at its place), `SG` (the sign at its place), `PR`
//! (a negative value in angle brackets), `V` (the value times 10 to the number of digits after
//! it), `L` (the currency symbol: a blank, as in the C locale), `RN` (Roman numerals; the
//! other number patterns beside it print as PostgreSQL's do then: group separators, `MI`, `PL`
//! and `L` a blank, the rest nothing), `EEEE` (scientific notation, only with digits and a
//! point), `"quoted"` and other literal text. Too many digits print as `#`.

use crate::error::{Error, Result, SqlState};
use crate::types::{numeric, Decimal, Value};

enum Node {
    Digit {
        zero: bool,
    },
    Point,
    Group,
    Sign,
    Minus,
    Th {
        upper: bool,
    },
    Lit(String),
    /// `PL`: `+` for a value not negative.
    Plus,
    /// `SG`: the sign, at its place.
    SignAt,
    /// `PR`: the `>` after a negative value.
    Angle,
    /// `V`: the digits after it are the value's times 10 to their number.
    Mult,
    /// `RN` / `rn`: the value in Roman numerals.
    Roman {
        upper: bool,
    },
    /// `EEEE`: the exponent of scientific notation.
    Eeee,
    /// `L`: the currency symbol, a blank in the C locale (PostgreSQL's for an empty
    /// `lc_monetary` symbol).
    Currency,
}

fn syntax(msg: &str) -> Error {
    Error::new(SqlState::SYNTAX_ERROR, msg.to_string())
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
            (_, "PL") => {
                out.push(Node::Plus);
                i += 2;
            }
            (_, "SG") => {
                out.push(Node::SignAt);
                i += 2;
            }
            (_, "PR") => {
                out.push(Node::Angle);
                i += 2;
            }
            (_, "RN") => {
                out.push(Node::Roman {
                    upper: c.is_ascii_uppercase(),
                });
                i += 2;
            }
            (_, "EE")
                if chars[i..(i + 4).min(chars.len())]
                    .iter()
                    .collect::<String>()
                    .eq_ignore_ascii_case("EEEE") =>
            {
                out.push(Node::Eeee);
                i += 4;
            }
            ('V' | 'v', _) => {
                out.push(Node::Mult);
                i += 1;
            }
            ('L' | 'l', _) => {
                out.push(Node::Currency);
                i += 1;
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
    let (mut nodes, fm) = parse(fmt)?;
    if !matches!(v, Value::Int(_) | Value::Numeric(_) | Value::Float(_)) {
        return Ok(Value::Null);
    }
    if nodes.iter().any(|n| matches!(n, Node::Roman { .. })) {
        return roman_template(v, &nodes, fm);
    }
    if nodes.iter().any(|n| matches!(n, Node::Eeee)) {
        return scientific(v, &nodes, fm);
    }
    // V: the digits after it are whole digits of the value times 10^their number.
    let mut scaled = None;
    if let Some(at) = nodes.iter().position(|n| matches!(n, Node::Mult)) {
        if nodes.iter().any(|n| matches!(n, Node::Point)) {
            return Err(syntax("cannot use \"V\" and decimal point together"));
        }
        let k = nodes[at..]
            .iter()
            .filter(|n| matches!(n, Node::Digit { .. }))
            .count();
        nodes.retain(|n| !matches!(n, Node::Mult));
        scaled = Some(match v {
            Value::Float(f) => Value::Float(f * 10f64.powi(k as i32)),
            Value::Int(i) => Value::Numeric(numeric::mul(Decimal::from(*i), pow10(k)?)?),
            Value::Numeric(d) => Value::Numeric(numeric::mul(*d, pow10(k)?)?),
            v => v.clone(),
        });
    }
    let v = scaled.as_ref().unwrap_or(v);
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
    let anchored = nodes
        .iter()
        .any(|n| matches!(n, Node::Sign | Node::Minus | Node::SignAt))
        && !leading_sign;
    let brackets = nodes.iter().any(|n| matches!(n, Node::Angle));
    let floating = if anchored {
        None
    } else if brackets && negative {
        Some("<")
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
            Node::Currency => out.push(' '),
            Node::Plus | Node::Angle => {
                let mark = if matches!(node, Node::Plus) {
                    !negative
                } else {
                    negative
                };
                if mark {
                    out.push(if matches!(node, Node::Plus) { '+' } else { '>' });
                } else if !fm {
                    out.push(' ');
                }
            }
            Node::SignAt => out.push(if negative { '-' } else { '+' }),
            Node::Mult | Node::Roman { .. } | Node::Eeee => {}
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

/// 10^k as a numeric (22003 past its range).
fn pow10(k: usize) -> Result<Decimal> {
    let mut d = Decimal::from(1);
    for _ in 0..k {
        d = numeric::mul(d, Decimal::from(10))?;
    }
    Ok(d)
}

/// A template with `RN`: the value rounded to an integer in Roman numerals (15 columns, right
/// aligned, without FM; `#`s outside 1..3999), literal text as it is. The other number
/// patterns print as PostgreSQL's do beside it (its Roman mode drops the value's digits and
/// sign): `L` a blank, group separators, `MI` and `PL` a blank unless FM, the rest nothing.
fn roman_template(v: &Value, nodes: &[Node], fm: bool) -> Result<Value> {
    let n: Option<i64> = match v {
        Value::Int(i) => Some(*i),
        Value::Numeric(d) => numeric::to_i64(numeric::round(*d, 0)?),
        Value::Float(f) if f.is_finite() => Some(f.round_ties_even() as i64),
        _ => None,
    };
    let mut out = String::new();
    for node in nodes {
        match node {
            Node::Roman { upper } => {
                let r = match n {
                    Some(n @ 1..=3999) => roman(n),
                    _ => "#".repeat(15),
                };
                let r = if *upper { r } else { r.to_ascii_lowercase() };
                if fm {
                    out.push_str(&r);
                } else {
                    out.push_str(&format!("{r:>15}"));
                }
            }
            Node::Lit(s) => out.push_str(s),
            Node::Currency => out.push(' '),
            Node::Group | Node::Minus | Node::Plus => {
                if !fm {
                    out.push(' ');
                }
            }
            Node::Eeee => return Err(syntax("\"EEEE\" is incompatible with other formats")),
            Node::Digit { .. }
            | Node::Point
            | Node::Sign
            | Node::SignAt
            | Node::Angle
            | Node::Mult
            | Node::Th { .. } => {}
        }
    }
    Ok(Value::Text(out))
}

fn roman(mut n: i64) -> String {
    const R: [(i64, &str); 13] = [
        (1000, "M"),
        (900, "CM"),
        (500, "D"),
        (400, "CD"),
        (100, "C"),
        (90, "XC"),
        (50, "L"),
        (40, "XL"),
        (10, "X"),
        (9, "IX"),
        (5, "V"),
        (4, "IV"),
        (1, "I"),
    ];
    let mut s = String::new();
    for (v, r) in R {
        while n >= v {
            s.push_str(r);
            n -= v;
        }
    }
    s
}

/// A template with `EEEE`: the sign (a blank when not negative), one digit, the point and as
/// many digits as the template has after it, `e` and the signed exponent of at least two
/// digits; 42601 with other patterns or FM, as PostgreSQL.
fn scientific(v: &Value, nodes: &[Node], fm: bool) -> Result<Value> {
    let ok = nodes
        .iter()
        .all(|n| matches!(n, Node::Digit { .. } | Node::Point | Node::Eeee));
    if fm || !ok {
        return Err(syntax("\"EEEE\" is incompatible with other formats"));
    }
    let point = nodes.iter().position(|n| matches!(n, Node::Point));
    let post = point.map_or(0, |p| {
        nodes[p..]
            .iter()
            .filter(|n| matches!(n, Node::Digit { .. }))
            .count()
    });
    let (negative, mantissa, exp) = match v {
        Value::Float(f) if !f.is_finite() => {
            let width = post + usize::from(post > 0) + 6;
            return Ok(Value::Text(" ".to_string() + &"#".repeat(width - 1)));
        }
        // An integer as a float8, as PostgreSQL's int4_to_char (exact for any int4).
        Value::Float(_) | Value::Int(_) => {
            let f = match v {
                Value::Int(i) => *i as f64,
                _ => numeric_f64(v),
            };
            let s = format!("{:.*e}", post, f.abs());
            let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
            (f < 0.0, m.to_string(), e.parse::<i64>().unwrap_or(0))
        }
        Value::Numeric(d) => decimal_sci(*d, post),
        _ => return Ok(Value::Null),
    };
    let sign = if negative { '-' } else { ' ' };
    let esign = if exp < 0 { '-' } else { '+' };
    Ok(Value::Text(format!("{sign}{mantissa}e{esign}{:02}", exp.abs())))
}

fn numeric_f64(v: &Value) -> f64 {
    match v {
        Value::Float(f) => *f,
        _ => 0.0,
    }
}

/// A numeric in scientific notation with `post` digits after the point, rounded half away from
/// zero after the exponent is chosen, as PostgreSQL's numeric_out_sci (so 9.96 with one digit
/// is `10.0e+00`): whether it is negative, the mantissa and the exponent.
fn decimal_sci(d: Decimal, post: usize) -> (bool, String, i64) {
    let negative = d.is_sign_negative() && !d.is_zero();
    let s = d.abs().normalize().to_string();
    let (int, frac) = s.split_once('.').unwrap_or((&s, ""));
    let (mut digits, exp): (Vec<u8>, i64) = if int.trim_start_matches('0').is_empty() {
        let z = frac.len() - frac.trim_start_matches('0').len();
        if z == frac.len() {
            (vec![0], 0)
        } else {
            (frac[z..].bytes().map(|b| b - b'0').collect(), -(z as i64) - 1)
        }
    } else {
        let int = int.trim_start_matches('0');
        let ds = int.bytes().chain(frac.bytes()).map(|b| b - b'0').collect();
        (ds, int.len() as i64 - 1)
    };
    // Round to 1 + post digits.
    let keep = post + 1;
    if digits.len() > keep {
        let up = digits[keep] >= 5;
        digits.truncate(keep);
        if up {
            let mut k = keep;
            loop {
                if k == 0 {
                    digits.insert(0, 1);
                    break;
                }
                k -= 1;
                if digits[k] == 9 {
                    digits[k] = 0;
                } else {
                    digits[k] += 1;
                    break;
                }
            }
        }
    }
    if digits.len() < keep {
        digits.resize(keep, 0);
    }
    let whole = digits.len() - post;
    let mut m: String = digits[..whole].iter().map(|d| char::from(b'0' + d)).collect();
    if post > 0 {
        m.push('.');
        m.extend(digits[whole..].iter().map(|d| char::from(b'0' + d)));
    }
    (negative, m, exp)
}
