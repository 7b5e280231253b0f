//! `numeric`: exact decimals on rust_decimal (a 96-bit mantissa, at most 28 digits after the
//! point) with PostgreSQL's text input, display scales, typmod rounding, division scale and an
//! order-preserving key encoding. A value the representation cannot hold exactly is 22003,
//! never silently rounded (PostgreSQL's numeric reaches 131072 digits; Augur's about 28).

use rust_decimal::{Decimal, MathematicalOps, RoundingStrategy};

use crate::error::{Error, Result, SqlState};

/// The most digits after the point Augur's numeric holds (rust_decimal's limit).
pub const MAX_SCALE: u32 = 28;

/// The largest precision `numeric(p, s)` accepts, as PostgreSQL.
pub const MAX_PRECISION: u32 = 1000;

/// 22003 for a value beyond the representation (PostgreSQL's words, then Augur's limit).
pub fn overflow() -> Error {
    Error::out_of_range(
        "value overflows numeric format (Augur's numeric holds 28 to 29 significant digits, at most 28 after the point)",
    )
}

fn div_zero() -> Error {
    Error::new(SqlState::DIVISION_BY_ZERO, "division by zero")
}

/// `d` with a positive zero (PostgreSQL's numeric has no -0; rust_decimal keeps a sign on zero).
pub fn canon(mut d: Decimal) -> Decimal {
    if d.is_zero() {
        d.set_sign_positive(true);
    }
    d
}

/// PostgreSQL's numeric text input: blanks around, an optional sign, digits with an optional
/// point, an optional exponent (`1.5e-3`). The display scale is the digits written after the
/// point less the exponent (`1.50` keeps two, `1.5e1` none). `Ok(None)`: not a number (the
/// caller's 22P02); 22003 beyond the representation; 0A000 for NaN and infinities, which
/// Augur's numeric does not hold.
pub fn parse(s: &str) -> Result<Option<Decimal>> {
    let t = s.trim_matches(|c: char| c.is_ascii_whitespace());
    let lower = t.to_ascii_lowercase();
    if matches!(lower.trim_start_matches(['+', '-']), "nan" | "infinity" | "inf") {
        return Err(Error::new(
            SqlState::FEATURE_NOT_SUPPORTED,
            format!("numeric value \"{t}\" is not supported by Augur (its numeric has no NaN or infinity)"),
        ));
    }
    let b = t.as_bytes();
    let mut i = 0;
    let neg = match b.first() {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    // Significant digits (leading zeros dropped) and how many were written after the point.
    let mut digits: Vec<u8> = Vec::new();
    let mut frac: i64 = 0;
    let (mut seen_digit, mut seen_point) = (false, false);
    while i < b.len() {
        match b[i] {
            c @ b'0'..=b'9' => {
                seen_digit = true;
                if seen_point {
                    frac += 1;
                }
                if !(digits.is_empty() && c == b'0') {
                    digits.push(c - b'0');
                }
            }
            b'.' if !seen_point => seen_point = true,
            _ => break,
        }
        i += 1;
    }
    if !seen_digit {
        return Ok(None);
    }
    let mut exp: i64 = 0;
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        let eneg = match b.get(i) {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            _ => false,
        };
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            exp = exp.saturating_mul(10).saturating_add(i64::from(b[i] - b'0'));
            i += 1;
        }
        if i == start {
            return Ok(None);
        }
        if eneg {
            exp = -exp;
        }
    }
    if i != b.len() {
        return Ok(None);
    }
    // No value Augur holds has an exponent this large (PostgreSQL: 22003 too, past its range).
    if exp.abs() > i64::from(MAX_PRECISION) {
        return Err(overflow());
    }
    // value = digits x 10^(exp - frac), shown with max(0, frac - exp) digits after the point.
    let scale = (frac - exp).max(0);
    if scale > i64::from(MAX_SCALE) {
        return Err(overflow());
    }
    let mut m: i128 = 0;
    for &d in &digits {
        m = m
            .checked_mul(10)
            .and_then(|m| m.checked_add(i128::from(d)))
            .ok_or_else(overflow)?;
    }
    if m != 0 {
        for _ in 0..(exp - frac + scale) {
            m = m.checked_mul(10).ok_or_else(overflow)?;
        }
    }
    let d =
        Decimal::try_from_i128_with_scale(if neg { -m } else { m }, scale as u32).map_err(|_| overflow())?;
    Ok(Some(canon(d)))
}

