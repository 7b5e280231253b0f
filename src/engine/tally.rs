//! A counter that reads add to and `stats()` sums: each thread adds to its own slot with a
//! plain load and store, so a point read pays no locked instruction for it (on x86 a locked
//! read-modify-write is a full fence: the read's later loads wait for it).

use std::sync::atomic::{AtomicU64, Ordering};

use thread_local::ThreadLocal;

#[derive(Default)]
pub(crate) struct Tally(ThreadLocal<AtomicU64>);

impl Tally {
    /// Adds `n` to this thread's slot (only this thread writes it).
    #[inline]
    pub(crate) fn add(&self, n: u64) {
        let c = self.0.get_or_default();
        c.store(c.load(Ordering::Relaxed) + n, Ordering::Relaxed);
    }

    /// The sum over every thread's slot (a slot outlives its thread; a new thread given the
    /// same slot adds on from its value).
    pub(crate) fn sum(&self) -> u64 {
        self.0.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::Tally;

    #[test]
    fn sums_what_every_thread_added() {
        let t = Tally::default();
        std::thread::scope(|s| {
            for i in 0..8u64 {
                let t = &t;
                s.spawn(move || {
                    for _ in 0..1000 {
                        t.add(i + 1);
                    }
                });
            }
        });
        t.add(5);
        assert_eq!(t.sum(), 1000 * (1..=8).sum::<u64>() + 5);
    }
}
