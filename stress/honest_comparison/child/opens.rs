//! The opens issue 23 asks about, beside the timed reopen: point reads in the first second
//! after an open returns, and an open after an unclean stop. For the unclean stop a second
//! process (this binary with `--victim`) opens the cell's database, commits single-row updates
//! past the last checkpoint (the clean close before it wrote one) and is killed with SIGKILL by
//! the cell, which then opens the database again (timed, with Augur's phases), reads for a
//! second, and reads back every key the victim updated.

use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use augur_bench::augur_side;
use augur_bench::keys::Rng;
use augur_bench::measure::page_faults;
use augur_bench::stats::median;

use super::{budget, new_hist, value_of, Child};
use crate::systems::{self, SqliteConfig, System};
use crate::{Args, Cell, FirstSecond, OpenRecord, OpenSplit};

/// What the checks of the first-second reads compare.
const FIRST_SECOND_WHAT: &str =
    "value compared byte for byte with the model (reads timed right after the open returned)";

impl Child<'_> {
    /// The cells whose opens get the first second: the API cells of Augur and SQLite.
    fn measures_first_second(&self) -> bool {
        self.cell.layer == "api" && matches!(self.cell.system.as_str(), "augur" | "sqlite")
    }

    /// The cells stopped uncleanly: Augur's API cell and SQLite's default one.
    fn measures_unclean(&self) -> bool {
        self.a.unclean_updates > 0
            && self.cell.layer == "api"
            && (self.cell.system == "augur"
                || (self.cell.system == "sqlite" && self.cell.config == "default"))
    }

    fn record(
        &self,
        kind: &str,
        open_us: f64,
        split: Option<OpenSplit>,
        updates: u64,
        fs: FirstSecond,
    ) -> OpenRecord {
        OpenRecord {
            system: self.cell.system.clone(),
            config: self.cell.config.clone(),
            layer: self.cell.layer.clone(),
            dist: self.cell.dist.clone(),
            size: self.cell.size,
            kind: kind.into(),
            open_us,
            split,
            updates_before: updates,
            first_second: fs,
        }
    }

    /// Point reads of keys drawn uniformly (seeded) from `keys`, all present, for
    /// `--first-second-ms` from now: each timed alone into one histogram, each answer checked
    /// (untimed) against the model. Pushes the result row `op` and its check.
    fn first_second(&mut self, op: &str, keys: &[u64], seed: u64) -> Result<FirstSecond> {
        let span = Duration::from_millis(self.a.first_second_ms.max(1));
        let mut hist = new_hist();
        let mut rng = Rng::new(seed);
        let (mut n, mut correct, mut total) = (0u64, 0u64, Duration::ZERO);
        let f0 = page_faults();
        let t0 = Instant::now();
        while t0.elapsed() < span {
            let k = keys[rng.below(keys.len())];
            self.buf.clear();
            let t = Instant::now();
            let found = self.sys.get(k, &mut self.buf)?;
            let dt = t.elapsed();
            total += dt;
            hist.saturating_record(dt.as_nanos().max(1) as u64);
            n += 1;
            let ok = match self.expected_value(k) {
                Some(g) => found && self.value_ok(k, g),
                None => !found,
            };
            correct += u64::from(ok);
        }
        let f1 = page_faults();
        self.check(op, "n/a", FIRST_SECOND_WHAT, n, n, correct);
        let mean = total.as_secs_f64() * 1e6 / n.max(1) as f64;
        let r = self.row(op, "n/a", &[mean], Some(&hist));
        self.out.results.push(r);
        if correct != n {
            bail!("{}: {op}: {correct}/{n} answers right", self.cell.label());
        }
        Ok(FirstSecond {
            reads: n,
            mean_us: mean,
            p50_us: hist.value_at_quantile(0.5) as f64 / 1000.0,
            p99_us: hist.value_at_quantile(0.99) as f64 / 1000.0,
            minor_faults: f1.0 - f0.0,
            major_faults: f1.1 - f0.1,
        })
    }

    /// Right after the last timed clean reopen: the first second's reads, and the record of
    /// the clean open (the run of median time, with its phases).
    pub(super) fn after_clean_reopen(&mut self, times: &[f64], splits: Vec<Option<OpenSplit>>) -> Result<()> {
        if !self.measures_first_second() {
            return Ok(());
        }
        let keys = std::mem::take(&mut self.ks.sorted);
        let fs = self.first_second("first_second", &keys, self.a.seed ^ 0x4000);
        self.ks.sorted = keys;
        let fs = fs?;
        let m = median(times).unwrap_or(0.0);
        let at = (0..times.len())
            .min_by(|&i, &j| (times[i] - m).abs().total_cmp(&(times[j] - m).abs()))
            .context("no reopen timed")?;
        let split = splits.into_iter().nth(at).flatten();
        let r = self.record("clean", times[at], split, 0, fs);
        self.out.opens.push(r);
        Ok(())
    }

    /// After every other measurement: `min(rows, --unclean-updates)` single-row updates of
    /// keys that are never deleted (drawn with repeats), committed by a victim process (all
    /// without fsync but the last, whose fsync carries them all), a SIGKILL of it, then the
    /// timed open (+ one lookup), the first second's reads, and every updated key read back.
    pub(super) fn unclean_stop(&mut self) -> Result<()> {
        if !self.measures_unclean() {
            return Ok(());
        }
        let started = Instant::now();
        let n = self.a.unclean_updates.min(self.cell.size);
        let mut rng = Rng::new(self.a.seed ^ 0x4200);
        let mut plan: Vec<(u64, u32)> = Vec::with_capacity(n);
        for _ in 0..n {
            let k = self.stable[rng.below(self.stable.len())];
            let g = self.gens.get(&k).copied().unwrap_or(0) + 1;
            self.gens.insert(k, g);
            plan.push((k, g));
        }
        self.sys.close()?;
        let mut msg = Vec::with_capacity(8 + 12 * n);
        msg.extend_from_slice(&(n as u64).to_le_bytes());
        for &(k, g) in &plan {
            msg.extend_from_slice(&k.to_le_bytes());
            msg.extend_from_slice(&g.to_le_bytes());
        }
        let mut v = Command::new(std::env::current_exe()?)
            .args(std::env::args_os().skip(1))
            .arg("--victim")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .context("spawning the victim")?;
        let mut to = v.stdin.take().context("victim stdin")?;
        let mut from = v.stdout.take().context("victim stdout")?;
        let sent = to.write_all(&msg).and_then(|_| to.flush());
        let mut b = [0u8; 1];
        let ready = sent.is_ok() && from.read(&mut b).unwrap_or(0) == 1 && b[0] == b'r';
        if !ready {
            let _ = v.kill();
            let st = v.wait()?;
            bail!(
                "{}: the victim did not finish its updates ({st})",
                self.cell.label()
            );
        }
        // Child::kill sends SIGKILL.
        v.kill().context("SIGKILL of the victim")?;
        let st = v.wait()?;
        drop(to);
        if st.signal() != Some(libc::SIGKILL) {
            bail!("{}: the victim ended by {st}, not by SIGKILL", self.cell.label());
        }
        let probe = plan[0].0;
        let t = Instant::now();
        self.sys.reopen(probe)?;
        let open_us = t.elapsed().as_secs_f64() * 1e6;
        let split = self.sys.open_split(open_us);
        self.push_plain("reopen_sigkill", "n/a", &[open_us]);
        let stable = std::mem::take(&mut self.stable);
        let fs = self.first_second("first_second_sigkill", &stable, self.a.seed ^ 0x4100);
        self.stable = stable;
        let fs = fs?;
        // Every key the victim updated holds its last value (untimed).
        let mut keys: Vec<u64> = plan.iter().map(|&(k, _)| k).collect();
        keys.sort_unstable();
        keys.dedup();
        let mut correct = 0u64;
        for &k in &keys {
            self.buf.clear();
            let g = self.gens[&k];
            if self.sys.get(k, &mut self.buf)? && self.value_ok(k, g) {
                correct += 1;
            }
        }
        let m = keys.len() as u64;
        self.check(
            "reopen_sigkill",
            "n/a",
            "every key updated before the SIGKILL read back after the open and compared with its last committed value",
            m,
            m,
            correct,
        );
        if correct != m {
            bail!(
                "{}: after SIGKILL {correct} of {m} updated keys right",
                self.cell.label()
            );
        }
        let r = self.record("sigkill", open_us, split, n as u64, fs);
        self.out.opens.push(r);
        // What the whole unclean stop cost the run (victim, open, first second, read-back).
        self.observe(
            "reopen_sigkill",
            "unclean_stop_s",
            started.elapsed().as_secs_f64(),
        );
        Ok(())
    }
}