/// The number of digits before the point (0 for a value below 1 in magnitude).
fn integer_digits(d: Decimal) -> u32 {
    let m = d.mantissa().unsigned_abs();
    let total = if m == 0 { 0 } else { m.ilog10() + 1 };
    total.saturating_sub(d.scale())
}

/// `d` as a `numeric(precision, scale)` column stores it: rounded half away from zero to
/// `scale` digits after the point (and shown with exactly that many), 22003 when more than
/// `precision - scale` digits remain before it.
pub fn apply_typmod(d: Decimal, precision: u32, scale: u32) -> Result<Decimal> {
    let mut r = d.round_dp_with_strategy(scale, RoundingStrategy::MidpointAwayFromZero);
    r.rescale(scale);
    if r.scale() != scale {
        return Err(overflow());
    }
    if integer_digits(r) > precision.saturating_sub(scale) {
        return Err(Error::out_of_range(format!(
            "numeric field overflow: a field with precision {precision}, scale {scale} must round to an absolute value less than 10^{}",
            precision.saturating_sub(scale)
        )));
    }
    Ok(canon(r))
}

/// Checks a `numeric(precision, scale)` type modifier (PostgreSQL's bounds, and Augur's scale
/// limit).
pub fn check_typmod(precision: i64, scale: i64) -> Result<(u16, u16)> {
    if !(1..=i64::from(MAX_PRECISION)).contains(&precision) {
        return Err(Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("NUMERIC precision {precision} must be between 1 and {MAX_PRECISION}"),
        ));
    }
    // PostgreSQL 15 also takes a negative scale or one above the precision.
    if !(0..=precision).contains(&scale) {
        return Err(Error::unsupported(format!(
            "NUMERIC scale {scale} outside 0 to the precision {precision} is not supported by Augur"
        )));
    }
    if scale > i64::from(MAX_SCALE) {
        return Err(Error::unsupported(format!(
            "NUMERIC scale {scale} is beyond Augur's limit of {MAX_SCALE} digits after the point"
        )));
    }
    Ok((precision as u16, scale as u16))
}

/// The nearest double (through the decimal text, which Rust's parser rounds correctly).
pub fn to_f64(d: Decimal) -> f64 {
    canon(d).to_string().parse().unwrap_or(f64::NAN)
}

/// float8 to numeric as PostgreSQL converts it: the double rounded to 15 significant digits,
/// without trailing zeros (`0.1::float8::numeric` is 0.1).
pub fn from_f64(f: f64) -> Result<Decimal> {
    if !f.is_finite() {
        return Err(Error::new(
            SqlState::FEATURE_NOT_SUPPORTED,
            format!(
                "cannot convert {} to numeric (Augur's numeric has no NaN or infinity)",
                super::format_float(f)
            ),
        ));
    }
    let s = format!("{f:.14e}");
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let mant = mant.trim_end_matches('0').trim_end_matches('.');
    let d = parse(&format!("{mant}e{exp}"))?.ok_or_else(|| Error::internal(format!("float text {s}")))?;
    Ok(canon(d.normalize()))
}

/// numeric to an integer as PostgreSQL casts it: rounded half away from zero; None beyond
/// int8.
pub fn to_i64(d: Decimal) -> Option<i64> {
    let r = d.round_dp_with_strategy(0, RoundingStrategy::MidpointAwayFromZero);
    let m = r.mantissa() / 10i128.checked_pow(r.scale())?;
    i64::try_from(m).ok()
}

