//! The documentation stays true to the repository and to the binary:
//!
//! - every relative link in README.md, docs/**/*.md and clients/python/README.md
//!   resolves to a file (and, with `#anchor`, a heading) inside the repository, and no
//!   link leaves it (`../shared/…`, absolute paths);
//! - docs/configuration.md names every configuration key (a chat platform's are on its
//!   page, `docs/<platform>.md`), and no page names a key that does not exist. The keys come from the binary: `hitl-bridge check-config` prints the
//!   effective configuration as JSON, every key of every section included (unset
//!   optional keys as `null`). Only `[[policies]]` entries and their unset keys are
//!   left out of that print, so the test gives it a config with policies that set every
//!   policy key;
//! - README.md stays a front door: at most 300 lines;
//! - the blocks generated from the platform and backend registries are current: the
//!   tables of docs/configuration.md, the platforms' and backends' sections of
//!   config/default.toml (and the Helm chart's copy), the adapters' row of
//!   docs/architecture.md's layers table and docs/development.md's list of adapters.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md, clients/python/README.md and every Markdown file under docs/.
fn documents() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut out = vec![root().join("README.md"), root().join("clients/python/README.md")];
    walk(&root().join("docs"), &mut out);
    out
}

/// The document's lines outside fenced code blocks, with inline code spans blanked
/// (a link written as code is not a link).
fn prose_lines(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut kept = String::new();
        for (i, part) in line.split('`').enumerate() {
            kept.push_str(if i % 2 == 0 { part } else { "" });
        }
        out.push(kept);
    }
    out
}

/// Link targets: inline `[text](target)` and reference definitions `[label]: target`.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose_lines(text) {
        let trimmed = line.trim_start();
        if trimmed.starts_with('[')
            && let Some(end) = trimmed.find("]:")
            && !trimmed[..end].contains('(')
        {
            if let Some(target) = trimmed[end + 2..].split_whitespace().next() {
                out.push(target.trim_matches(['<', '>']).to_owned());
            }
            continue;
        }
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            // Up to the matching `)`: targets such as `docs/x.md#a-(b)` keep their parentheses.
            let mut depth = 0;
            let mut end = None;
            for (i, c) in after.char_indices() {
                match c {
                    '(' => depth += 1,
                    ')' if depth == 0 => {
                        end = Some(i);
                        break;
                    }
                    ')' => depth -= 1,
                    _ => {}
                }
            }
            let Some(end) = end else { break };
            let target = after[..end].split_whitespace().next().unwrap_or("").trim_matches(['<', '>']);
            out.push(target.to_owned());
            rest = &after[end..];
        }
    }
    out
}

/// GitHub's anchors for the headings of a Markdown text: lower case, letters, digits,
/// `-` and `_` kept, spaces made `-`, everything else dropped; repeats get `-1`, `-2`.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut fenced = false;
    let mut seen = BTreeSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let heading = line.trim_start_matches('#').trim();
        let slug: String = heading
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut candidate = slug.clone();
        let mut n = 0;
        while seen.contains(&candidate) {
            n += 1;
            candidate = format!("{slug}-{n}");
        }
        seen.insert(candidate);
    }
    seen
}

