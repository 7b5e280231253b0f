//! The SVG charts of `honest_comparison`: six log-log panels against the row count, ticks only
//! at powers of ten, units in every title, SQLite's fastest configuration drawn beside its
//! default.

use std::path::Path;

use augur_bench::chart::DecadeAxis;
use plotters::prelude::*;

use crate::report::Context;
use crate::{CellOut, ResultRow};

/// One panel: which rows, and whether to plot a rate (1e6 / mean) or the mean latency.
struct Panel {
    title: &'static str,
    durability: &'static str,
    augur_api: &'static str,
    augur_sql: &'static str,
    sqlite: &'static [&'static str],
    sqlite_default: &'static str,
    rocks: &'static [&'static str],
    rate: bool,
}

/// One line of a panel: its points (log10 of rows, log10 of the value), colour, dashed.
type Series = (Vec<(f64, f64)>, RGBColor, bool);

/// The series of every panel: name, colour, dashed.
const LEGEND: [(&str, RGBColor, bool); 5] = [
    ("Augur API", RED, false),
    ("Augur SQL", MAGENTA, false),
    ("SQLite, fastest configuration", BLUE, false),
    ("SQLite, default configuration", RGBColor(90, 140, 230), true),
    ("raw RocksDB, best", RGBColor(0, 150, 0), false),
];

const PANELS: [Panel; 6] = [
    Panel {
        title: "point lookup, present keys: mean µs per lookup",
        durability: "n/a",
        augur_api: "point_hit",
        augur_sql: "point_hit",
        sqlite: &["point_hit"],
        sqlite_default: "point_hit",
        rocks: &["point_hit"],
        rate: false,
    },
    Panel {
        title: "point lookup, absent keys: mean µs per lookup",
        durability: "n/a",
        augur_api: "point_miss",
        augur_sql: "point_miss",
        sqlite: &["point_miss"],
        sqlite_default: "point_miss",
        rocks: &["point_miss"],
        rate: false,
    },
    Panel {
        title: "range scan of 100 keys: mean µs per scan",
        durability: "n/a",
        augur_api: "range100",
        augur_sql: "range100",
        sqlite: &["range100"],
        sqlite_default: "range100",
        rocks: &["range100"],
        rate: false,
    },
    Panel {
        title: "durable load: rows per second (higher is better)",
        durability: "sync",
        augur_api: "bulk_loader",
        augur_sql: "bulk_copy",
        sqlite: &["bulk_inserts", "bulk_inserts_sorted"],
        sqlite_default: "bulk_inserts",
        rocks: &["bulk_inserts", "bulk_loader"],
        rate: true,
    },
    Panel {
        title: "update without fsync: commits per second",
        durability: "nosync",
        augur_api: "update",
        augur_sql: "update",
        sqlite: &["update"],
        sqlite_default: "update",
        rocks: &["update"],
        rate: true,
    },
    Panel {
        title: "update with fsync: commits per second",
        durability: "sync",
        augur_api: "update",
        augur_sql: "update",
        sqlite: &["update"],
        sqlite_default: "update",
        rocks: &["update"],
        rate: true,
    },
];

