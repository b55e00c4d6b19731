//! The fuzz targets (tests/fuzz_targets) run for a bounded time: every target in
//! turn, in rounds of random cases, until the time is up. Prints the cases run per
//! target and fails (exit 1) with the minimal input on the first failure. Not run in
//! CI; `cargo test` runs a quick version.
//!
//! `cargo bench --bench fuzz` (60 s) or `HITL_FUZZ_SECS=600 cargo bench --bench fuzz`.

#[path = "../tests/fuzz_targets/mod.rs"]
mod fuzz_targets;

use std::time::{Duration, Instant};

use fuzz_targets::TARGETS;
use proptest::test_runner::Config;

/// Cases per round of one target: small enough to share the time fairly.
const ROUND: u32 = 500;

fn main() {
    let secs = std::env::var("HITL_FUZZ_SECS").ok().and_then(|s| s.parse::<u64>().ok()).unwrap_or(60);
    let budget = Duration::from_secs(secs);
    // The bench harness passes `--bench`; nothing else is taken.
    println!("fuzzing {} targets for {secs} s (HITL_FUZZ_SECS)", TARGETS.len());
    let start = Instant::now();
    let mut cases = vec![0u64; TARGETS.len()];
    let mut rounds = 0u64;
    while start.elapsed() < budget {
        for (n, target) in TARGETS.iter().enumerate() {
            // A fresh random seed every round (TestRunner::new), so rounds differ.
            match (target.run)(Config { cases: ROUND, failure_persistence: None, ..Config::default() }) {
                Ok(ran) => cases[n] += u64::from(ran),
                Err(e) => {
                    eprintln!("FAILED: {} after {} cases: {e}", target.name, cases[n]);
                    std::process::exit(1);
                }
            }
        }
        rounds += 1;
    }
    let elapsed = start.elapsed();
    for (target, n) in TARGETS.iter().zip(&cases) {
        println!("{:<52} {n:>9} cases", target.name);
    }
    let total: u64 = cases.iter().sum();
    println!("{total} cases in {rounds} rounds, {:.1} s ({:.0} cases/s), no failure", elapsed.as_secs_f64(), total as f64 / elapsed.as_secs_f64());
}
