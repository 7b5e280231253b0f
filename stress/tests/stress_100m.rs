//! stress_100m at a tiny size: per-operation p50 ratios beside the batched ones, warm-ups apart
//! from the measured keys, and every pass checked.

use std::process::Command;

#[test]
fn per_operation_ratios_beside_batched_ones() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_stress_100m"))
        .args([
            "--draft",
            "--keys",
            "30000",
            "--lookups",
            "20000",
            "--scans",
            "2000",
            "--runs",
            "2",
            "--pairs",
            "2",
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::read_to_string(out.join("stress_100m.md")).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("stress_100m.json")).unwrap()).unwrap();
    assert!(md.contains("| keys | vs | per-op p50 | per-op mean | batched mean |"));
    let sp = json["speedups"].as_array().unwrap();
    assert_eq!(sp.len(), 2, "{sp:?}");
    for s in sp {
        assert!(s["per_op_p50"].as_f64().unwrap() > 0.0);
        assert!(s["batched_mean"].as_f64().unwrap() > 0.0);
    }
    assert_eq!(json["run"]["warmup_keys_measured"], 0);
    assert_eq!(json["run"]["failures"], 0);
    assert!(md.contains("the payload sum and hit count of every batched and paired pass"));
    assert!(md.contains("DRAFT — not a report of record"));
}
