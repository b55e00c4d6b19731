//! Where the real agent backends live for the connector tests: one virtualenv per
//! backend under `target/backends/<name>/venv`, made by `tests/backends/install.sh`.
//!
//! A test that needs a backend asks [`installed`]. Without the install the test says
//! so and skips; under `CI=true` it fails instead, because CI must install them.

use std::path::PathBuf;

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `tests/backends/<name>`: the backend's scripts, scripted model and pins.
pub fn spec_dir(name: &str) -> PathBuf {
    repo().join("tests/backends").join(name)
}

/// The virtualenv of backend `name` (its `bin/` holds the backend's commands), or
/// `None` after printing why the test skips.
pub fn installed(name: &str) -> Option<PathBuf> {
    let root = std::env::var_os("HITL_BRIDGE_BACKENDS_DIR").map(PathBuf::from).unwrap_or_else(|| repo().join("target/backends"));
    let venv = root.join(name).join("venv");
    if venv.join("bin/python").exists() {
        return Some(venv);
    }
    let why = format!("the {name} backend is not installed in {}; run tests/backends/install.sh {name}", venv.display());
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{why} (CI=true: CI must install every backend)");
    }
    eprintln!("SKIPPED: {why}");
    None
}