/// `from` joined with a relative `target`, normalized; `None` when it climbs above the
/// repository root.
fn resolve(from_dir: &Path, target: &str) -> Option<PathBuf> {
    let root = root();
    let mut parts: Vec<String> = from_dir.strip_prefix(&root).ok()?.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    for component in Path::new(target).components() {
        match component {
            Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(parts.iter().fold(root, |path, part| path.join(part)))
}

/// Everything wrong with the links of one document.
fn link_problems(doc: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(doc).unwrap();
    let name = doc.strip_prefix(root()).unwrap().display().to_string();
    let mut problems = Vec::new();
    for target in links(&text) {
        if target.is_empty() {
            problems.push(format!("{name}: an empty link"));
            continue;
        }
        if target.contains("://") || target.starts_with("mailto:") {
            continue; // a web page, not a file of the repository
        }
        let (path, anchor) = match target.split_once('#') {
            Some((path, anchor)) => (path, Some(anchor)),
            None => (target.as_str(), None),
        };
        let path = path.split('?').next().unwrap_or_default().replace("%20", " ");
        let file = if path.is_empty() {
            doc.to_path_buf()
        } else if path.starts_with('/') {
            problems.push(format!("{name}: `{target}` is an absolute path; link relative to the file"));
            continue;
        } else {
            match resolve(doc.parent().unwrap(), &path) {
                Some(file) => file,
                None => {
                    problems.push(format!("{name}: `{target}` points outside the repository"));
                    continue;
                }
            }
        };
        if !file.exists() {
            problems.push(format!("{name}: `{target}` does not exist"));
            continue;
        }
        if let Some(anchor) = anchor
            && file.extension().is_some_and(|e| e == "md")
            && !anchors(&std::fs::read_to_string(&file).unwrap()).contains(anchor)
        {
            problems.push(format!("{name}: `{target}`: no heading with the anchor #{anchor}"));
        }
    }
    problems
}

#[test]
fn every_relative_link_resolves_inside_the_repository() {
    let docs = documents();
    assert!(docs.len() >= 10, "expected the README and the guides, found {docs:?}");
    let problems: Vec<String> = docs.iter().flat_map(|d| link_problems(d)).collect();
    assert!(problems.is_empty(), "broken links:\n{}", problems.join("\n"));
}

/// The checker itself: a link out of the repository, a missing file and a missing
/// anchor are each caught; good links pass.
#[test]
fn the_link_checker_catches_what_it_should() {
    let dir = root().join("docs");
    let doc = dir.join("protocol.md");
    let probe = |target: &str| {
        let text = format!("# Title\n\nSee [it]({target}).\n");
        let problems: Vec<String> = links(&text)
            .into_iter()
            .filter_map(|t| {
                if t.contains("://") {
                    return None;
                }
                let (path, anchor) = t.split_once('#').map_or((t.as_str(), None), |(p, a)| (p, Some(a)));
                let Some(file) = (if path.is_empty() { Some(doc.clone()) } else { resolve(&dir, path) }) else {
                    return Some("outside".to_owned());
                };
                if !file.exists() {
                    return Some("missing".to_owned());
                }
                match anchor {
                    Some(a) if !anchors(&std::fs::read_to_string(&file).unwrap()).contains(a) => Some("anchor".to_owned()),
                    _ => None,
                }
            })
            .collect();
        problems.join(",")
    };
    assert_eq!(probe("../../shared/PROTOCOL.md"), "outside");
    assert_eq!(probe("../shared/PROTOCOL.md"), "missing");
    assert_eq!(probe("nowhere.md"), "missing");
    assert_eq!(probe("protocol.md#no-such-heading"), "anchor");
    assert_eq!(probe("protocol.md#part-2-the-http-api"), "");
    assert_eq!(probe("../README.md"), "");
    assert_eq!(probe("https://t.me/BotFather"), "");
    assert_eq!(
        anchors("# A → b\n## GET /v1/requests/{approval_key}\n## A → b\n```\n# not a heading\n```\n"),
        ["a--b", "a--b-1", "get-v1requestsapproval_key"].into_iter().map(String::from).collect()
    );
    assert_eq!(links("[a](x.md) `[b](y.md)` [c](z.md#q)\n```\n[d](w.md)\n```\n[ref]: r.md\n"), ["x.md", "z.md#q", "r.md"]);
}

/// Every key `check-config` prints, as `section.key`, `policies[].key` and
/// `policies[].escalation[].key`. Sections are objects whose members are keys (a
/// member that is itself a map, such as `telegram.chat_locales`, is one key); arrays of
/// objects (the policies, their steps) are walked as `name[]`.
fn configuration_keys() -> BTreeSet<String> {
    let default = std::fs::read_to_string(root().join("config/default.toml")).unwrap();
    // Two policies, because `remember` may not go with a quorum above 1; between them
    // every key of a policy and of an escalation step is set.
    let policies = r#"
[[policies]]
name = "every-key"
tools = ["run_migration"]
backends = ["stream"]
sessions = ["deploy-*"]
targets = ["console"]
approvers = ["telegram:1", "telegram:2"]
approver_roles = ["900"]
quorum = 2
escalation = [
  { after = "5m", remind = "approvers" },
  { after = "15m", show_in = "console" },
  { after = "30m", fallback = "reject" },
]

[[policies]]
tools = ["read_*"]
remember = ["session"]
remember_args = "any"
"#;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, format!("{default}\n{policies}")).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hitl-bridge"));
    cmd.current_dir(root()).arg("check-config").arg("--config").arg(&path);
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("HITL_BRIDGE__")) {
        cmd.env_remove(key);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "check-config: {}", String::from_utf8_lossy(&out.stderr));
    let printed: Value = serde_json::from_slice(&out.stdout).expect("check-config prints JSON");

    fn walk(prefix: &str, value: &Value, is_section: bool, out: &mut BTreeSet<String>) {
        let join = |key: &str| if prefix.is_empty() { key.to_owned() } else { format!("{prefix}.{key}") };
        match value {
            Value::Object(members) if is_section => {
                for (key, member) in members {
                    walk(&join(key), member, false, out);
                }
            }
            Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_object) => {
                // A nested list of tables (`policies[].escalation`) is a key too.
                if prefix.contains("[]") {
                    out.insert(prefix.to_owned());
                }
                for item in items {
                    for (key, member) in item.as_object().unwrap() {
                        walk(&format!("{prefix}[].{key}"), member, false, out);
                    }
                }
            }
            _ => {
                out.insert(prefix.to_owned());
            }
        }
    }
    let mut keys = BTreeSet::new();
    for (section, value) in printed.as_object().expect("an object of sections") {
        walk(section, value, value.is_object(), &mut keys);
    }
    keys
}