/// `r` shown with exactly `scale` digits after the point, or 22003 when the representation
/// cannot (the exact result needs more digits than it holds).
fn exact(r: Option<Decimal>, scale: u32) -> Result<Decimal> {
    let mut r = r.ok_or_else(overflow)?;
    if r.scale() != scale {
        r.rescale(scale);
    }
    if r.scale() != scale {
        return Err(overflow());
    }
    Ok(canon(r))
}

/// `a + b`, shown with the larger of their scales.
pub fn add(a: Decimal, b: Decimal) -> Result<Decimal> {
    exact(a.checked_add(b), a.scale().max(b.scale()))
}

/// `a - b`, shown with the larger of their scales.
pub fn sub(a: Decimal, b: Decimal) -> Result<Decimal> {
    exact(a.checked_sub(b), a.scale().max(b.scale()))
}

/// `a * b`, shown with the sum of their scales (exact, as PostgreSQL).
pub fn mul(a: Decimal, b: Decimal) -> Result<Decimal> {
    exact(a.checked_mul(b), a.scale() + b.scale())
}

/// `a % b`: the remainder of the truncated quotient (the sign of `a`), shown with the larger
/// of their scales.
pub fn rem(a: Decimal, b: Decimal) -> Result<Decimal> {
    if b.is_zero() {
        return Err(div_zero());
    }
    exact(a.checked_rem(b), a.scale().max(b.scale()))
}

/// `a / b` rounded half away from zero at PostgreSQL's division scale (at least 16
/// significant digits, at least either operand's scale), capped at Augur's 28 digits after
/// the point.
pub fn div(a: Decimal, b: Decimal) -> Result<Decimal> {
    if b.is_zero() {
        return Err(div_zero());
    }
    let rscale = div_scale(a, b).min(MAX_SCALE);
    let q = a.checked_div(b).ok_or_else(overflow)?;
    exact(
        Some(q.round_dp_with_strategy(rscale, RoundingStrategy::MidpointAwayFromZero)),
        rscale,
    )
}

/// The weight (power of 10000) and value of the first nonzero base-10000 digit of `d` as
/// PostgreSQL stores it; (0, 0) for zero.
fn first_group(d: Decimal) -> (i32, u32) {
    if d.is_zero() {
        return (0, 0);
    }
    let digits = d.mantissa().unsigned_abs().to_string();
    // The leading digit's power of ten, then its base-10000 group.
    let e10 = digits.len() as i32 - 1 - d.scale() as i32;
    let w = e10.div_euclid(4);
    let lead = (e10 - 4 * w + 1) as usize;
    let first = digits
        .bytes()
        .chain(std::iter::repeat(b'0'))
        .take(lead)
        .fold(0u32, |acc, c| acc * 10 + u32::from(c - b'0'));
    (w, first)
}

/// PostgreSQL's `select_div_scale` (numeric.c).
fn div_scale(a: Decimal, b: Decimal) -> u32 {
    const MIN_SIG_DIGITS: i32 = 16;
    let (w1, f1) = first_group(a);
    let (w2, f2) = first_group(b);
    let mut qweight = w1 - w2;
    if f1 <= f2 {
        qweight -= 1;
    }
    (MIN_SIG_DIGITS - qweight * 4)
        .max(a.scale() as i32)
        .max(b.scale() as i32)
        .clamp(0, MAX_PRECISION as i32) as u32
}

/// `round(d, n)`: half away from zero at `n` digits after the point (before it when `n` is
/// negative), shown with `max(n, 0)` digits after the point.
pub fn round(d: Decimal, n: i64) -> Result<Decimal> {
    if n >= 0 {
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        if n > MAX_SCALE {
            return Err(overflow());
        }
        return exact(
            Some(d.round_dp_with_strategy(n, RoundingStrategy::MidpointAwayFromZero)),
            n,
        );
    }
    // Rounding to a multiple of 10^k in integers: |mantissa| < 2^96 < 10^29.
    let k = n.unsigned_abs();
    let shift = u64::from(d.scale()) + k;
    if shift > 38 {
        return Ok(Decimal::ZERO);
    }
    let div = 10i128.pow(shift as u32);
    let m = d.mantissa();
    let q = (m.unsigned_abs() + div as u128 / 2) / div as u128;
    let q = i128::try_from(q).map_err(|_| overflow())?;
    let v = q.checked_mul(10i128.pow(k as u32)).ok_or_else(overflow)?;
    let v = if m < 0 { -v } else { v };
    Decimal::try_from_i128_with_scale(v, 0)
        .map(canon)
        .map_err(|_| overflow())
}

