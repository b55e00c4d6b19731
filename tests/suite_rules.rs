//! The test suite's own rule, checked on its source: a test that needs something
//! installed (a real backend, PostgreSQL, Chromium) is `#[ignore]`d with the reason, so a plain
//! `cargo test` reports it ignored, never passed; `-- --include-ignored` runs it, and
//! it fails there when the prerequisite is missing.
//!
//! A test needs a prerequisite when its body, or a function of its file it calls
//! (followed through the file's own functions, by name and `impl`), asks for one:
//! `backends::installed`, `TestDatabase::postgres` (or `TestStore::postgres`, a store
//! on one), `schema_on`, the browser's `Driver::start` or the Matrix homeserver's
//! `Synapse::start` (or `start_with`). The reading is line-based, as rustfmt leaves
//! the files; its own test below shows what it follows.

use std::path::Path;

/// What a test asks for when it needs something installed.
const PREREQUISITES: &[&str] =
    &["installed(", "TestDatabase::postgres(", "TestStore::postgres(", "TestDatabase::schema_on(", "Driver::start(", "Synapse::start(", "Synapse::start_with("];

/// One `fn` of a test file: its name, the type whose `impl` holds it, whether it is a
/// test, whether it is ignored, and its text up to the next `fn`.
struct Function {
    name: String,
    owner: Option<String>,
    test: bool,
    ignored: bool,
    body: String,
}

fn ident(s: &str) -> String {
    s.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$').collect()
}

/// The type an `impl` line is for: `impl Harness {`, `impl Person for OnTelegram {`.
fn impl_type(line: &str) -> Option<String> {
    let rest = line.strip_prefix("impl")?;
    let rest = rest.split('{').next()?;
    let target = rest.rsplit(" for ").next()?.trim();
    let target = target.strip_prefix('<').map_or(target, |t| t.split_once('>').map_or(t, |(_, after)| after.trim()));
    Some(ident(target)).filter(|t| !t.is_empty())
}

/// The file's functions in order. Attributes are the lines just above the `fn` line.
fn functions(text: &str) -> Vec<Function> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found: Vec<Function> = Vec::new();
    let mut owner: Option<String> = None;
    for (at, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        if let Some(target) = impl_type(trimmed) {
            owner = Some(target);
        } else if *line == "}" {
            owner = None;
        }
        let signature = trimmed.strip_prefix("pub ").unwrap_or(trimmed);
        let Some(rest) = signature.strip_prefix("async fn ").or_else(|| signature.strip_prefix("fn ")) else {
            if let Some(last) = found.last_mut() {
                last.body.push_str(line);
                last.body.push('\n');
            }
            continue;
        };
        let attributes: Vec<&str> = lines[..at].iter().rev().map(|l| l.trim()).take_while(|l| l.starts_with("#[") || l.starts_with("///")).collect();
        let test = attributes.iter().any(|a| a.starts_with("#[tokio::test") || *a == "#[test]");
        let ignored = attributes.iter().any(|a| a.starts_with("#[ignore"));
        found.push(Function { name: ident(rest), owner: owner.clone(), test, ignored, body: format!("{line}\n") });
    }
    found
}

/// Whether `caller` calls `callee`: `Type::name(` (or `Self::name(` inside the same
/// `impl`) for an associated function, a bare `name(` for a free one; a method call
/// `.name(` only when no other function of the file has that name.
fn calls(caller: &Function, callee: &Function, all: &[Function]) -> bool {
    let name = &callee.name;
    if name.starts_with('$') {
        return false;
    }
    let unique = all.iter().filter(|f| &f.name == name).count() == 1;
    if unique && caller.body.contains(&format!(".{name}(")) {
        return true;
    }
    match &callee.owner {
        Some(owner) => {
            caller.body.contains(&format!("{owner}::{name}(")) || (caller.owner.as_ref() == Some(owner) && caller.body.contains(&format!("Self::{name}(")))
        }
        None => caller.body.match_indices(&format!("{name}(")).any(|(at, _)| {
            let before = &caller.body[..at];
            let plain = !before.ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '.' || c == ':');
            plain || before.ends_with("super::")
        }),
    }
}

/// The tests of `text` that need a prerequisite and are not ignored.
fn unignored_needing_prerequisites(text: &str) -> Vec<String> {
    let functions = functions(text);
    // Which functions need a prerequisite, directly or through one of the file's own.
    let mut needs: Vec<bool> = functions.iter().map(|f| PREREQUISITES.iter().any(|p| f.body.contains(p))).collect();
    loop {
        let mut changed = false;
        for (i, caller) in functions.iter().enumerate() {
            if needs[i] {
                continue;
            }
            if functions.iter().enumerate().any(|(j, callee)| needs[j] && j != i && calls(caller, callee, &functions)) {
                needs[i] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    functions.iter().zip(&needs).filter(|(f, need)| f.test && !f.ignored && **need).map(|(f, _)| f.name.clone()).collect()
}

#[test]
fn a_test_that_needs_something_installed_is_ignored_with_the_reason() {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut wrong = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(&tests).expect("tests/ is readable").map(|e| e.expect("an entry").path()).collect();
    files.sort();
    for file in files.iter().filter(|p| p.extension().is_some_and(|e| e == "rs")) {
        if file.file_name().is_some_and(|n| n == "suite_rules.rs") {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("a test file is readable");
        for name in unignored_needing_prerequisites(&text) {
            wrong.push(format!("{}: `{name}` needs an install but is not #[ignore = \"needs …\"]", file.file_name().unwrap_or_default().to_string_lossy()));
        }
    }
    assert!(wrong.is_empty(), "tests that would pass silently, or fail, where the prerequisite is missing:\n{}", wrong.join("\n"));
}

#[test]
fn the_check_follows_helpers_and_sees_a_missing_ignore() {
    let text = r#"
async fn rig() -> Rig {
    let venv = backends::installed("kimi")?;
}

#[tokio::test]
async fn through_a_helper() {
    let rig = rig().await;
}

#[tokio::test]
#[ignore = "needs kimi"]
async fn ignored() {
    let rig = rig().await;
}

#[tokio::test]
async fn needs_nothing() {
    let db = TestDatabase::sqlite();
    let other = Api::start().await;
}

impl Api {
    async fn start() -> Api {}
}

impl Client {
    fn start() -> Option<Client> {
        Self::run()
    }
    fn run() -> Option<Client> {
        backends::installed("client")?;
    }
}

#[tokio::test]
async fn through_a_method() {
    let client = Client::start();
}
"#;
    assert_eq!(unignored_needing_prerequisites(text), vec!["through_a_helper".to_owned(), "through_a_method".to_owned()]);
}
