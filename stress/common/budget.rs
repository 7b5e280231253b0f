//! The memory budget of rule 3 (docs/BENCHMARKING.md): the process-private memory a system keeps
//! for the data, every part named and counted, against the budget each side was given.

use serde::{Deserialize, Serialize};

/// One measured part of a system's memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Part {
    /// What it is and where the number comes from, e.g. "row cache (Stats::row_cache_bytes)".
    pub name: String,
    pub bytes: u64,
    /// Whether the part is memory kept for the data, which rule 3 charges to the budget (caches,
    /// indexes); memtables and table readers are listed but not charged.
    pub charged: bool,
}

impl Part {
    pub fn charged(name: impl Into<String>, bytes: u64) -> Part {
        Part {
            name: name.into(),
            bytes,
            charged: true,
        }
    }
    pub fn listed(name: impl Into<String>, bytes: u64) -> Part {
        Part {
            name: name.into(),
            bytes,
            charged: false,
        }
    }
}

/// The parts against the budget.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Accounting {
    pub budget_bytes: u64,
    /// Sum of the charged parts.
    pub charged_bytes: u64,
    /// Sum of the parts listed but not charged.
    pub listed_bytes: u64,
    /// Charged bytes beyond the budget (0 when within it).
    pub over_budget_bytes: u64,
}

impl Accounting {
    pub fn within_budget(&self) -> bool {
        self.over_budget_bytes == 0
    }
}

pub fn account(budget_bytes: u64, parts: &[Part]) -> Accounting {
    let charged_bytes: u64 = parts.iter().filter(|p| p.charged).map(|p| p.bytes).sum();
    let listed_bytes: u64 = parts.iter().filter(|p| !p.charged).map(|p| p.bytes).sum();
    Accounting {
        budget_bytes,
        charged_bytes,
        listed_bytes,
        over_budget_bytes: charged_bytes.saturating_sub(budget_bytes),
    }
}

/// "row cache 256 MiB + block cache 200 MiB + index 220 MiB = 676 MiB charged, 164 MiB over
/// the 512 MiB budget; listed apart: memtables 3 MiB".
pub fn describe(parts: &[Part], a: &Accounting) -> String {
    let mib = |b: u64| format!("{:.0} MiB", b as f64 / (1u64 << 20) as f64);
    let charged: Vec<String> = parts
        .iter()
        .filter(|p| p.charged)
        .map(|p| format!("{} {}", p.name, mib(p.bytes)))
        .collect();
    let listed: Vec<String> = parts
        .iter()
        .filter(|p| !p.charged)
        .map(|p| format!("{} {}", p.name, mib(p.bytes)))
        .collect();
    let verdict = if a.within_budget() {
        format!("within the {} budget", mib(a.budget_bytes))
    } else {
        format!(
            "{} over the {} budget",
            mib(a.over_budget_bytes),
            mib(a.budget_bytes)
        )
    };
    let mut s = format!(
        "{} = {} charged, {verdict}",
        if charged.is_empty() {
            "nothing".to_string()
        } else {
            charged.join(" + ")
        },
        mib(a.charged_bytes)
    );
    if !listed.is_empty() {
        s.push_str(&format!("; listed apart: {}", listed.join(", ")));
    }
    s
}