/// `floor(d)` / `ceil(d)`: an integer, shown without digits after the point.
pub fn floor(d: Decimal) -> Decimal {
    let mut r = d.floor();
    r.rescale(0);
    canon(r)
}

pub fn ceil(d: Decimal) -> Decimal {
    let mut r = d.ceil();
    r.rescale(0);
    canon(r)
}

/// PostgreSQL's NUMERIC_MIN_SIG_DIGITS: sqrt, exp, ln, log and power results carry at least
/// this many significant digits (numeric.c chooses each result's scale from it).
const MIN_SIG_DIGITS: i32 = 16;

fn log_error(msg: &str) -> Error {
    Error::new(SqlState("2201E"), msg)
}

fn power_error(msg: &str) -> Error {
    Error::new(SqlState("2201F"), msg)
}

/// `r` rounded half away from zero to `rscale` digits after the point (clamped as
/// PostgreSQL's display scales are, 0 to 1000), or 22003 when Augur's numeric cannot show
/// that many.
fn at_scale(r: Option<Decimal>, rscale: i32) -> Result<Decimal> {
    let rscale = rscale.clamp(0, MAX_PRECISION as i32) as u32;
    if rscale > MAX_SCALE {
        return Err(overflow());
    }
    let r = r.ok_or_else(overflow)?;
    exact(
        Some(r.round_dp_with_strategy(rscale, RoundingStrategy::MidpointAwayFromZero)),
        rscale,
    )
}

/// The base-10000 digits of `|d|` as PostgreSQL stores them (no leading or trailing zero
/// digits) and the weight of the first; (0, []) for zero.
fn groups(d: Decimal) -> (i32, Vec<u32>) {
    let m = d.mantissa().unsigned_abs();
    if m == 0 {
        return (0, Vec::new());
    }
    let digits = m.to_string();
    let scale = d.scale() as usize;
    // Pad the integer part on the left and the fraction on the right to whole groups.
    let (int, frac) = if digits.len() > scale {
        digits.split_at(digits.len() - scale)
    } else {
        ("", digits.as_str())
    };
    let frac = format!("{}{frac}", "0".repeat(scale - frac.len()));
    let int = format!("{}{int}", "0".repeat((4 - int.len() % 4) % 4));
    let frac = format!("{frac}{}", "0".repeat((4 - frac.len() % 4) % 4));
    let all = format!("{int}{frac}");
    let mut g: Vec<u32> = all
        .as_bytes()
        .chunks(4)
        .map(|c| c.iter().fold(0, |a, &b| a * 10 + u32::from(b - b'0')))
        .collect();
    let mut weight = (int.len() / 4) as i32 - 1;
    let lead = g.iter().take_while(|&&x| x == 0).count();
    g.drain(..lead);
    weight -= lead as i32;
    while g.last() == Some(&0) {
        g.pop();
    }
    (weight, g)
}

/// PostgreSQL's `estimate_ln_dweight`: the decimal weight of `ln(d)`, for d > 0.
fn ln_dweight(d: Decimal) -> i32 {
    let near_one = Decimal::new(9, 1) <= d && d <= Decimal::new(11, 1);
    if near_one {
        // ln(1 + x) ~= x: the weight of x's leading digit.
        let x = d - Decimal::ONE;
        if x.is_zero() {
            return 0;
        }
        let (w, g) = groups(x);
        return w * 4 + g[0].ilog10() as i32;
    }
    let (w, g) = groups(d);
    if g.is_empty() {
        return 0;
    }
    let (mut digits, mut dweight) = (f64::from(g[0]), w * 4);
    if g.len() > 1 {
        digits = digits * 10000.0 + f64::from(g[1]);
        dweight -= 4;
    }
    let ln = digits.ln() + f64::from(dweight) * std::f64::consts::LN_10;
    ln.abs().log10() as i32
}

