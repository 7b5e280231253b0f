//! ALEX against `BTreeMap`: the input bytes are decoded into an optional bulk load and a
//! sequence of operations; every answer must equal the model's, and the structure's invariants
//! must hold (checked every 256 operations and at the end).
//!
//! Byte format (every read past the end yields zeros, so any input is valid):
//! - byte 0: flags (bit 0: bulk load first);
//! - if bulk loading: a count byte `n` (`n * 8` keys), a key-family byte, a start key and a step;
//! - then operations, each an opcode byte followed by its operands; keys are read by
//!   [`Reader::key`], which mixes adversarial choices (extremes, clusters 2^59 apart, keys near
//!   ones already used, present keys, raw 64-bit values).
//!
//! Shared with `tests/fuzz_regressions.rs` (included there by path), so it must depend on
//! `augur` and `std` only.

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::ops::Bound;

use augur::index::alex::{Alex, AlexError};

/// At most this many operations per input (keeps each execution short).
const MAX_OPS: usize = 2000;
/// At most this many keys in the index (bulk load plus sequential bursts).
const MAX_KEYS: usize = 8_000;
/// At most this many whole-index operations (full iteration, rebuild) per input.
const MAX_FULL: usize = 4;
/// Range answers are compared up to this many entries (both ends).
const RANGE_CAP: usize = 512;

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    last: i64,
}

impl<'a> Reader<'a> {
    fn done(&self) -> bool {
        self.pos >= self.data.len()
    }

    fn u8(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    fn u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        for x in &mut b {
            *x = self.u8();
        }
        u64::from_le_bytes(b)
    }

    /// One key, chosen by a selector byte among adversarial families.
    fn key(&mut self, m: &BTreeMap<i64, u64>) -> i64 {
        const EXTREMES: [i64; 8] = [i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX - 1, i64::MAX, 1 << 53];
        let sel = self.u8();
        let k = match sel % 10 {
            0 => EXTREMES[(sel / 10) as usize % EXTREMES.len()],
            1 => i64::MIN + self.u8() as i64,
            2 => i64::MAX - self.u8() as i64,
            3 => self.u8() as i8 as i64,
            4 => self.u16() as i64,
            // Dense runs far apart (16 clusters 2^59 apart, 4096 wide).
            5 => i64::MIN / 2 + (self.u8() as i64 % 16) * (1i64 << 59) + (self.u16() as i64 % 4096),
            // Near the previous key.
            6 => self.last.wrapping_add(self.u8() as i8 as i64),
            // A present key (or its neighbour), so removes and updates hit.
            7 => {
                let f = self.u16();
                present(m, f).map_or(self.last, |k| k.wrapping_add((sel / 10) as i64 % 3 - 1))
            }
            // Powers of two and their neighbours (model slopes at the extremes).
            8 => {
                let b = self.u8();
                let p = 1i64.wrapping_shl((b % 64) as u32);
                let p = if b & 64 != 0 { p.wrapping_neg() } else { p };
                p.wrapping_add((b >> 7) as i64)
            }
            _ => self.u64() as i64,
        };
        self.last = k;
        k
    }
}

/// The first present key at or after the fraction `f / 65536` of the way from the smallest key to
/// the largest (O(log n), unlike `nth`).
fn present(m: &BTreeMap<i64, u64>, f: u16) -> Option<i64> {
    let (&lo, &hi) = (m.keys().next()?, m.keys().next_back()?);
    let span = (hi as i128 - lo as i128) * f as i128 / 65536;
    let x = (lo as i128 + span) as i64;
    m.range(x..).next().map(|(k, _)| *k)
}

fn bounds(a: i64, b: i64, mode: u8) -> (Bound<i64>, Bound<i64>) {
    let s = match mode % 3 {
        0 => Bound::Included(a),
        1 => Bound::Excluded(a),
        _ => Bound::Unbounded,
    };
    let e = match (mode / 3) % 3 {
        0 => Bound::Included(b),
        1 => Bound::Excluded(b),
        _ => Bound::Unbounded,
    };
    (s, e)
}