/// The victim (`--victim`): reads the updates from stdin (a count, then key and generation
/// per update), opens the cell's database, commits them one row per commit (the last one
/// durable), says so on stdout and waits to be killed; it exits when its stdin ends (the cell
/// went away).
pub fn victim(a: &Args, cell: Cell) -> Result<()> {
    let mut inp = std::io::stdin().lock();
    let mut w = [0u8; 8];
    inp.read_exact(&mut w)?;
    let n = u64::from_le_bytes(w) as usize;
    let mut raw = vec![0u8; 12 * n];
    inp.read_exact(&mut raw)?;
    let plan: Vec<(u64, u32)> = raw
        .chunks_exact(12)
        .map(|c| {
            let k = u64::from_le_bytes(c[..8].try_into().expect("8 bytes"));
            let g = u32::from_le_bytes(c[8..].try_into().expect("4 bytes"));
            (k, g)
        })
        .collect();
    let first = plan.first().context("victim: no updates")?.0;
    let dir = a.data_dir.join(cell.spec().replace(',', "-"));
    let mut sys: Box<dyn System> = match (cell.system.as_str(), cell.layer.as_str()) {
        ("augur", "api") => Box::new(systems::AugurApi::attach(&dir, augur_side::options(budget(a)))),
        ("sqlite", "api") => Box::new(systems::Sqlite::attach(
            &dir,
            budget(a),
            SqliteConfig::parse(&cell.config)?,
        )),
        other => bail!("victim: no unclean stop for {other:?}"),
    };
    sys.reopen(first)?;
    let mut v = Vec::with_capacity(a.value_size);
    for (i, &(k, g)) in plan.iter().enumerate() {
        v.clear();
        value_of(k, g, a.value_size, &mut v);
        if !sys.update(k, &v, i + 1 == plan.len())? {
            bail!("victim: key {k} missing");
        }
    }
    let mut out = std::io::stdout().lock();
    out.write_all(b"r")?;
    out.flush()?;
    let mut rest = Vec::new();
    let _ = inp.read_to_end(&mut rest);
    bail!("victim: the cell went away before killing it")
}