/// `ln(d)` to Augur's working precision; 2201E for zero or a negative `d`, as PostgreSQL.
fn ln_raw(d: Decimal) -> Result<Decimal> {
    if d.is_zero() {
        return Err(log_error("cannot take logarithm of zero"));
    }
    if d.is_sign_negative() {
        return Err(log_error("cannot take logarithm of a negative number"));
    }
    d.checked_ln().ok_or_else(overflow)
}

/// `sqrt(d)` at PostgreSQL's scale: 16 significant digits, at least `d`'s scale. 2201F for a
/// negative `d`.
pub fn sqrt(d: Decimal) -> Result<Decimal> {
    if d.is_sign_negative() && !d.is_zero() {
        return Err(power_error("cannot take square root of a negative number"));
    }
    let (w, _) = groups(d);
    let sweight = (w + 1) * 4 / 2 - 1;
    let rscale = (MIN_SIG_DIGITS - sweight).max(d.scale() as i32);
    if d.is_zero() {
        return at_scale(Some(Decimal::ZERO), rscale);
    }
    // Newton's iteration from the double's root converges to the working precision in a
    // few steps (bounded, so an oscillation in the last digit cannot loop).
    let mut r = Decimal::try_from(to_f64(d).sqrt()).map_err(|_| overflow())?;
    for _ in 0..8 {
        let next = d
            .checked_div(r)
            .and_then(|q| q.checked_add(r))
            .and_then(|s| s.checked_div(Decimal::TWO))
            .ok_or_else(overflow)?;
        if next == r {
            break;
        }
        r = next;
    }
    at_scale(Some(r), rscale)
}

/// `exp(d)` at PostgreSQL's scale: 16 significant digits, at least `d`'s scale.
pub fn exp(d: Decimal) -> Result<Decimal> {
    let weight = (to_f64(d) * std::f64::consts::LOG10_E).clamp(-2000.0, 2000.0);
    let rscale = (MIN_SIG_DIGITS - weight as i32).max(d.scale() as i32);
    at_scale(d.checked_exp(), rscale)
}

/// `ln(d)` at PostgreSQL's scale; 2201E for zero or a negative `d`.
pub fn ln(d: Decimal) -> Result<Decimal> {
    let r = ln_raw(d)?;
    at_scale(Some(r), (MIN_SIG_DIGITS - ln_dweight(d)).max(d.scale() as i32))
}

/// `log(base, d)` (and `log(d)`, base 10) at PostgreSQL's scale; 2201E for a zero or
/// negative argument, 22012 for base 1.
pub fn log(base: Decimal, d: Decimal) -> Result<Decimal> {
    let lb = ln_raw(base)?;
    let ld = ln_raw(d)?;
    if lb.is_zero() {
        return Err(div_zero());
    }
    let dweight = ln_dweight(d) - ln_dweight(base);
    let rscale = (MIN_SIG_DIGITS - dweight)
        .max(base.scale() as i32)
        .max(d.scale() as i32);
    at_scale(ld.checked_div(lb), rscale)
}

