//! The layer rule, checked on the source: a module of `src/` may use the modules of
//! the layers below its own, never one above it, and never a sibling of its own layer.
//! The order is written once, here ([`LAYERS`]); `src/lib.rs` and
//! `docs/architecture.md` describe it in words.
//!
//! Imports are read as `crate::<module>` paths outside comments and outside unit-test
//! modules (a test may build a whole bridge from `config` to check one engine rule).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// From the bottom up. A module not listed here fails the check, so a new one must be
/// given its place.
const LAYERS: &[(&str, &[&str])] = &[
    ("foundations", &["clock", "error_chain", "redact"]),
    ("wire and listener", &["protocol", "listener"]),
    ("core", &["interaction", "agent_sim"]),
    ("memory", &["store", "logging"]),
    ("instruments", &["metrics"]),
    ("engine", &["engine"]),
    // Above the engine: it answers with typed outcomes, and never words them.
    ("words", &["texts"]),
    ("adapters", &["platform", "backend"]),
    ("front ends", &["server", "mcp", "web"]),
    ("configuration", &["config"]),
    ("assembly and commands", &["app", "admin", "pairing", "demo"]),
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, modules)| modules.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file of `src/` belongs to (`src/engine/gate.rs`: `engine`);
/// `None` for the crate roots.
fn module_of(path: &Path, src: &Path) -> Option<String> {
    let relative = path.strip_prefix(src).ok()?;
    let first = relative.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (!["lib", "main"].contains(&name)).then(|| name.to_owned())
}

/// The code a file ships: without its unit-test module (always last in this crate)
/// and without comment lines, so a doc link is not taken for an import.
fn shipped_code(text: &str) -> String {
    let code = text.split("#[cfg(test)]\nmod tests {").next().unwrap_or_default();
    code.lines().filter(|line| !line.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// Every top-level module named as `crate::<module>` or inside `crate::{…}`.
fn imported_modules(code: &str) -> BTreeSet<String> {
    let ident = |s: &str| s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    let mut found = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            found.extend(group.split(',').map(|item| ident(item.trim())).filter(|m| !m.is_empty()));
        } else {
            found.insert(ident(rest));
        }
    }
    found
}

#[test]
fn no_module_imports_a_layer_above_its_own_or_a_sibling() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut wrong = Vec::new();
    for file in &files {
        // A unit-test module in a file of its own (`#[cfg(test)] mod tests;`).
        if file.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let Some(module) = module_of(file, &src) else { continue };
        let Some(own) = layer_of(&module) else {
            wrong.push(format!("{}: module `{module}` has no layer; give it one in tests/layers.rs", file.display()));
            continue;
        };
        let text = std::fs::read_to_string(file).expect("a source file is readable");
        for used in imported_modules(&shipped_code(&text)) {
            if used == module {
                continue;
            }
            match layer_of(&used) {
                Some(theirs) if theirs < own => {}
                Some(theirs) => wrong.push(format!(
                    "{}: `{module}` ({}) uses `crate::{used}` ({}), {}",
                    file.strip_prefix(&src).unwrap_or(file).display(),
                    LAYERS[own].0,
                    LAYERS[theirs].0,
                    if theirs == own { "a sibling in its own layer" } else { "a layer above it" },
                )),
                None => {}
            }
        }
    }
    assert!(wrong.is_empty(), "imports that break the layer order:\n{}", wrong.join("\n"));
}

#[test]
fn the_check_sees_an_upward_import() {
    let code = shipped_code(
        "//! see [`crate::app`]\nuse crate::config::Settings;\nuse crate::{engine::X, store};\n#[cfg(test)]\nmod tests {\n    use crate::app::App;\n}\n",
    );
    assert_eq!(imported_modules(&code), BTreeSet::from(["config".to_owned(), "engine".to_owned(), "store".to_owned()]));
    assert!(layer_of("config") > layer_of("engine"));
    assert_eq!(layer_of("nowhere"), None);
}
