//! How the engine blocks: the two places where a statement can wait for a long time (a row lock
//! held by another transaction, and the WAL fsync of a commit) run through `blocking`, which
//! calls the hook a host installed with [`set_wait_hook`], or the wait itself when there is
//! none (the embedded default).
//!
//! The server installs `tokio::task::block_in_place` (src/bin/augur.rs): a short statement (a
//! point read or write, BEGIN, COMMIT) then runs on the network thread that received it, and
//! only when it actually has to wait is that thread's other work handed to another thread.
//! Handing every statement over up front cost more than the statements themselves (pgbench).
//! Not covered: RocksDB's own write delays (a stall while compaction catches up) inside a
//! commit's WAL append; a short statement caught in one holds its network thread until it ends.

use std::sync::OnceLock;

/// A function that runs the wait it is given (once) and returns when it has.
pub type WaitHook = fn(&mut dyn FnMut());

static HOOK: OnceLock<WaitHook> = OnceLock::new();

/// Installs the process-wide wait hook; false if one was installed already (it stays).
pub fn set_wait_hook(hook: WaitHook) -> bool {
    HOOK.set(hook).is_ok()
}

/// Runs `f`, a wait, through the installed hook.
pub(crate) fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match HOOK.get() {
        None => f(),
        Some(hook) => {
            let mut f = Some(f);
            let mut out = None;
            hook(&mut || {
                if let Some(f) = f.take() {
                    out = Some(f());
                }
            });
            // A hook that did not run the wait: run it here rather than fail.
            match out {
                Some(v) => v,
                None => (f.take().expect("not run, so still here"))(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn runs_the_wait_once_without_a_hook() {
        let mut n = 0;
        assert_eq!(
            super::blocking(|| {
                n += 1;
                7
            }),
            7
        );
        assert_eq!(n, 1);
    }
}
