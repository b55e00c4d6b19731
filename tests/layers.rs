//! The layer rule, checked on the source: a module of `src/` may use the modules of
//! the layers below its own, never one above it, and never a sibling of its own layer.
//! The order is written once, here ([`LAYERS`]); `src/lib.rs` and
//! `docs/architecture.md` describe it in words.
//!
//! Inside the adapters' layer the same holds between folders: each folder of
//! `src/platform/` is one platform, and each of `src/backend/` one backend (but the
//! parts they share, [`SHARED_FOLDERS`]). One platform never uses another, nor one
//! backend another; only the platforms' registry (`src/platform/registry.rs`) names a
//! platform from outside its folder, and only the backends' (`src/backend/registry.rs`)
//! a backend (but [`UNREGISTERED`]); only the assembly ([`REGISTRY_READERS`]) reads
//! either registry ([`folder_rules`]).
//!
//! Imports are read as `crate::` paths, `super::` and `self::` paths and the paths a
//! module names through its own submodules, outside comments; unit-test modules are
//! read too, those in a file of their own (`tests.rs`) included (the core's tests use
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
const ASSEMBLED_TESTS: &[&str] = &["engine/rules.rs"];

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

/// Every import of the tree under `src` that breaks the layer order or a folder rule,
/// one line each.
fn violations(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let adapters = Adapters::of(src);
    let mut wrong = Vec::new();
    for file in &files {
        let Some(module) = module_of(file, src) else { continue };
        let Some(own) = layer_of(&module) else {
            wrong.push(format!("{}: module `{module}` has no layer; give it one in tests/layers.rs", file.display()));
            continue;
        };
        let text = std::fs::read_to_string(file).expect("a source file is readable");
        let depth = depth_of(file, src);
        let relative = file.strip_prefix(src).unwrap_or(file).to_string_lossy().into_owned();
        // A unit-test module in a file of its own (`#[cfg(test)] mod tests;`) is all
        // test code, one module below its parent as its path says.
        let shipped = shipped_code(&text);
        let mut used_modules = imported_modules(&shipped);
        used_modules.extend(reached_by_super(&shipped, depth));
        let here = module_path(file, src);
        let children = |name: &str| is_child_module(file, name);
        let mut used_paths = paths_used(&shipped, &here, &children);
        if !ASSEMBLED_TESTS.contains(&relative.as_str()) {
            let tests = test_code(&text);
            used_modules.extend(imported_modules(&tests));
            used_modules.extend(reached_by_super(&tests, depth + 1));
            let in_tests: Vec<String> = here.iter().cloned().chain(["tests".to_owned()]).collect();
            used_paths.extend(paths_used(&tests, &in_tests, &|_| false));
        }
        for used in used_modules {
            if used == module {
                continue;
            }
            match layer_of(&used) {
                Some(theirs) if theirs < own => {}
                Some(theirs) => wrong.push(format!(
                    "{relative}: `{module}` ({}) uses `crate::{used}` ({}), {}",
                    LAYERS[own].0,
                    LAYERS[theirs].0,
                    if theirs == own { "a sibling in its own layer" } else { "a layer above it" },
                )),
                None => {}
            }
        }
        wrong.extend(folder_rules(&relative, &here, own, &used_paths, &adapters));
    }
    wrong
}

#[test]
fn no_module_imports_a_layer_above_its_own_or_a_sibling() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let wrong = violations(&src);
    assert!(wrong.is_empty(), "imports that break the layer order:\n{}", wrong.join("\n"));
}

/// Folders of the adapters' layer that are parts every adapter beside them may share,
/// not an adapter of their own: `backend/child`, the agent processes Claude Code and
/// Kimi run, and `platform/kit`, what every platform would otherwise write again (it
/// names no platform, as the registry rule checks). Every other folder of `src/platform/` is a platform, and of
/// `src/backend/` a backend, so a new one is held to the rules from its first line.
const SHARED_FOLDERS: &[&str] = &["backend/child", "platform/kit"];

/// Adapters that are no registry's: `backend/http_api`, the inbound HTTP API, serves
/// the `api:` sessions beside whichever backend serves the chats, and the assembly
/// starts it by name. It is still held apart from the backends beside it.
const UNREGISTERED: &[&str] = &["backend/http_api"];