/// The keys a document names: the start of every inline code span that begins with a
/// known section and a `.` or `[].`, e.g. `` `backend.url` `` or
/// `` `backend.kind = "kimi"` `` (both `backend.kind`).
fn keys_named(text: &str, sections: &BTreeSet<String>) -> BTreeSet<String> {
    let mut fenced = false;
    let mut named = BTreeSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        for span in line.split('`').skip(1).step_by(2) {
            let token: String = span.chars().take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_.[]".contains(*c)).collect();
            let Some(section) = token.split(['.', '[']).next() else { continue };
            let rest = &token[section.len()..];
            // `policies[0]` is an entry, not a key; `policies[].quorum` is a key.
            if sections.contains(section) && (rest.starts_with('.') || rest.starts_with("[].")) {
                named.insert(token.trim_end_matches('.').to_owned());
            }
        }
    }
    named
}

#[test]
fn configuration_md_documents_every_key_and_only_real_ones() {
    let keys = configuration_keys();
    // The binary's own sections are all there (a broken print would pass vacuously).
    for expected in [
        "backend.url",
        "store.url",
        "access.users",
        "telegram.chat_locales",
        "discord.guild_id",
        "http.api_tokens",
        "kimi.env",
        "policies[].quorum",
        "policies[].escalation",
        "policies[].escalation[].fallback",
    ] {
        assert!(keys.contains(expected), "check-config no longer prints `{expected}`: {keys:?}");
    }
    // A chat platform's keys are documented on its page; every other key here.
    let page_of = |section: &str| {
        hitl_bridge::platform::registry::descriptor(section).map_or_else(|| "docs/configuration.md".to_owned(), hitl_bridge::platform::registry::docs_page)
    };
    let sections: BTreeSet<String> = keys.iter().map(|k| k.split(['.', '[']).next().unwrap().to_owned()).collect();
    let mut pages: BTreeSet<String> = sections.iter().map(|s| page_of(s)).collect();
    pages.insert("docs/configuration.md".to_owned());
    for page in &pages {
        let doc = std::fs::read_to_string(root().join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        let missing: Vec<&String> = keys.iter().filter(|k| page_of(k.split(['.', '[']).next().unwrap()) == *page && !doc.contains(&format!("`{k}`"))).collect();
        assert!(missing.is_empty(), "{page} does not document: {missing:?}");
        let unknown: Vec<String> = keys_named(&doc, &sections).into_iter().filter(|k| !keys.contains(k)).collect();
        assert!(unknown.is_empty(), "{page} names keys that do not exist: {unknown:?}");
    }
    assert!(pages.contains("docs/slack.md"), "the platforms' pages were not read: {pages:?}");
}

#[test]
fn keys_named_reads_code_spans_only() {
    let sections: BTreeSet<String> = ["backend", "policies"].into_iter().map(String::from).collect();
    let named = keys_named(
        "`backend.kind = \"kimi\"`, `backend.colour`, backend.nope, `policies[].quorum`, `policies[0]`, `config/backend.toml`\n```\n`backend.fenced`\n```\n",
        &sections,
    );
    assert_eq!(named, ["backend.colour", "backend.kind", "policies[].quorum"].into_iter().map(String::from).collect());
}

#[test]
fn readme_is_a_front_door() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines <= 300, "README.md has {lines} lines; move details to a guide in docs/");
    // CI runs these two commands as the README gives them.
    assert!(readme.contains("cargo test --locked"), "the README's test command is gone");
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    assert!(
        readme.contains("cargo test --locked -- --include-ignored") && ci.contains("cargo test --locked -- --include-ignored"),
        "CI runs the whole suite with the command the README gives for it"
    );
    assert!(readme.contains("cargo run --release -- demo"), "the README's demo command is gone");
}