/// `power(a, b)` as PostgreSQL 15's numeric_power: an integral exponent multiplies exactly
/// (then rounds to 16 digits after the point, at least a's scale), any other goes through
/// exp(b * ln(a)) at 16 significant digits and at least either argument's scale. 2201F for zero to a negative power and a
/// negative base to a fractional one.
pub fn power(a: Decimal, b: Decimal) -> Result<Decimal> {
    if a.is_zero() && b.is_sign_negative() && !b.is_zero() {
        return Err(power_error("zero raised to a negative power is undefined"));
    }
    let integral = b.fract().is_zero();
    if a.is_sign_negative() && !a.is_zero() && !integral {
        return Err(power_error(
            "a negative number raised to a non-integer power yields a complex result",
        ));
    }
    if let Some(n) = to_i64(b).filter(|n| integral && i32::try_from(*n).is_ok()) {
        // PostgreSQL 15's power_var_int: 16 digits after the point, at least a's scale (the
        // exponent's scale does not count), the product exact before rounding.
        let rscale = MIN_SIG_DIGITS.max(a.scale() as i32);
        // The result's decimal weight from the leading digits of a (up to 16 of them), for
        // its early overflow and underflow tests.
        let (w, g) = groups(a);
        if let Some((first, rest)) = g.split_first() {
            let (mut f, mut p) = (f64::from(*first), w * 4);
            for x in rest.iter().take(3) {
                f = f * 10000.0 + f64::from(*x);
                p -= 4;
            }
            let weight = n as f64 * (f.log10() + f64::from(p));
            if weight > 3.0 * 32767.0 * 4.0 {
                return Err(overflow());
            }
            if weight + 1.0 < -f64::from(rscale) {
                return at_scale(Some(Decimal::ZERO), rscale);
            }
        }
        let r = if n >= 0 {
            a.checked_powu(n as u64)
        } else {
            // |a^n| beyond the representation: 1 / a^n is below what rscale shows.
            match a.checked_powu(n.unsigned_abs()) {
                Some(p) => Decimal::ONE.checked_div(p),
                None => Some(Decimal::ZERO),
            }
        };
        return at_scale(r, rscale);
    }
    if a.is_zero() {
        return at_scale(Some(Decimal::ZERO), MIN_SIG_DIGITS);
    }
    let l = ln_raw(a)?.checked_mul(b).ok_or_else(overflow)?;
    let weight = (to_f64(l) * std::f64::consts::LOG10_E).clamp(-6020.0, 6020.0);
    let rscale = (MIN_SIG_DIGITS - weight as i32)
        .max(a.scale() as i32)
        .max(b.scale() as i32);
    at_scale(l.checked_exp(), rscale)
}

/// Order-preserving bytes of a numeric key value: a class byte (negative 0x01, zero 0x02,
/// positive 0x03), then for a nonzero value its decimal exponent `e` (the value is
/// `0.d1d2... x 10^e`, `d1` nonzero) as `e + 128` and its digits without trailing zeros, each
/// as `digit + 1`, ending with 0x00; a negative value's bytes after the class are complemented.
/// Values that compare equal (1.5 and 1.50) encode alike.
pub fn encode_key(d: Decimal, out: &mut Vec<u8>) {
    let d = canon(d.normalize());
    if d.is_zero() {
        out.push(0x02);
        return;
    }
    let neg = d.is_sign_negative();
    let digits = d.mantissa().unsigned_abs().to_string();
    // -27 (1e-28) ..= 29 (a 29-digit integer).
    let e = digits.len() as i32 - d.scale() as i32;
    let digits = digits.trim_end_matches('0');
    let mut body = Vec::with_capacity(digits.len() + 2);
    body.push((e + 128) as u8);
    body.extend(digits.bytes().map(|c| c - b'0' + 1));
    body.push(0);
    if neg {
        out.push(0x01);
        out.extend(body.iter().map(|b| !b));
    } else {
        out.push(0x03);
        out.extend(body);
    }
}

