//! Where the real agent backends live for the connector tests: one virtualenv per
//! Python backend under `target/backends/<name>/venv`, and one `node_modules` per npm
//! one under `target/backends/<name>`, made by `tests/backends/install.sh`.
//!
//! A test that needs a backend is `#[ignore]`d with the reason (a plain `cargo test`
//! reports it ignored, never passed) and asks [`installed`]; run with
//! `-- --include-ignored` and without the install, it fails saying what to run.

use std::path::PathBuf;

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `tests/backends/<name>`: the backend's scripts, scripted model and pins.
pub fn spec_dir(name: &str) -> PathBuf {
    repo().join("tests/backends").join(name)
}

/// The virtualenv of backend `name` (its `bin/` holds the backend's commands). Always
/// `Some`: a missing install fails the test that asked (the `Option` lets helpers
/// that build on it use `?`).
pub fn installed(name: &str) -> Option<PathBuf> {
    let venv = root().join(name).join("venv");
    if venv.join("bin/python").exists() {
        return Some(venv);
    }
    panic!("the {name} backend is not installed in {}; run tests/backends/install.sh {name}", venv.display());
}

/// The `node_modules/.bin` of npm backend `name`, where its commands are. Like
/// [`installed`], a missing install fails the test that asked.
pub fn installed_npm(name: &str) -> Option<PathBuf> {
    let bin = root().join(name).join("node_modules/.bin");
    if bin.is_dir() {
        return Some(bin);
    }
    panic!("the {name} backend is not installed in {}; run tests/backends/install.sh {name}", bin.display());
}

fn root() -> PathBuf {
    std::env::var_os("HITL_BRIDGE_BACKENDS_DIR").map(PathBuf::from).unwrap_or_else(|| repo().join("target/backends"))
}