/// The docs' generated tables, and the platforms' and backends' sections in
/// `config/default.toml` (and the Helm chart's copy), say what the registries say now: a
/// platform or backend added to its registry shows in them. `HITL_BRIDGE_BLESS_DOCS=1`
/// rewrites them.
#[test]
fn generated_tables_follow_the_registry() {
    use hitl_bridge::{backend, platform};
    for (doc, markers, name, table) in [
        ("docs/configuration.md", MARKDOWN, "addresses", platform::registry::addresses_table()),
        ("docs/configuration.md", MARKDOWN, "sections", platform::registry::sections_table()),
        ("docs/configuration.md", BACKEND_MARKDOWN, "backends", backend::registry::backends_table()),
        ("config/default.toml", TOML, "platform sections", platform::registry::default_sections()),
        ("deploy/helm/hitl-bridge/files/default.toml", TOML, "platform sections", platform::registry::default_sections()),
        ("config/default.toml", BACKEND_TOML, "backend sections", backend::registry::default_sections()),
        ("deploy/helm/hitl-bridge/files/default.toml", BACKEND_TOML, "backend sections", backend::registry::default_sections()),
        ("docs/architecture.md", ROW, "| adapters |", adapters_row()),
        ("docs/development.md", REGISTRIES_MARKDOWN, "adapters", adapters_list()),
    ] {
        let stale = regenerate(doc, markers, name, &table);
        assert!(
            stale.is_none(),
            "{doc}'s generated block {name:?} is out of date; run HITL_BRIDGE_BLESS_DOCS=1 cargo test --test docs. It should read:\n{}",
            stale.unwrap_or_default()
        );
    }
}

/// The adapters' row of docs/architecture.md's layers table: every platform and every
/// backend, by their titles, from the two registries.
fn adapters_row() -> String {
    let platforms: Vec<&str> = hitl_bridge::platform::registry::DESCRIPTORS.iter().map(|d| d.title()).collect();
    let backends: Vec<&str> = hitl_bridge::backend::registry::DESCRIPTORS.iter().map(|d| d.title()).collect();
    format!(
        "| adapters | `platform`, `backend` | the chat platforms ({}); the agent backends ({}) and the inbound HTTP API; each kind listed once, in its registry |",
        platforms.join(", "),
        backends.join(", ")
    )
}

/// docs/development.md's list of the adapters' folders, from the two registries.
fn adapters_list() -> String {
    let folders = |names: Vec<&str>| names.iter().map(|name| format!("`{name}/`")).collect::<Vec<_>>().join(", ");
    let platforms = folders(hitl_bridge::platform::registry::DESCRIPTORS.iter().map(|d| d.network().name()).collect());
    let backends = folders(hitl_bridge::backend::registry::DESCRIPTORS.iter().map(|d| d.name()).collect());
    format!(
        "- the chat platforms, in `src/platform/` ([registry](../src/platform/registry.rs)): {platforms}\n\
         - the agent backends, in `src/backend/` ([registry](../src/backend/registry.rs)): {backends}; beside them the inbound HTTP API, `http_api/`\n"
    )
}

