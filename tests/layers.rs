//! The layer rule, checked on the source: a module of `src/` may use the modules of
//! the layers below its own, never one above it, and never a sibling of its own layer.
//! The order is written once, here ([`LAYERS`]); `src/lib.rs` and
//! `docs/architecture.md` describe it in words.
//!
//! Imports are read as `crate::<module>` paths, and `super::` paths that climb to the
//! crate root, outside comments; unit-test modules are read too (the core's tests use
//! a registry of test platforms, not the real ones), except the few that build a whole
//! bridge from `config` to check one rule ([`ASSEMBLED_TESTS`]).

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

/// Unit tests that assemble settings or connectors from the layers above to check one
/// rule of their module; their shipped code is still checked.
const ASSEMBLED_TESTS: &[&str] = &["engine/rules.rs", "backend/agno/settings.rs", "backend/kimi/settings.rs"];

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
    without_comments(text.split(TEST_MODULE).next().unwrap_or_default())
}

/// Its unit-test module, if any, without comment lines.
fn test_code(text: &str) -> String {
    text.split_once(TEST_MODULE).map(|(_, tests)| without_comments(tests)).unwrap_or_default()
}

const TEST_MODULE: &str = "#[cfg(test)]\nmod tests {";

fn without_comments(code: &str) -> String {
    code.lines().filter(|line| !line.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// The top-level modules `super::` paths reach in code `depth` modules below the crate
/// root (`src/engine/gate.rs` is 2 deep; its test module 3): a chain of at least
/// `depth` `super::`s names a module at the root.
fn reached_by_super(code: &str, depth: usize) -> BTreeSet<String> {
    let ident = |s: &str| s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    let mut found = BTreeSet::new();
    for (at, _) in code.match_indices("super::") {
        if code[..at].ends_with("super::") {
            continue; // counted from the start of its chain
        }
        let mut rest = &code[at..];
        let mut climbs = 0;
        while let Some(after) = rest.strip_prefix("super::") {
            climbs += 1;
            rest = after;
        }
        if climbs >= depth {
            found.insert(ident(rest));
        }
    }
    found
}

/// How many modules below the crate root a file's own code is.
fn depth_of(path: &Path, src: &Path) -> usize {
    let relative = path.strip_prefix(src).unwrap_or(path);
    let parts = relative.components().count();
    if relative.file_name().is_some_and(|n| n == "mod.rs") { parts - 1 } else { parts }
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
        let depth = depth_of(file, &src);
        let shipped = shipped_code(&text);
        let mut used_modules = imported_modules(&shipped);
        used_modules.extend(reached_by_super(&shipped, depth));
        let relative = file.strip_prefix(&src).unwrap_or(file).to_string_lossy().into_owned();
        if !ASSEMBLED_TESTS.contains(&relative.as_str()) {
            let tests = test_code(&text);
            used_modules.extend(imported_modules(&tests));
            used_modules.extend(reached_by_super(&tests, depth + 1));
        }
        for used in used_modules {
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
    let tests = test_code("use crate::store;\n#[cfg(test)]\nmod tests {\n    use crate::app::App;\n    // crate::demo\n}\n");
    assert_eq!(imported_modules(&tests), BTreeSet::from(["app".to_owned()]), "unit tests are read, comments are not");
    let climbing = "use super::Shard;\nuse super::super::platform::x;\nfn f() { super::super::super::config::load() }";
    assert_eq!(reached_by_super(climbing, 2), BTreeSet::from(["platform".to_owned(), "config".to_owned()]));
    let src = Path::new("src");
    assert_eq!((depth_of(Path::new("src/engine/gate.rs"), src), depth_of(Path::new("src/engine/mod.rs"), src)), (2, 1));
}
