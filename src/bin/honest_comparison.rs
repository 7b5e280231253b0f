//! honest_comparison: Augur vs SQLite (and raw RocksDB) at 10K-10M rows.
//!
//! Not built yet: see issue 7. This placeholder prints its planned usage and exits non-zero so
//! that nobody mistakes it for a result.
fn main() {
    eprintln!(
        "honest_comparison: not implemented yet (issue 7).\n\
         planned usage: honest_comparison --sizes 10000,100000,1000000,10000000 \
         --dists seq,random,lognormal --runs 3 --value-size 100 --out reports/"
    );
    std::process::exit(2);
}