/// How a generated block begins (followed by its name and a line end) and ends.
struct Markers {
    begin: &'static str,
    end: &'static str,
}

const MARKDOWN: Markers = Markers { begin: "<!-- generated from the platform registry: ", end: "<!-- end of generated table -->" };
const TOML: Markers = Markers { begin: "# generated from the platform registry: ", end: "# end of generated sections" };
const BACKEND_MARKDOWN: Markers = Markers { begin: "<!-- generated from the backend registry: ", end: "<!-- end of generated table -->" };
const BACKEND_TOML: Markers = Markers { begin: "# generated from the backend registry: ", end: "# end of generated sections" };
const REGISTRIES_MARKDOWN: Markers = Markers { begin: "<!-- generated from the registries: ", end: "<!-- end of generated list -->" };
/// One row of a Markdown table, which a comment would cut in two: the row whose first
/// cells are the block's name, up to its line's end.
const ROW: Markers = Markers { begin: "", end: "\n" };

/// Compares the generated block `name` of `doc` with `table`: `None` when current (or
/// rewritten, with `HITL_BRIDGE_BLESS_DOCS=1`), else what it should be.
fn regenerate(doc: &str, markers: Markers, name: &str, table: &str) -> Option<String> {
    let path = root().join(doc);
    let text = std::fs::read_to_string(&path).expect("the doc");
    let replaced = splice(&text, &markers, name, table).unwrap_or_else(|| panic!("{doc} has no generated block {name:?}"));
    if replaced == text {
        return None;
    }
    if std::env::var("HITL_BRIDGE_BLESS_DOCS").is_ok_and(|v| v == "1") {
        std::fs::write(&path, replaced).expect("rewrite the doc");
        return None;
    }
    Some(table.to_owned())
}

/// `text` with its generated block `name` holding `table`; `None` without the block.
fn splice(text: &str, markers: &Markers, name: &str, table: &str) -> Option<String> {
    let begin = match markers.begin {
        "" => format!("\n{name}"),
        b if b.starts_with("<!--") => format!("{b}{name} -->\n"),
        b => format!("{b}{name}\n"),
    };
    // A row is replaced from its first cell on (the generated row repeats it); a block,
    // after its first line.
    let kept = if markers.begin.is_empty() { "\n".len() } else { begin.len() };
    let start = text.find(&begin)? + kept;
    let stop = start + text[start..].find(markers.end)?;
    Some(format!("{}{table}{}", &text[..start], &text[stop..]))
}

#[test]
fn a_generated_block_is_replaced_whole_and_only_it() {
    let doc = "intro\n<!-- generated from the platform registry: t -->\n| old |\n| rows |\n<!-- end of generated table -->\nafter\n";
    assert_eq!(
        splice(doc, &MARKDOWN, "t", "| new |\n").as_deref(),
        Some("intro\n<!-- generated from the platform registry: t -->\n| new |\n<!-- end of generated table -->\nafter\n")
    );
    assert_eq!(splice(doc, &MARKDOWN, "other", "x"), None);
    let toml = "[a]\n# generated from the platform registry: s\n[old]\n# end of generated sections\n[b]\n";
    assert_eq!(
        splice(toml, &TOML, "s", "[new]\nk = 1\n").as_deref(),
        Some("[a]\n# generated from the platform registry: s\n[new]\nk = 1\n# end of generated sections\n[b]\n")
    );
    let table = "| a | b |\n|---|---|\n| one | old |\n| two | kept |\n";
    assert_eq!(splice(table, &ROW, "| one |", "| one | new |").as_deref(), Some("| a | b |\n|---|---|\n| one | new |\n| two | kept |\n"));
    assert_eq!(splice(table, &ROW, "| three |", "x"), None);
}

