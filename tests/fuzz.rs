//! The fuzz targets (tests/fuzz_targets) at a small size, so a regression in the
//! event or token parsers shows up in `cargo test`. The long, time-bounded run is
//! `cargo bench --bench fuzz`.

mod fuzz_targets;

use fuzz_targets::TARGETS;
use proptest::test_runner::Config;

/// Cases per target here; the bench runs as many as fit in its time.
const QUICK_CASES: u32 = 256;

#[test]
fn every_fuzz_target_passes_a_quick_run() {
    let mut failures = Vec::new();
    for target in TARGETS {
        match (target.run)(Config { cases: QUICK_CASES, failure_persistence: None, ..Config::default() }) {
            Ok(cases) => assert_eq!(cases, QUICK_CASES, "{}", target.name),
            Err(e) => failures.push(format!("{}: {e}", target.name)),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