/// The inverse of [`encode_key`]: the value at the start of `b` and the bytes it took; None
/// unless the bytes are what `encode_key` writes for some value.
pub fn decode_key(b: &[u8]) -> Option<(Decimal, usize)> {
    let neg = match *b.first()? {
        0x02 => return Some((Decimal::ZERO, 1)),
        0x01 => true,
        0x03 => false,
        _ => return None,
    };
    let get = |i: usize| b.get(i).map(|&x| if neg { !x } else { x });
    let e = i32::from(get(1)?) - 128;
    let (mut m, mut n, mut i) = (0i128, 0i32, 2usize);
    let mut first = 0u8;
    loop {
        let c = get(i)?;
        i += 1;
        if c == 0 {
            break;
        }
        if !(1..=10).contains(&c) || n >= 29 {
            return None;
        }
        if n == 0 {
            first = c - 1;
        }
        m = m * 10 + i128::from(c - 1);
        n += 1;
    }
    // Canonical: some digits, the first and the last nonzero.
    if n == 0 || first == 0 || m % 10 == 0 {
        return None;
    }
    let scale = n - e;
    let m = if neg { -m } else { m };
    let d = if scale >= 0 {
        Decimal::try_from_i128_with_scale(m, u32::try_from(scale).ok()?).ok()?
    } else {
        let m = m.checked_mul(10i128.checked_pow(u32::try_from(-scale).ok()?)?)?;
        Decimal::try_from_i128_with_scale(m, 0).ok()?
    };
    Some((d, i))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Decimal {
        parse(s).unwrap().unwrap()
    }

    #[test]
    fn text_input_keeps_postgres_display_scales() {
        for (input, shown) in [
            ("1.50", "1.50"),
            ("  -0.0 ", "0.0"),
            ("+.5", "0.5"),
            ("1e3", "1000"),
            ("1.5e1", "15"),
            ("1.50e1", "15.0"),
            ("1.5E-3", "0.0015"),
            ("007", "7"),
            ("79228162514264337593543950335", "79228162514264337593543950335"),
        ] {
            assert_eq!(n(input).to_string(), shown, "{input}");
        }
        for bad in ["", "abc", "1.2.3", "1e", "--1", "1 2", "e5", "."] {
            assert!(parse(bad).unwrap().is_none(), "{bad:?}");
        }
        for big in [
            "79228162514264337593543950336",
            "1e40",
            "0.00000000000000000000000000001",
            "1e999999",
        ] {
            assert_eq!(
                parse(big).unwrap_err().sqlstate(),
                SqlState::NUMERIC_OUT_OF_RANGE,
                "{big}"
            );
        }
        assert_eq!(
            parse("NaN").unwrap_err().sqlstate(),
            SqlState::FEATURE_NOT_SUPPORTED
        );
    }

    #[test]
    fn arithmetic_scales_follow_postgres() {
        assert_eq!(add(n("1.5"), n("2.25")).unwrap().to_string(), "3.75");
        assert_eq!(sub(n("1.50"), n("1.5")).unwrap().to_string(), "0.00");
        assert_eq!(mul(n("1.5"), n("2.25")).unwrap().to_string(), "3.375");
        assert_eq!(mul(n("-0.5"), n("0")).unwrap().to_string(), "0.0");
        assert_eq!(div(n("1"), n("3")).unwrap().to_string(), "0.33333333333333333333");
        assert_eq!(
            div(n("12880"), n("160")).unwrap().to_string(),
            "80.5000000000000000"
        );
        assert_eq!(div(n("10"), n("4")).unwrap().to_string(), "2.5000000000000000");
        assert_eq!(div(n("2"), n("3")).unwrap().to_string(), "0.66666666666666666667");
        assert_eq!(rem(n("-7.5"), n("2")).unwrap().to_string(), "-1.5");
        assert_eq!(
            div(n("1"), n("0")).unwrap_err().sqlstate(),
            SqlState::DIVISION_BY_ZERO
        );
        let max = n("79228162514264337593543950335");
        assert_eq!(
            add(max, n("1")).unwrap_err().sqlstate(),
            SqlState::NUMERIC_OUT_OF_RANGE
        );
        // An exact result needing more digits than the representation is 22003, not rounded.
        assert_eq!(
            add(max, n("0.1")).unwrap_err().sqlstate(),
            SqlState::NUMERIC_OUT_OF_RANGE
        );
    }

    #[test]
    fn rounding_and_typmods() {
        assert_eq!(round(n("2.5"), 0).unwrap().to_string(), "3");
        assert_eq!(round(n("-2.5"), 0).unwrap().to_string(), "-3");
        assert_eq!(round(n("2.567"), 2).unwrap().to_string(), "2.57");
        assert_eq!(round(n("2.5"), 3).unwrap().to_string(), "2.500");
        assert_eq!(round(n("1250"), -2).unwrap().to_string(), "1300");
        assert_eq!(round(n("-1249.9"), -2).unwrap().to_string(), "-1200");
        assert_eq!(round(n("12.5"), -40).unwrap().to_string(), "0");
        assert_eq!(apply_typmod(n("1.005"), 5, 2).unwrap().to_string(), "1.01");
        assert_eq!(apply_typmod(n("1.5"), 5, 2).unwrap().to_string(), "1.50");
        assert_eq!(apply_typmod(n("-999.994"), 5, 2).unwrap().to_string(), "-999.99");
        let e = apply_typmod(n("999.995"), 5, 2).unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::NUMERIC_OUT_OF_RANGE);
        assert_eq!(apply_typmod(n("0.5"), 2, 2).unwrap().to_string(), "0.50");
        assert!(check_typmod(0, 0).is_err());
        assert!(check_typmod(5, 6).is_err());
        assert_eq!(check_typmod(10, 2).unwrap(), (10, 2));
        assert_eq!(floor(n("-1.5")).to_string(), "-2");
        assert_eq!(ceil(n("1.2")).to_string(), "2");
    }

    #[test]
    fn conversions_follow_postgres() {
        assert_eq!(from_f64(0.1).unwrap().to_string(), "0.1");
        assert_eq!(from_f64(2.5).unwrap().to_string(), "2.5");
        assert_eq!(from_f64(100.0).unwrap().to_string(), "100");
        assert_eq!(from_f64(1.0 / 3.0).unwrap().to_string(), "0.333333333333333");
        assert_eq!(from_f64(1e20).unwrap().to_string(), "100000000000000000000");
        assert_eq!(from_f64(-0.0).unwrap().to_string(), "0");
        assert!(from_f64(f64::NAN).is_err());
        assert_eq!(to_f64(n("0.1")), 0.1);
        assert_eq!(to_i64(n("2.5")), Some(3));
        assert_eq!(to_i64(n("-2.5")), Some(-3));
        assert_eq!(to_i64(n("2.49")), Some(2));
        assert_eq!(to_i64(n("1e20")), None);
    }

    #[test]
    fn key_encoding_orders_by_value_and_round_trips() {
        let vals: Vec<Decimal> = [
            "-79228162514264337593543950335",
            "-1000",
            "-999.5",
            "-1.5",
            "-1.05",
            "-1",
            "-0.0000000000000000000000000001",
            "0",
            "0.0000000000000000000000000001",
            "0.001",
            "0.5",
            "1",
            "1.05",
            "1.5",
            "9",
            "10",
            "100",
            "101",
            "79228162514264337593543950335",
        ]
        .iter()
        .map(|s| n(s))
        .collect();
        let enc: Vec<Vec<u8>> = vals
            .iter()
            .map(|d| {
                let mut b = Vec::new();
                encode_key(*d, &mut b);
                b
            })
            .collect();
        for i in 0..vals.len() {
            for j in 0..vals.len() {
                assert_eq!(
                    enc[i].cmp(&enc[j]),
                    vals[i].cmp(&vals[j]),
                    "{} vs {}",
                    vals[i],
                    vals[j]
                );
            }
            let (d, used) = decode_key(&enc[i]).unwrap();
            assert_eq!((d, used), (vals[i], enc[i].len()));
            let mut again = Vec::new();
            encode_key(d, &mut again);
            assert_eq!(again, enc[i]);
        }
        let (mut a, mut b) = (Vec::new(), Vec::new());
        encode_key(n("1.5"), &mut a);
        encode_key(n("1.500"), &mut b);
        assert_eq!(a, b);
        // Not canonical: a trailing zero digit, a leading zero digit, no digits.
        assert!(decode_key(&[0x03, 129, 2, 1, 0]).is_none());
        assert!(decode_key(&[0x03, 129, 1, 2, 0]).is_none());
        assert!(decode_key(&[0x03, 129, 0]).is_none());
        assert!(decode_key(&[0x03, 129, 2]).is_none());
    }
}