/// Every `HITL_BRIDGE_…` variable the project reads itself (the tests, the commands'
/// flags, the Python client) is one the bridge knows is not a setting, so starting the
/// bridge with it set warns about nothing.
#[test]
fn variables_the_project_reads_are_not_warned_about() {
    let mut read = BTreeSet::new();
    for dir in ["src", "tests", "clients", "benches"] {
        for file in files_under(&root().join(dir)) {
            let Ok(text) = std::fs::read_to_string(&file) else { continue };
            for (at, _) in text.match_indices("\"HITL_BRIDGE_") {
                let before = &text[at.saturating_sub(16)..at];
                let reads = ["var(", "var_os(", "env = ", "environ.get(", "&str = "].iter().any(|r| before.trim_end().ends_with(r.trim_end()));
                let name: String = text[at + 1..].chars().take_while(|c| c.is_ascii_uppercase() || *c == '_').collect();
                if reads && !name.contains("__") {
                    read.insert(name);
                }
            }
        }
    }
    for expected in ["HITL_BRIDGE_BLESS_DOCS", "HITL_BRIDGE_WEB_SCREENSHOT", "HITL_BRIDGE_TEST_POSTGRES_URL", "HITL_BRIDGE_MCP_URL"] {
        assert!(read.contains(expected), "the scan finds {expected}: {read:?}");
    }
    let environment = hitl_bridge::config::sources::Environment::from_vars(read.iter().map(|name| (name.clone(), "1".to_owned())));
    assert_eq!(environment.unread(&[]), Vec::<String>::new());
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            if !path.ends_with("target") && !path.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')) {
                out.extend(files_under(&path));
            }
        } else if path.extension().is_some_and(|e| e == "rs" || e == "py") {
            out.push(path);
        }
    }
    out
}

/// docs/operations.md lists every outcome an audit entry can have, as the web
/// inbox's audit page offers them.
#[test]
fn operations_md_lists_every_audit_outcome() {
    let doc = std::fs::read_to_string(root().join("docs/operations.md")).unwrap();
    let start = doc.find("`outcome` (one of").expect("the audit export's outcome list");
    let list = &doc[start..start + doc[start..].find("),").expect("its end")];
    let listed: Vec<&str> = list.split('`').skip(3).step_by(2).collect();
    assert_eq!(listed, hitl_bridge::web::AUDIT_OUTCOMES);
}