/// The layers whose modules may read the registries: the assembly (configuration, the
/// app, the admin commands, pairing and the demo; `main.rs`, a crate root, too). The
/// rest is handed what it needs from them.
const REGISTRY_READERS: &[&str] = &["configuration", "assembly and commands"];

/// The registries, each the one file that names every adapter of its kind: the
/// platforms' and the backends'.
const REGISTRIES: [[&str; 2]; 2] = [["platform", "registry"], ["backend", "registry"]];

/// The registry of the adapters of `kind` (`platform`), as a module path.
fn registry_of(kind: &str) -> Option<Vec<String>> {
    REGISTRIES.iter().find(|[k, _]| *k == kind).map(|r| r.map(str::to_owned).to_vec())
}

/// The adapters of the tree: each folder of `src/platform/` and `src/backend/` but the
/// [`SHARED_FOLDERS`], as (`platform`, `telegram`).
struct Adapters(BTreeSet<(String, String)>);

impl Adapters {
    fn of(src: &Path) -> Self {
        let mut adapters = BTreeSet::new();
        for kind in ["platform", "backend"] {
            let Ok(entries) = std::fs::read_dir(src.join(kind)) else { continue };
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if entry.path().is_dir() && !SHARED_FOLDERS.contains(&format!("{kind}/{name}").as_str()) {
                    adapters.insert((kind.to_owned(), name));
                }
            }
        }
        Self(adapters)
    }

    /// The adapter a module path is in or names (`platform::telegram::chat`: Telegram).
    fn of_path<'a>(&'a self, path: &[String]) -> Option<&'a (String, String)> {
        let [kind, name, ..] = path else { return None };
        self.0.iter().find(|(k, n)| k == kind && n == name)
    }
}

/// The folder rules, for the file `relative` (module `here`, in layer `own`) that uses
/// `used`: a platform or backend never uses another of its kind; no file but its
/// registry names a platform or a backend from outside its folder; only the assembly
/// reads a registry.
fn folder_rules(relative: &str, here: &[String], own: usize, used: &BTreeSet<Vec<String>>, adapters: &Adapters) -> Vec<String> {
    let mine = adapters.of_path(here);
    let is_registry = |kind: &str| registry_of(kind).is_some_and(|registry| here.starts_with(&registry));
    let reads_registry = REGISTRY_READERS.contains(&LAYERS[own].0);
    let mut wrong = BTreeSet::new();
    for path in used {
        let named = |n: &(String, String)| format!("`{}::{}`", n.0, n.1);
        if let Some(theirs) = adapters.of_path(path)
            && mine != Some(theirs)
        {
            let registered = !UNREGISTERED.contains(&format!("{}/{}", theirs.0, theirs.1).as_str());
            match mine {
                Some(mine) if mine.0 == theirs.0 => {
                    wrong.insert(format!("{relative}: {} uses {}, another {} of its layer", named(mine), named(theirs), theirs.0));
                }
                _ if registered && !is_registry(&theirs.0) => {
                    wrong.insert(format!(
                        "{relative}: names the {} {}; only the registry (`{}::registry`) names {}s",
                        theirs.0,
                        named(theirs),
                        theirs.0,
                        theirs.0
                    ));
                }
                _ => {}
            }
        }
        for registry in REGISTRIES {
            let registry = registry.map(str::to_owned);
            if path.starts_with(&registry) && !here.starts_with(&registry) && !reads_registry {
                wrong.insert(format!(
                    "{relative}: reads `{}`; only the assembly does ({}), and hands the rest what it needs",
                    registry.join("::"),
                    REGISTRY_READERS.join(", ")
                ));
            }
        }
    }
    wrong.into_iter().collect()
}

/// The module path of a file of `src/` (`src/engine/gate.rs`: `engine::gate`;
/// `src/engine/mod.rs`: `engine`); empty for the crate roots.
fn module_path(path: &Path, src: &Path) -> Vec<String> {
    let relative = path.strip_prefix(src).unwrap_or(path);
    let mut parts: Vec<String> = relative.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    if let Some(last) = parts.pop() {
        let name = last.strip_suffix(".rs").unwrap_or(&last).to_owned();
        let root = parts.is_empty() && ["lib", "main"].contains(&name.as_str());
        if name != "mod" && !root {
            parts.push(name);
        }
    }
    parts
}

