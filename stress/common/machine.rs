//! The machine and build a report was measured on.

use serde::Serialize;
use std::process::Command;

#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    pub cpu_model: String,
    pub cores: usize,
    pub ram_bytes: u64,
    pub kernel: String,
    pub git_hash: String,
    pub rustc: String,
    pub profile: String,
    pub disk: String,
    /// (working-set bytes, ns per dependent load): empty until [`Machine::measure_memory`].
    pub memory_latency: Vec<(usize, f64)>,
}

fn cmd(prog: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(prog).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

impl Machine {
    pub fn detect() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split(':').nth(1))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let ram_bytes = meminfo
            .lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map(|kb| kb * 1024)
            .unwrap_or(0);
        Machine {
            cpu_model,
            cores: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            ram_bytes,
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map(|s| s.trim().to_string())
                .unwrap_or_default(),
            git_hash: cmd("git", &["describe", "--always", "--dirty", "--abbrev=12"])
                .unwrap_or_else(|| "unknown".into()),
            rustc: cmd("rustc", &["--version"]).unwrap_or_else(|| "unknown".into()),
            profile: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            }
            .into(),
            disk: "not used (in-memory structures only)".into(),
            memory_latency: Vec::new(),
        }
    }

    /// Measures the memory latency by working-set size ([`crate::memlat::profile`], about a
    /// second); call before the measured work takes the memory.
    pub fn measure_memory(&mut self) {
        self.memory_latency = crate::memlat::profile();
    }

    /// The machine table's row for the memory latency.
    pub fn memory_row(&self) -> String {
        format!(
            "| memory latency | one dependent load (random cache lines, 2 MiB pages where given), by working set: {} |",
            crate::memlat::describe(&self.memory_latency)
        )
    }

    pub fn describe(&self) -> String {
        format!(
            "machine: {} | {} cores | {:.1} GiB RAM | Linux {} | augur {} | {} | {} build",
            self.cpu_model,
            self.cores,
            self.ram_bytes as f64 / (1u64 << 30) as f64,
            self.kernel,
            self.git_hash,
            self.rustc,
            self.profile
        )
    }
}