/// Every guarantee of docs/security.md names the tests that hold it: at least one file
/// of `tests/` (or a unit test in `src/`), each file named exists, and each test
/// function named after a file (in the same parenthesis) is in that file.
#[test]
fn every_guarantee_names_its_tests() {
    let doc = std::fs::read_to_string(root().join("docs/security.md")).unwrap();
    let start = doc.find("\n## Guarantees").expect("the Guarantees section");
    let section = &doc[start + 1..];
    let section = &section[..section[1..].find("\n## ").map_or(section.len(), |e| e + 1)];
    let mut bullets: Vec<String> = Vec::new();
    for line in section.lines() {
        if let Some(rest) = line.strip_prefix("- **") {
            bullets.push(rest.to_owned());
        } else if let Some(last) = bullets.last_mut().filter(|_| line.starts_with("  ")) {
            last.push(' ');
            last.push_str(line.trim());
        }
    }
    assert!(bullets.len() >= 10, "{} guarantees found", bullets.len());
    let mut problems = Vec::new();
    for bullet in &bullets {
        let name = bullet.split("**").next().unwrap_or_default();
        let spans: Vec<&str> = bullet.split('`').skip(1).step_by(2).collect();
        if !spans.iter().any(|s| s.starts_with("tests/") || s.starts_with("src/")) {
            problems.push(format!("{name} names no test"));
        }
        // A function is looked up in the file named before it, within one parenthesis.
        let mut file: Option<String> = None;
        for (n, piece) in bullet.split('`').enumerate() {
            if n % 2 == 0 {
                if piece.contains(')') {
                    file = None;
                }
                continue;
            }
            let span = piece;
            if (span.starts_with("tests/") || span.starts_with("src/")) && !span.contains('*') {
                let path = root().join(span);
                if path.exists() {
                    file = std::fs::read_to_string(&path).ok().filter(|_| path.is_file());
                } else {
                    problems.push(format!("{name}: {span} does not exist"));
                }
            } else if span.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                && span.contains('_')
                && let Some(text) = &file
                && !text.contains(&format!("fn {span}("))
            {
                problems.push(format!("{name}: no test `{span}` in the file named before it"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every listener the configuration has (a `listen` or `*_listen` key) is in the lists
/// of listeners: docs/security.md's table, docs/operations.md's limits, and the comment
/// of `[http]`'s limits in config/default.toml. A platform that adds a listener adds
/// a key, and this fails until the lists name it.
#[test]
fn every_listener_is_in_the_lists_of_listeners() {
    let listeners: Vec<String> = configuration_keys().into_iter().filter(|k| k.ends_with(".listen") || k.ends_with("_listen")).collect();
    assert!(listeners.contains(&"http.listen".to_owned()) && listeners.contains(&"slack.events_listen".to_owned()), "{listeners:?}");
    let section = |doc: &str, heading: &str| {
        let text = std::fs::read_to_string(root().join(doc)).unwrap();
        let start = text.find(heading).unwrap_or_else(|| panic!("{doc} has {heading}"));
        let rest = &text[start + heading.len()..];
        rest[..rest.find("\n## ").unwrap_or(rest.len())].to_owned()
    };
    let default = std::fs::read_to_string(root().join("config/default.toml")).unwrap();
    let limits_comment = &default[default.find("# Limits for every listener").expect("the limits' comment")..];
    let limits_comment = &limits_comment[..limits_comment.find("\n\n").unwrap_or(limits_comment.len())].replace("\n# ", " ");
    for (list, text) in [
        ("docs/security.md, HTTP listeners", section("docs/security.md", "\n## HTTP listeners")),
        ("docs/operations.md, Listeners facing the internet", section("docs/operations.md", "\n## Listeners facing the internet")),
        ("config/default.toml, [http] limits", limits_comment.clone()),
    ] {
        for key in &listeners {
            // http.listen is "this one" in its own section's comment.
            let named = text.contains(&format!("`{key}`")) || text.contains(key.as_str()) || (key == "http.listen" && list.starts_with("config/"));
            assert!(named, "{list} does not name {key}");
        }
    }
}

/// The commands a platform adds to `hitl-bridge` (its descriptor's admin command, such
/// as `slack manifest`) are in README's Commands block and docs/operations.md's admin
/// commands: a platform added to the registry with a command of its own fails this
/// until both list it.
#[test]
fn every_platform_command_is_listed() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let operations = std::fs::read_to_string(root().join("docs/operations.md")).unwrap();
    for descriptor in hitl_bridge::platform::registry::DESCRIPTORS {
        let Some(command) = descriptor.admin_command() else { continue };
        let subcommands: Vec<String> = command.get_subcommands().map(|s| format!("hitl-bridge {} {}", command.get_name(), s.get_name())).collect();
        let lines = if subcommands.is_empty() { vec![format!("hitl-bridge {}", command.get_name())] } else { subcommands };
        for line in lines {
            assert!(readme.contains(&line), "README.md's Commands do not list `{line}`");
            assert!(operations.contains(&line), "docs/operations.md's admin commands do not list `{line}`");
        }
    }
}

/// README's table of backends has a row for every backend of the registry, and links
/// its guide: a backend added to the registry fails this until README shows it.
#[test]
fn readme_lists_every_backend() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let start = readme.find("\n## Backends\n").expect("README's Backends section");
    let section = &readme[start + 1..];
    let section = &section[..section[1..].find("\n## ").map_or(section.len(), |end| end + 1)];
    for descriptor in hitl_bridge::backend::registry::DESCRIPTORS {
        let name = descriptor.name();
        assert!(section.lines().any(|line| line.starts_with(&format!("| `{name}`"))), "README's backends table has no row for `{name}`");
        let page = descriptor.docs_page();
        assert!(section.contains(&format!("]({page})")), "README's Backends section does not link {page}");
    }
}

/// README's list of front ends names every platform of the registry, and the web inbox.
#[test]
fn readme_lists_every_front_end() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let start = readme.find("\nFront ends: ").expect("README's Front ends paragraph");
    let paragraph = readme[start + 1..].split("\n\n").next().unwrap_or_default().to_lowercase();
    for descriptor in hitl_bridge::platform::registry::DESCRIPTORS {
        let name = descriptor.network().name();
        assert!(paragraph.contains(name), "README's front ends do not name {name}: {paragraph}");
    }
    assert!(paragraph.contains("web inbox"), "{paragraph}");
}