/// Whether `name` is a submodule of the module the file is (`src/platform/mod.rs`:
/// `registry`, for `src/platform/registry.rs`).
fn is_child_module(file: &Path, name: &str) -> bool {
    let Some(dir) = file.parent() else { return false };
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    let own_dir = if ["mod", "lib", "main"].contains(&stem) { dir.to_path_buf() } else { dir.join(stem) };
    own_dir.join(format!("{name}.rs")).is_file() || own_dir.join(name).is_dir()
}

/// Every path into the crate that `code`, of module `here`, names: `crate::` paths,
/// `super::` and `self::` paths, and paths through a submodule (`is_child`), each
/// from the crate root, with every item of a `{…}` group its own path.
fn paths_used(code: &str, here: &[String], is_child: &dyn Fn(&str) -> bool) -> BTreeSet<Vec<String>> {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut found = BTreeSet::new();
    let mut at = 0;
    while at < code.len() {
        let rest = &code[at..];
        let Some(first) = rest.chars().next() else { break };
        let word: String = rest.chars().take_while(|c| is_ident(*c)).collect();
        if word.is_empty() {
            at += first.len_utf8();
            continue;
        }
        let before = &code[..at];
        let starts_a_path = !before.ends_with(is_ident) && !before.ends_with("::") && rest[word.len()..].starts_with("::");
        if starts_a_path {
            let base: Option<Vec<String>> = match word.as_str() {
                "crate" => Some(Vec::new()),
                "self" => Some(here.to_vec()),
                "super" => here.split_last().map(|(_, parent)| parent.to_vec()),
                child if is_child(child) => Some(here.iter().cloned().chain([child.to_owned()]).collect()),
                _ => None,
            };
            if let Some(base) = base {
                // The whole path at once, so a `super::` inside its group is not read
                // again from here.
                at += word.len() + 2 + tree(&rest[word.len() + 2..], base, &mut found);
                continue;
            }
        }
        at += word.len();
    }
    found
}

/// Reads the rest of a path after `prefix::` (`super::x`, `a::b`, `{a, b::{c, self}}`)
/// into `found`, one path for each leaf; returns how much of `rest` the path takes.
fn tree(rest: &str, mut prefix: Vec<String>, found: &mut BTreeSet<Vec<String>>) -> usize {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut at = rest.len() - rest.trim_start().len();
    loop {
        let here = &rest[at..];
        if let Some(group) = here.strip_prefix('{') {
            let mut depth = 0;
            let mut item = 0;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        leaf_or_tree(&group[item..i], &prefix, found);
                        return at + 1 + i + 1;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        leaf_or_tree(&group[item..i], &prefix, found);
                        item = i + 1;
                    }
                    _ => {}
                }
            }
            return rest.len();
        }
        let word: String = here.chars().take_while(|c| is_ident(*c)).collect();
        match word.as_str() {
            "" => break,
            "super" => {
                if prefix.pop().is_none() {
                    return at + word.len(); // above the crate root: not a path of this crate
                }
            }
            "self" => {}
            _ => prefix.push(word.clone()),
        }
        at += word.len();
        match rest[at..].strip_prefix("::") {
            Some(after) => at = rest.len() - after.trim_start().len(),
            None => break,
        }
    }
    if !prefix.is_empty() {
        found.insert(prefix);
    }
    at
}