/// `BTreeMap::range` panics on inverted or empty-excluded ranges; ALEX yields nothing.
fn model_range(m: &BTreeMap<i64, u64>, s: Bound<i64>, e: Bound<i64>) -> Vec<(i64, u64)> {
    let lo = match s {
        Bound::Included(a) => Some((a, false)),
        Bound::Excluded(a) => Some((a, true)),
        Bound::Unbounded => None,
    };
    let hi = match e {
        Bound::Included(b) => Some((b, false)),
        Bound::Excluded(b) => Some((b, true)),
        Bound::Unbounded => None,
    };
    if let (Some((a, ax)), Some((b, bx))) = (lo, hi) {
        if a > b || (a == b && (ax || bx)) {
            return Vec::new();
        }
    }
    m.range((s, e)).map(|(k, v)| (*k, *v)).collect()
}

fn check(t: &Alex<i64>, ctx: &str) {
    if let Err(e) = t.check_invariants() {
        panic!("ALEX invariant broken ({ctx}): {e}");
    }
}

/// Runs one input; panics (a finding) on any difference from the model or broken invariant.
pub fn run(data: &[u8]) {
    let mut r = Reader {
        data,
        pos: 0,
        last: 0,
    };
    let mut m: BTreeMap<i64, u64> = BTreeMap::new();
    let flags = r.u8();
    let mut t: Alex<i64> = if flags & 1 != 0 {
        let n = r.u8() as usize * 8;
        let fam = r.u8();
        let start = r.key(&m);
        let step = match fam % 4 {
            0 => 1,
            1 => r.u8() as i64 + 1,
            2 => (r.u16() as i64 + 1) << (r.u8() % 40),
            _ => 0, // pseudo-random, below
        };
        let mut x = start;
        let mut seed = r.u64() | 1;
        for _ in 0..n {
            m.insert(x, x as u64 ^ 0x5555);
            x = if step == 0 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as i64
            } else {
                match x.checked_add(step) {
                    Some(v) => v,
                    None => break,
                }
            };
        }
        let pairs: Vec<(i64, u64)> = m.iter().map(|(k, v)| (*k, *v)).collect();
        Alex::bulk_load(&pairs).expect("bulk load of sorted distinct keys")
    } else {
        Alex::new()
    };
    check(&t, "after bulk load");
    let mut payload: u64 = 1;
    let mut full = 0usize;
    for i in 0..MAX_OPS {
        if r.done() {
            break;
        }
        payload = payload.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(i as u64);
        let op = r.u8();
        match op % 12 {
            0 | 1 => {
                let k = r.key(&m);
                let exp = match m.entry(k) {
                    Entry::Occupied(_) => Err(AlexError::DuplicateKey),
                    Entry::Vacant(e) => {
                        e.insert(payload);
                        Ok(())
                    }
                };
                assert_eq!(t.insert(k, payload), exp, "insert {k}");
            }
            2 => {
                let k = r.key(&m);
                assert_eq!(t.upsert(k, payload), m.insert(k, payload), "upsert {k}");
            }
            3 => {
                let k = r.key(&m);
                let exp = m.get_mut(&k).map(|x| std::mem::replace(x, payload));
                assert_eq!(t.update(k, payload), exp, "update {k}");
            }
            4 => {
                let k = r.key(&m);
                assert_eq!(t.remove(k), m.remove(&k), "remove {k}");
                assert_eq!(t.get(k), None, "get after remove {k}");
            }
            5 => {
                let k = r.key(&m);
                assert_eq!(t.get(k), m.get(&k).copied(), "get {k}");
            }
            6 => {
                let (a, b, mode) = (r.key(&m), r.key(&m), r.u8());
                let (s, e) = bounds(a, b, mode);
                let exp = model_range(&m, s, e);
                let front: Vec<(i64, u64)> = t.range((s, e)).take(RANGE_CAP).collect();
                let n = exp.len().min(RANGE_CAP);
                assert_eq!(front, exp[..n], "range {s:?}..{e:?}");
                let back: Vec<(i64, u64)> = t.range((s, e)).rev().take(RANGE_CAP).collect();
                let exp_back: Vec<(i64, u64)> = exp.iter().rev().take(RANGE_CAP).copied().collect();
                assert_eq!(back, exp_back, "reverse range {s:?}..{e:?}");
                if exp.len() <= RANGE_CAP {
                    // Alternating ends meet in the middle without losing or repeating anything.
                    let mut it = t.range((s, e));
                    let mut n = 0usize;
                    loop {
                        let x = if n & 1 == 0 { it.next() } else { it.next_back() };
                        if x.is_none() {
                            break;
                        }
                        n += 1;
                    }
                    assert_eq!(n, exp.len(), "alternating range {s:?}..{e:?}");
                }
            }
            7 => {
                let k = r.key(&m);
                let exp = m.range(k..).next().map(|(a, b)| (*a, *b));
                assert_eq!(t.lower_bound(k), exp, "lower_bound {k}");
                let exp = m
                    .range((Bound::Excluded(k), Bound::Unbounded))
                    .next()
                    .map(|(a, b)| (*a, *b));
                assert_eq!(t.upper_bound(k), exp, "upper_bound {k}");
            }
            8 => {
                // A sequential burst (forward or backward): the out-of-domain and expansion paths.
                let start = r.key(&m);
                let n = r.u8() as usize;
                let step = r.u8() as i8 as i64;
                let step = if step == 0 { 1 } else { step };
                let mut x = start;
                for j in 0..n {
                    if m.len() >= MAX_KEYS {
                        break;
                    }
                    let p = payload ^ j as u64;
                    let exp = match m.entry(x) {
                        Entry::Occupied(_) => Err(AlexError::DuplicateKey),
                        Entry::Vacant(e) => {
                            e.insert(p);
                            Ok(())
                        }
                    };
                    assert_eq!(t.insert(x, p), exp, "burst insert {x}");
                    x = match x.checked_add(step) {
                        Some(v) => v,
                        None => break,
                    };
                }
            }
            9 => {
                // Remove a run of present keys from the n-th on.
                if let Some(from) = present(&m, r.u16()) {
                    let n = r.u8() as usize;
                    let ks: Vec<i64> = m.range(from..).take(n).map(|(k, _)| *k).collect();
                    for k in ks {
                        assert_eq!(t.remove(k), m.remove(&k), "run remove {k}");
                    }
                }
            }
            10 if full < MAX_FULL => {
                full += 1;
                let all: Vec<(i64, u64)> = t.iter().collect();
                let exp: Vec<(i64, u64)> = m.iter().map(|(k, v)| (*k, *v)).collect();
                assert_eq!(all, exp, "iter");
                assert_eq!(t.min(), exp.first().copied(), "min");
                assert_eq!(t.max(), exp.last().copied(), "max");
            }
            11 if full < MAX_FULL => {
                full += 1;
                // Rebuild from the current contents (what recovery does from a checkpoint).
                let pairs: Vec<(i64, u64)> = t.iter().collect();
                t = Alex::bulk_load(&pairs).expect("bulk load of iter()");
                check(&t, "after rebuild");
            }
            _ => {
                let k = r.key(&m);
                assert_eq!(t.get(k), m.get(&k).copied(), "get {k}");
            }
        }
        assert_eq!(t.len(), m.len(), "len after op {i}");
        if m.len() > MAX_KEYS {
            break;
        }
        if i % 256 == 255 {
            check(&t, "periodic");
        }
    }
    check(&t, "at end");
    let all: Vec<(i64, u64)> = t.iter().collect();
    let exp: Vec<(i64, u64)> = m.iter().map(|(k, v)| (*k, *v)).collect();
    assert_eq!(all, exp, "final contents");
    let mut rev: Vec<(i64, u64)> = t.iter().rev().collect();
    rev.reverse();
    assert_eq!(rev, exp, "final contents reversed");
    assert_eq!(t.is_empty(), exp.is_empty());
}
