//! Turn-taking between the cells of one (distribution, size): their children run at the same
//! time but only one of them works at any moment, the one holding the turn. Each cell's load,
//! reads and nosync writes run in one turn, as when the cells ran one after another; its durable
//! writes hand the turn on every `--durable-block` operations, so every system's durable phase
//! is spread over the same minutes and sees the same disk (this machine's virtual disk switches
//! between a fast and a slow state within minutes; cells run one after another measured which
//! state each fell into).
//!
//! The parent grants a turn by writing one byte to the child's stdin; the child hands it back by
//! writing one byte to its stdout (moved to a private descriptor at start, with stdout then
//! pointed at stderr so that nothing else the child prints can be taken for a hand-back). The
//! end of a child's stdout is the end of its last turn (it exited, or failed).

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::io::FromRawFd;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// The child's end: where it waits for its turn and hands it back.
pub struct Turn {
    link: Option<(File, File)>,
    /// Durable operations per turn, and how many were done in the current one.
    block: usize,
    done: usize,
    /// Time spent waiting for turns (not the cell's own time).
    pub waited: Duration,
}

impl Turn {
    /// The child's turn link when the parent runs it in a group (`--turns`), else a no-op one.
    pub fn from_parent(grouped: bool, block: usize) -> Result<Turn> {
        let link = if grouped {
            // SAFETY: dup/dup2 on the process's own standard descriptors, at start, before any
            // other thread exists; the new descriptor is owned by the File made from it.
            let back = unsafe {
                let fd = libc::dup(1);
                if fd < 0 || libc::dup2(2, 1) < 0 {
                    bail!("turns: {}", std::io::Error::last_os_error());
                }
                File::from_raw_fd(fd)
            };
            // SAFETY: descriptor 0 is the pipe the parent grants turns on, read only here.
            let grant = unsafe {
                let fd = libc::dup(0);
                if fd < 0 {
                    bail!("turns: {}", std::io::Error::last_os_error());
                }
                File::from_raw_fd(fd)
            };
            Some((grant, back))
        } else {
            None
        };
        Ok(Turn {
            link,
            block: block.max(1),
            done: 0,
            waited: Duration::ZERO,
        })
    }

    /// Blocks until the parent grants this child the turn.
    pub fn wait(&mut self) -> Result<()> {
        if let Some((grant, _)) = &mut self.link {
            let t = Instant::now();
            let mut b = [0u8; 1];
            grant.read_exact(&mut b).context("turns: the parent went away")?;
            self.waited += t.elapsed();
        }
        Ok(())
    }

    /// Hands the turn back and waits for the next one.
    pub fn yield_turn(&mut self) -> Result<()> {
        self.done = 0;
        if let Some((_, back)) = &mut self.link {
            back.write_all(b"p")?;
            back.flush()?;
        }
        self.wait()
    }

    /// Counts one durable operation; hands the turn on after `block` of them.
    pub fn durable_op(&mut self) -> Result<()> {
        self.done += 1;
        if self.done >= self.block {
            self.yield_turn()?;
        }
        Ok(())
    }

    /// Ends the durable phase: hands on a part-done block so that every cell has finished its
    /// durable writes before any goes on.
    pub fn end_durable(&mut self) -> Result<()> {
        if self.done > 0 {
            self.yield_turn()?;
        }
        Ok(())
    }
}

struct Running {
    label: String,
    proc: Child,
    grant: ChildStdin,
    back: ChildStdout,
    alive: bool,
}

/// Runs `cmds` (the children of one group, each labelled) at once, granting turns round-robin
/// until every one has exited. Fails, killing the others, when one fails.
pub fn run_group(cmds: Vec<(String, Command)>) -> Result<()> {
    let mut kids = Vec::new();
    for (label, mut cmd) in cmds {
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut proc = cmd.spawn().context("spawning a child")?;
        let grant = proc.stdin.take().context("child stdin")?;
        let back = proc.stdout.take().context("child stdout")?;
        kids.push(Running {
            label,
            proc,
            grant,
            back,
            alive: true,
        });
    }
    let r = take_turns(&mut kids);
    if r.is_err() {
        for k in kids.iter_mut().filter(|k| k.alive) {
            let _ = k.proc.kill();
            let _ = k.proc.wait();
        }
    }
    r
}

fn take_turns(kids: &mut [Running]) -> Result<()> {
    let n = kids.len();
    let mut at = 0;
    while let Some(i) = (0..n).map(|d| (at + d) % n).find(|&i| kids[i].alive) {
        let k = &mut kids[i];
        // A child that has exited no longer reads its stdin: the write may fail, and its
        // stdout then ends at once.
        let _ = k.grant.write_all(b"g").and_then(|_| k.grant.flush());
        let mut b = [0u8; 1];
        match k.back.read(&mut b)? {
            1 => {}
            _ => {
                k.alive = false;
                let st = k.proc.wait()?;
                if !st.success() {
                    bail!("cell {} failed ({st})", k.label);
                }
            }
        }
        at = i + 1;
    }
    Ok(())
}