/// One item of a `{…}` group: `self` is the group's own path.
fn leaf_or_tree(item: &str, prefix: &[String], found: &mut BTreeSet<Vec<String>>) {
    if !item.trim().is_empty() {
        tree(item, prefix.to_vec(), found);
    }
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

#[test]
fn paths_are_read_whole_from_the_crate_root() {
    let here = ["platform".to_owned(), "alpha".to_owned(), "chat".to_owned()];
    let code =
        "use super::{text, super::beta::{self, Code}};\nuse crate::{store::Store, platform::registry};\nfn f() { self::lanes::run(); ui::draw(); other::x() }";
    let found = paths_used(code, &here, &|name| name == "ui");
    let path = |p: &str| p.split("::").map(str::to_owned).collect::<Vec<_>>();
    let expected = [
        "platform::alpha::text",
        "platform::beta",
        "platform::beta::Code",
        "store::Store",
        "platform::registry",
        "platform::alpha::chat::lanes::run",
        "platform::alpha::chat::ui::draw",
    ];
    assert_eq!(found, expected.iter().map(|p| path(p)).collect::<BTreeSet<_>>(), "an unknown `other::` is not a path of the crate");
    assert_eq!(module_path(Path::new("src/engine/tests.rs"), Path::new("src")), path("engine::tests"));
    assert_eq!(module_path(Path::new("src/platform/mod.rs"), Path::new("src")), path("platform"));
}

/// A throwaway tree of sources under `src/`, as (path, text), in a fresh folder.
fn throwaway(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary folder");
    for (path, text) in files {
        let file = dir.path().join("src").join(path);
        std::fs::create_dir_all(file.parent().expect("a folder")).expect("the folder is made");
        std::fs::write(&file, text).expect("the file is written");
    }
    dir
}

/// A small bridge that keeps every rule: two platforms and their registry, and two
/// backends that share a part and their registry, both read by the app; an inbound
/// API no registry lists; a front end handed what it needs.
const KEEPS_THE_RULES: &[(&str, &str)] = &[
    ("lib.rs", "pub mod app;\npub mod backend;\npub mod platform;\npub mod web;\n"),
    ("platform/mod.rs", "pub mod alpha;\npub mod beta;\npub mod descriptor;\npub mod registry;\n"),
    ("platform/descriptor.rs", "//! Names no platform: see [`crate::platform::alpha`] in a comment only.\npub trait Descriptor {}\n"),
    ("platform/registry.rs", "use super::{alpha, beta};\npub static NAMES: [&str; 2] = [alpha::NAME, beta::NAME];\n"),
    ("platform/alpha/mod.rs", "pub mod chat;\nuse crate::platform::descriptor::Descriptor;\npub const NAME: &str = \"alpha\";\n"),
    ("platform/alpha/chat.rs", "use super::NAME;\nuse super::super::descriptor::Descriptor;\n"),
    ("platform/beta/mod.rs", "#[cfg(test)]\nmod tests;\npub const NAME: &str = \"beta\";\n"),
    ("platform/beta/tests.rs", "use super::NAME;\n"),
    ("backend/mod.rs", "pub mod child;\npub mod descriptor;\npub mod http_api;\npub mod one;\npub mod registry;\npub mod two;\n"),
    ("backend/child.rs", "pub fn spawn() {}\n"),
    ("backend/child/registry.rs", "pub struct Registry;\n"),
    ("backend/descriptor.rs", "//! Names no backend: see [`crate::backend::one`] in a comment only.\npub trait BackendDescriptor {}\n"),
    ("backend/registry.rs", "use super::{one, two};\npub static KINDS: [&str; 2] = [one::KIND, two::KIND];\n"),
    ("backend/one/mod.rs", "use crate::backend::child::spawn;\nuse crate::backend::descriptor::BackendDescriptor;\npub const KIND: &str = \"one\";\n"),
    ("backend/two/mod.rs", "use super::super::child;\npub const KIND: &str = \"two\";\n"),
    ("backend/http_api/mod.rs", "pub struct Api;\n"),
    ("web/mod.rs", "use crate::backend::http_api::Api;\npub fn new(names: &[&str]) -> usize { names.len() }\n"),
    (
        "app.rs",
        "use crate::platform::registry::NAMES;\nuse crate::backend::{http_api::Api, registry::KINDS};\npub fn run() -> usize { crate::web::new(&NAMES) + KINDS.len() }\n",
    ),
];

/// [`KEEPS_THE_RULES`] with `path` written as `text`: what the check says of it.
fn violations_with(path: &str, text: &str) -> Vec<String> {
    let mut files: Vec<(&str, &str)> = KEEPS_THE_RULES.iter().filter(|(p, _)| *p != path).copied().collect();
    files.push((path, text));
    let dir = throwaway(&files);
    violations(&dir.path().join("src"))
}

#[test]
fn the_check_fails_a_platform_that_imports_another_platform() {
    let dir = throwaway(KEEPS_THE_RULES);
    assert_eq!(violations(&dir.path().join("src")), Vec::<String>::new(), "the throwaway bridge keeps every rule");

    let alpha_uses_beta = "platform/alpha/chat.rs: `platform::alpha` uses `platform::beta`, another platform of its layer";
    for import in ["use crate::platform::beta::NAME;\n", "use super::super::beta;\n", "use crate::platform::{beta::NAME, descriptor};\n"] {
        assert_eq!(violations_with("platform/alpha/chat.rs", import), [alpha_uses_beta], "{import}");
    }
    let in_its_tests = violations_with("platform/beta/tests.rs", "use crate::platform::alpha::NAME;\n");
    assert_eq!(in_its_tests, ["platform/beta/tests.rs: `platform::beta` uses `platform::alpha`, another platform of its layer"], "a tests.rs is read");
    let in_a_test_module = violations_with("platform/alpha/chat.rs", "#[cfg(test)]\nmod tests {\n    use super::super::super::beta::NAME;\n}\n");
    assert_eq!(in_a_test_module, [alpha_uses_beta]);
}

#[test]
fn the_check_fails_a_backend_using_another_and_a_reader_of_the_registry_below_the_assembly() {
    assert_eq!(
        violations_with("backend/one/mod.rs", "use crate::backend::two;\n"),
        ["backend/one/mod.rs: `backend::one` uses `backend::two`, another backend of its layer"]
    );
    assert_eq!(
        violations_with("platform/alpha/chat.rs", "fn all() -> usize { crate::platform::registry::NAMES.len() }\n"),
        ["platform/alpha/chat.rs: reads `platform::registry`; only the assembly does (configuration, assembly and commands), and hands the rest what it needs"]
    );
    assert_eq!(
        violations_with("web/mod.rs", "use crate::platform::registry::NAMES;\n"),
        ["web/mod.rs: reads `platform::registry`; only the assembly does (configuration, assembly and commands), and hands the rest what it needs"]
    );
    assert_eq!(
        violations_with("platform/descriptor.rs", "use super::alpha::NAME;\n"),
        ["platform/descriptor.rs: names the platform `platform::alpha`; only the registry (`platform::registry`) names platforms"]
    );
    assert_eq!(
        violations_with("platform/mod.rs", "pub mod alpha;\npub mod beta;\npub mod descriptor;\npub mod registry;\npub use registry::NAMES;\n"),
        ["platform/mod.rs: reads `platform::registry`; only the assembly does (configuration, assembly and commands), and hands the rest what it needs"]
    );
}

#[test]
fn the_check_fails_a_backend_named_or_its_registry_read_outside_the_assembly() {
    let reads = |file: &str| {
        format!("{file}: reads `backend::registry`; only the assembly does (configuration, assembly and commands), and hands the rest what it needs")
    };
    assert_eq!(
        violations_with("backend/two/mod.rs", "pub const KIND: &str = \"two\";\nfn all() -> usize { crate::backend::registry::KINDS.len() }\n"),
        [reads("backend/two/mod.rs")]
    );
    assert_eq!(violations_with("web/mod.rs", "use crate::backend::registry::KINDS;\n"), [reads("web/mod.rs")]);
    assert_eq!(violations_with("backend/descriptor.rs", "use super::registry::KINDS;\n"), [reads("backend/descriptor.rs")]);
    let names_two = "names the backend `backend::two`; only the registry (`backend::registry`) names backends";
    assert_eq!(violations_with("app.rs", "use crate::backend::two::KIND;\n"), [format!("app.rs: {names_two}")]);
    assert_eq!(violations_with("backend/descriptor.rs", "use super::two::KIND;\n"), [format!("backend/descriptor.rs: {names_two}")]);
    assert_eq!(
        violations_with("backend/one/mod.rs", "use super::http_api::Api;\n"),
        ["backend/one/mod.rs: `backend::one` uses `backend::http_api`, another backend of its layer"],
        "the inbound API no registry lists is still a backend apart"
    );
}
