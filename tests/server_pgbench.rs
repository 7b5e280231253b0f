//! pgbench (Debian's postgresql-contrib/client) against `augur serve`: `-i -s 1`, then the
//! select-only script in simple and prepared mode and the default TPC-B-like script, each for a
//! few seconds with 4 clients; zero failed transactions, and balances that add up afterwards.

mod server_util;

use std::process::Command;

use server_util::{require, Server};

fn pgbench(srv: &Server, args: &[&str]) -> String {
    let o = Command::new("pgbench")
        .args(["-h", "127.0.0.1", "-U", "augur"])
        .args(["-p", &srv.port.to_string()])
        .args(args)
        .arg("augur")
        .output()
        .expect("pgbench");
    let out = format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        o.status.success(),
        "pgbench {args:?} failed:\n{out}\nserver log:\n{}",
        srv.log_text()
    );
    out
}

fn field(out: &str, key: &str) -> String {
    out.lines()
        .find_map(|l| l.strip_prefix(key))
        .unwrap_or_else(|| panic!("no {key:?} in:\n{out}"))
        .trim()
        .to_string()
}

fn check_run(out: &str) -> f64 {
    let processed: u64 = field(out, "number of transactions actually processed:")
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(processed > 0, "{out}");
    let failed = field(out, "number of failed transactions:");
    assert!(failed.starts_with("0 "), "failed transactions: {failed}\n{out}");
    let tps = field(out, "tps =");
    tps.split_whitespace().next().unwrap().parse().unwrap()
}

#[test]
fn pgbench_init_select_prepared_tpcb() {
    require("pgbench");
    require("psql");
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start(&tmp.path().join("data"), &[]);

    let out = pgbench(&srv, &["-i", "-s", "1"]);
    assert!(out.contains("done in"), "{out}");
    assert_eq!(srv.sql("select count(*) from pgbench_accounts").trim(), "100000");
    assert_eq!(srv.sql("select count(*) from pgbench_tellers").trim(), "10");
    assert_eq!(
        srv.sql("select count(*), sum(bbalance) from pgbench_branches")
            .trim(),
        "1|0"
    );

    let simple = check_run(&pgbench(&srv, &["-S", "-c", "4", "-j", "2", "-T", "4"]));
    let prepared = check_run(&pgbench(
        &srv,
        &["-S", "-M", "prepared", "-c", "4", "-j", "2", "-T", "4"],
    ));
    let tpcb = check_run(&pgbench(&srv, &["-c", "4", "-j", "2", "-T", "5"]));
    eprintln!("tps: select-only simple {simple:.0}, prepared {prepared:.0}; tpc-b {tpcb:.0}");

    // Every committed transaction moved the same delta through account, teller, branch and
    // history (pgbench truncated the history at the start of the TPC-B run, and the balances
    // were zero after -i; the select-only runs change nothing).
    let sums = srv.sql(
        "select (select sum(abalance) from pgbench_accounts), (select sum(tbalance) from pgbench_tellers), \
         (select sum(bbalance) from pgbench_branches), (select sum(delta) from pgbench_history), \
         (select count(*) from pgbench_history)",
    );
    let v: Vec<&str> = sums.trim().split('|').collect();
    assert_eq!(v.len(), 5, "{sums}");
    assert!(v[4].parse::<u64>().unwrap() > 0, "{sums}");
    assert!(
        v[0] == v[1] && v[1] == v[2] && v[2] == v[3],
        "balances do not add up: {sums}"
    );
}