pub fn draw(path: &Path, ctx: &Context, all: &CellOut) -> Result<(), Box<dyn std::error::Error>> {
    let dist = if ctx.args.dists.iter().any(|d| d == "random") {
        "random"
    } else {
        ctx.args.dists[0].as_str()
    };
    let root = SVGBackend::new(path, (1300, 1250)).into_drawing_area();
    root.fill(&WHITE)?;
    let (title, body) = root.split_vertically(80);
    title.draw(&Text::new(
        format!("Augur vs SQLite vs raw RocksDB, {dist} keys, 8-byte keys + 100-byte values (log-log; every figure in honest_comparison.md)"),
        (20, 12),
        ("sans-serif", 20),
    ))?;
    title.draw(&Text::new(
        "SQLite fastest = the best of its measured configurations at each point (mmap, exclusive locking, sorted loads); raw RocksDB best = the better of its two loads",
        (20, 42),
        ("sans-serif", 14),
    ))?;
    // One legend for every panel, in the header, so that no panel's lines hide behind it.
    let mut x = 20;
    for (name, color, dashed) in LEGEND.iter() {
        let y = 62;
        if *dashed {
            for j in 0..3 {
                title.draw(&PathElement::new(
                    vec![(x + j * 10, y), (x + j * 10 + 6, y)],
                    color.stroke_width(2),
                ))?;
            }
        } else {
            title.draw(&PathElement::new(
                vec![(x, y), (x + 26, y)],
                color.stroke_width(2),
            ))?;
        }
        title.draw(&Circle::new((x + 13, y), 3, color.filled()))?;
        title.draw(&Text::new(*name, (x + 34, y - 7), ("sans-serif", 14)))?;
        x += 34 + 8 * name.len() as i32 + 30;
    }
    let areas = body.split_evenly((3, 2));
    for (area, p) in areas.iter().zip(PANELS.iter()) {
        let value = |r: &ResultRow| if p.rate { r.ops_per_sec } else { r.mean_us };
        let pick = |sys: &str, layer: &str, ops: &[&str], config: Option<&str>| -> Vec<(f64, f64)> {
            let mut sizes: Vec<usize> = all.results.iter().map(|r| r.size).collect();
            sizes.sort_unstable();
            sizes.dedup();
            sizes
                .into_iter()
                .filter_map(|n| {
                    let vs = all.results.iter().filter(|r| {
                        r.system == sys
                            && r.layer == layer
                            && ops.contains(&r.op.as_str())
                            && r.durability == p.durability
                            && r.dist == dist
                            && r.size == n
                            && config.is_none_or(|c| r.config == c)
                            && value(r) > 0.0
                    });
                    // The best figure at this size: the highest rate or the lowest latency.
                    let best = if p.rate {
                        vs.map(value)
                            .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.max(v))))
                    } else {
                        vs.map(value)
                            .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.min(v))))
                    };
                    best.map(|v| ((n as f64).log10(), v.log10()))
                })
                .collect()
        };
        let data = [
            pick("augur", "api", &[p.augur_api], None),
            pick("augur", "sql", &[p.augur_sql], None),
            pick("sqlite", "api", p.sqlite, None),
            pick("sqlite", "api", &[p.sqlite_default], Some("default")),
            pick("rocksdb", "api", p.rocks, None),
        ];
        let series: Vec<Series> = data
            .into_iter()
            .zip(LEGEND.iter())
            .map(|(d, (_, c, dashed))| (d, *c, *dashed))
            .collect();
        let pts: Vec<(f64, f64)> = series.iter().flat_map(|s| s.0.iter().copied()).collect();
        if pts.is_empty() {
            continue;
        }
        let span = |f: fn(&(f64, f64)) -> f64| {
            let lo = pts.iter().map(f).fold(f64::INFINITY, f64::min);
            let hi = pts.iter().map(f).fold(f64::NEG_INFINITY, f64::max);
            (10f64.powf(lo), 10f64.powf(hi))
        };
        let (x_lo, x_hi) = span(|p| p.0);
        let (y_lo, y_hi) = span(|p| p.1);
        let mut ch = ChartBuilder::on(area)
            .caption(p.title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(55)
            .build_cartesian_2d(
                DecadeAxis::covering(x_lo, x_hi, 0.15),
                DecadeAxis::covering(y_lo, y_hi, 0.0),
            )?;
        ch.configure_mesh()
            .x_desc("rows (log scale)")
            .y_desc(if p.rate { "per second (log)" } else { "µs (log)" })
            .label_style(("sans-serif", 13))
            .axis_desc_style(("sans-serif", 13))
            .draw()?;
        for (pts, color, dashed) in series.iter() {
            if pts.is_empty() {
                continue;
            }
            let c = *color;
            if *dashed {
                ch.draw_series(DashedLineSeries::new(pts.clone(), 6, 4, c.stroke_width(2)))?;
            } else {
                ch.draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))?;
            }
            ch.draw_series(pts.iter().map(|&q| Circle::new(q, 3, c.filled())))?;
        }
    }
    root.present()?;
    Ok(())
}
