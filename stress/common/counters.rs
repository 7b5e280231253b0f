//! perf-event counters around the lookup runs: hardware ones where the machine has them
//! (instructions, cache misses), software ones always (task clock, page faults, switches).

use perf_event::events::{Hardware, Software};
use perf_event::{Builder, Counter};
use serde::Serialize;

pub struct Counters {
    hw: Option<(Counter, Counter)>,
    hw_error: Option<String>,
    sw: Vec<(&'static str, Counter)>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct CounterValues {
    pub instructions_per_lookup: Option<f64>,
    pub cache_misses_per_lookup: Option<f64>,
    pub task_clock_ms: Option<f64>,
    pub page_faults: Option<u64>,
    pub context_switches: Option<u64>,
}

impl Counters {
    pub fn open() -> Self {
        let hw = Builder::new().kind(Hardware::INSTRUCTIONS).build().and_then(|i| {
            Builder::new()
                .kind(Hardware::CACHE_MISSES)
                .build()
                .map(|c| (i, c))
        });
        let (hw, hw_error) = match hw {
            Ok(p) => (Some(p), None),
            Err(e) => (None, Some(e.to_string())),
        };
        let mut sw = Vec::new();
        for (name, ev) in [
            ("task_clock", Software::TASK_CLOCK),
            ("page_faults", Software::PAGE_FAULTS),
            ("context_switches", Software::CONTEXT_SWITCHES),
        ] {
            if let Ok(c) = Builder::new().kind(ev).build() {
                sw.push((name, c));
            }
        }
        Counters { hw, hw_error, sw }
    }

    pub fn describe(&self) -> String {
        let hw = match (&self.hw, &self.hw_error) {
            (Some(_), _) => "hardware counters: instructions, cache-misses".to_string(),
            (None, Some(e)) => format!("hardware counters: not supported ({e})"),
            (None, None) => "hardware counters: not supported".to_string(),
        };
        let sw: Vec<&str> = self.sw.iter().map(|s| s.0).collect();
        if sw.is_empty() {
            format!("{hw}; software counters: not supported")
        } else {
            format!("{hw}; software counters: {}", sw.join(", "))
        }
    }

    pub fn start(&mut self) {
        if let Some((i, c)) = &mut self.hw {
            let _ = i.reset();
            let _ = c.reset();
            let _ = i.enable();
            let _ = c.enable();
        }
        for (_, c) in &mut self.sw {
            let _ = c.reset();
            let _ = c.enable();
        }
    }

    /// Stops and reads; per-lookup figures divide by `ops`.
    pub fn stop(&mut self, ops: u64) -> CounterValues {
        let mut v = CounterValues::default();
        let ops = ops.max(1) as f64;
        if let Some((i, c)) = &mut self.hw {
            let _ = i.disable();
            let _ = c.disable();
            v.instructions_per_lookup = i.read().ok().map(|x| x as f64 / ops);
            v.cache_misses_per_lookup = c.read().ok().map(|x| x as f64 / ops);
        }
        for (name, c) in &mut self.sw {
            let _ = c.disable();
            let x = c.read().ok();
            match *name {
                "task_clock" => v.task_clock_ms = x.map(|ns| ns as f64 / 1e6),
                "page_faults" => v.page_faults = x,
                _ => v.context_switches = x,
            }
        }
        v
    }
}
