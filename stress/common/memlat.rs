//! The machine's memory latency by working-set size: the time of one load whose address comes
//! from the load before it (a pointer chase over a random cycle of cache lines), in memory
//! mapped with 2 MiB pages where the kernel gives them. A point read at 10M rows is a short
//! chain of such loads (the index's slot, then the row's block), so this is what separates two
//! machines' figures for the same code: the reports state it beside the CPU model.

use rand::seq::SliceRandom;
use rand::{rngs::StdRng, SeedableRng};

/// Cache line size assumed (x86-64 and most ARM cores).
const LINE: usize = 64;
const WORDS_PER_LINE: usize = LINE / 8;

/// The working-set sizes the reports show: within the last-level cache of most machines, well
/// past it, and as large as a 10M-row table's files.
pub const SIZES: [usize; 3] = [4 << 20, 64 << 20, 1 << 30];

/// Nanoseconds per dependent load over a random cycle through every cache line of `bytes`
/// (after one pass over the cycle to fault in and warm the pages); None if the memory cannot
/// be mapped.
pub fn dependent_load_ns(bytes: usize, loads: usize) -> Option<f64> {
    let lines = (bytes / LINE).max(2);
    let mut map = memmap2::MmapMut::map_anon(lines * LINE).ok()?;
    // SAFETY: advice on a mapping this function owns; it changes no contents.
    unsafe {
        libc::madvise(map.as_mut_ptr().cast(), map.len(), libc::MADV_HUGEPAGE);
    }
    let words: &mut [u64] = bytemuck_words(&mut map);
    link_cycle(words, lines);
    let chase = |n: usize, mut at: u64| {
        for _ in 0..n {
            at = words[at as usize * WORDS_PER_LINE];
        }
        at
    };
    let at = chase(lines, 0);
    let t = std::time::Instant::now();
    let end = chase(loads, at);
    let ns = t.elapsed().as_secs_f64() * 1e9 / loads as f64;
    std::hint::black_box(end);
    Some(ns)
}

/// Makes the first word of each of `lines` cache lines of `words` hold the number of the next
/// line in one random cycle through all of them.
fn link_cycle(words: &mut [u64], lines: usize) {
    let mut order: Vec<u32> = (0..lines as u32).collect();
    order.shuffle(&mut StdRng::seed_from_u64(0x6d656d6c6174));
    for w in order.windows(2) {
        words[w[0] as usize * WORDS_PER_LINE] = u64::from(w[1]);
    }
    if let (Some(&last), Some(&first)) = (order.last(), order.first()) {
        words[last as usize * WORDS_PER_LINE] = u64::from(first);
    }
}

/// The mapping as 64-bit words (anonymous mappings are page-aligned and zero-filled).
fn bytemuck_words(map: &mut memmap2::MmapMut) -> &mut [u64] {
    let len = map.len() / 8;
    // SAFETY: the mapping is page-aligned (so 8-byte aligned), `len` words fit in it, any bit
    // pattern is a valid u64, and the borrow of `map` keeps it mapped and unaliased.
    unsafe { std::slice::from_raw_parts_mut(map.as_mut_ptr().cast::<u64>(), len) }
}

/// [`dependent_load_ns`] at each of [`SIZES`], as (bytes, ns); sizes that could not be mapped
/// are left out.
pub fn profile() -> Vec<(usize, f64)> {
    SIZES
        .iter()
        .filter_map(|&b| dependent_load_ns(b, 2_000_000).map(|ns| (b, ns)))
        .collect()
}

/// "4 MiB 38 ns, 64 MiB 140 ns, 1 GiB 250 ns".
pub fn describe(p: &[(usize, f64)]) -> String {
    if p.is_empty() {
        return "not measured".into();
    }
    p.iter()
        .map(|&(b, ns)| {
            let size = if b >= 1 << 30 {
                format!("{} GiB", b >> 30)
            } else {
                format!("{} MiB", b >> 20)
            };
            format!("{size} {ns:.0} ns")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chase_is_one_cycle_through_every_line() {
        let lines = 1000;
        let mut words = vec![u64::MAX; lines * WORDS_PER_LINE];
        link_cycle(&mut words, lines);
        let mut seen = vec![false; lines];
        let mut at = 0usize;
        for _ in 0..lines {
            assert!(!seen[at], "line {at} visited twice before the cycle closed");
            seen[at] = true;
            at = words[at * WORDS_PER_LINE] as usize;
        }
        assert_eq!(at, 0, "the chase returns to its start after visiting every line");
        assert!(seen.iter().all(|&s| s));
        assert!(dependent_load_ns(64 << 10, 1024).is_some_and(|ns| ns > 0.0));
    }

    #[test]
    fn describe_names_each_size() {
        assert_eq!(
            describe(&[(4 << 20, 38.2), (1 << 30, 250.0)]),
            "4 MiB 38 ns, 1 GiB 250 ns"
        );
        assert_eq!(describe(&[]), "not measured");
    }
}
