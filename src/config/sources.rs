//! Where the configuration comes from, in order: the defaults built into the binary
//! (the text of `config/default.toml`), a file (`--config PATH`; without it,
//! `config/default.toml` in the working directory if there is one), then the
//! environment (`HITL_BRIDGE__SECTION__KEY`, read by [`Environment`]). The binary
//! therefore runs from any directory with a small file or with environment variables
//! alone.
//!
//! It also says where a value came from: [`provenance`] for `check-config`, and, for a
//! key nobody knows, the variable or the file and line that named it with the nearest
//! known key ([`nearest`], [`file_keys`]), so a typo is found where it was made.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::ConfigError;

/// The defaults, as shipped in `config/default.toml`.
pub const DEFAULTS: &str = include_str!("../../config/default.toml");

/// The file read when no `--config` is given, relative to the working directory.
const IMPLICIT_FILE: &str = "config/default.toml";

/// The environment prefix: `HITL_BRIDGE__BACKEND__URL` sets `backend.url`.
pub const ENV_PREFIX: &str = "HITL_BRIDGE";

/// Variables that start with `HITL_BRIDGE_` but are not configuration keys: read by a
/// command's own flags (`hitl-bridge mcp`, `agent-sim`), the Python client and the
/// tests. They are never warned about.
pub const OTHER_VARIABLES: &[&str] = &[
    "HITL_BRIDGE_MCP_URL",
    "HITL_BRIDGE_MCP_TOKEN",
    "HITL_BRIDGE_MCP_TARGETS",
    "HITL_BRIDGE_SIM_TOKEN",
    "HITL_BRIDGE_URL",
    "HITL_BRIDGE_TOKEN",
    "HITL_BRIDGE_BIN",
    "HITL_BRIDGE_BACKENDS_DIR",
    "HITL_BRIDGE_TEST_POSTGRES_URL",
    // tests/docs.rs rewrites the generated tables; tests/web_browser.rs saves the
    // request page's screenshot for docs/web.md.
    "HITL_BRIDGE_BLESS_DOCS",
    "HITL_BRIDGE_WEB_SCREENSHOT",
];

/// The environment as a configuration source. Unlike the `config` crate's own, it
/// knows which keys are lists ([`list_keys`](super::list_keys)), so one id is a list
/// of one id and not an integer, and it tells each value's variable in errors.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    /// `(variable, value)` of every variable that starts with the prefix.
    vars: Vec<(String, String)>,
}

impl Environment {
    /// This process's environment (variables that are not Unicode are skipped: no key
    /// is spelled that way).
    pub fn from_process() -> Self {
        Self::from_vars(std::env::vars_os().filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?))))
    }

    pub fn from_vars(vars: impl IntoIterator<Item = (String, String)>) -> Self {
        let mut vars: Vec<(String, String)> = vars.into_iter().filter(|(name, _)| name.to_uppercase().starts_with(ENV_PREFIX)).collect();
        vars.sort();
        Self { vars }
    }

    /// `(variable, dotted key)` for each variable of the form `HITL_BRIDGE__A__B`
    /// (`a.b`), the form that sets a key; any case, as the `config` crate allowed.
    pub fn keys(&self) -> impl Iterator<Item = (&str, String)> {
        self.vars.iter().filter_map(|(name, _)| Some((name.as_str(), key_of(name)?)))
    }

    /// The variable that sets `key` (or a key inside it), if any.
    pub fn variable_for(&self, key: &str) -> Option<&str> {
        self.keys().find(|(_, k)| k == key || key.starts_with(&format!("{k}.")) || key.starts_with(&format!("{k}["))).map(|(name, _)| name)
    }

    /// One warning per variable that starts with `HITL_BRIDGE` but sets nothing: a
    /// single underscore where two belong (`HITL_BRIDGE_TELEGRAM__TOKEN`), or another
    /// spelling of the prefix, with the nearest variable that does set a key. The
    /// variables of [`OTHER_VARIABLES`] are left alone; a variable in the `__` form
    /// that names no key is an error at load, not a warning.
    pub fn unread(&self, known: &[String]) -> Vec<String> {
        let as_variable = |key: &str| format!("{ENV_PREFIX}__{}", key.replace('.', "__").to_uppercase());
        self.vars
            .iter()
            .map(|(name, _)| name)
            .filter(|name| key_of(name).is_none() && !OTHER_VARIABLES.contains(&name.as_str()))
            .map(|name| {
                let candidates: Vec<String> = known.iter().map(|k| as_variable(k)).chain(OTHER_VARIABLES.iter().map(|v| v.to_string())).collect();
                let hint = match nearest(&name.to_uppercase(), &candidates) {
                    Some(close) => format!("did you mean {close}?"),
                    None => format!("a key is set as {ENV_PREFIX}__SECTION__KEY, two underscores each"),
                };
                format!("the environment variable {name} is not read: {hint}")
            })
            .collect()
    }
}

/// `HITL_BRIDGE__A__B` → `a.b`.
fn key_of(name: &str) -> Option<String> {
    let lower = name.to_lowercase();
    let rest = lower.strip_prefix(&format!("{}__", ENV_PREFIX.to_lowercase()))?;
    Some(rest.replace("__", "."))
}

/// The items of a list given as text: separated by commas, each trimmed, a pair of
/// quotes around one taken off (`"1100"` is `1100`), empty ones dropped.
pub fn list_items(text: &str) -> Vec<String> {
    text.split(',')
        .map(|item| {
            let item = item.trim();
            let unquoted = ['"', '\''].iter().find_map(|q| item.strip_prefix(*q).and_then(|i| i.strip_suffix(*q)));
            unquoted.unwrap_or(item).to_owned()
        })
        .filter(|item| !item.is_empty())
        .collect()
}

impl config::Source for Environment {
    fn clone_into_box(&self) -> Box<dyn config::Source + Send + Sync> {
        Box::new(self.clone())
    }

    fn collect(&self) -> Result<config::Map<String, config::Value>, config::ConfigError> {
        use config::{Value as V, ValueKind};
        let mut map = config::Map::new();
        for (name, value) in &self.vars {
            let Some(key) = key_of(name) else { continue };
            let origin = name.clone();
            let kind = if super::list_keys().contains(&key) {
                ValueKind::Array(list_items(value).into_iter().map(|item| V::new(Some(&origin), ValueKind::String(item))).collect())
            } else if let Ok(flag) = value.to_lowercase().parse::<bool>() {
                ValueKind::Boolean(flag)
            } else if let Ok(number) = value.parse::<i64>() {
                ValueKind::I64(number)
            } else if let Ok(number) = value.parse::<f64>() {
                ValueKind::Float(number)
            } else {
                ValueKind::String(value.clone())
            };
            map.insert(key, V::new(Some(&origin), kind));
        }
        Ok(map)
    }
}

/// The candidate closest to `word` by edit distance, if it is close enough to be the
/// one meant (at most a third of its length, and at most 4 edits).
pub fn nearest(word: &str, candidates: &[String]) -> Option<String> {
    let limit = (word.chars().count() / 3).clamp(1, 4);
    candidates.iter().map(|c| (edit_distance(word, c), c)).filter(|(d, _)| *d <= limit).min_by_key(|(d, _)| *d).map(|(_, c)| c.clone())
}

/// Levenshtein distance, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1).min(row[j] + 1).min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// Every `section.key` a TOML file sets, with its line (1-based), read line by line:
/// `[section]` headers and `key = …` lines. The entries of `[[policies]]` (checked by
/// their own rules) and the lines inside a multi-line value are skipped.
pub fn file_keys(text: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut section: Option<String> = None;
    let mut depth: i32 = 0;
    for (n, line) in text.lines().enumerate() {
        let line = strip_comment(line).trim();
        if line.is_empty() {
            continue;
        }
        if depth > 0 {
            depth += brackets(line);
            continue;
        }
        if let Some(table) = line.strip_prefix("[[") {
            section = Some(table.trim_end_matches(']').trim().to_owned());
            out.push((section.clone().unwrap_or_default(), n + 1));
            continue;
        }
        if let Some(table) = line.strip_prefix('[') {
            let name = table.trim_end_matches(']').trim().trim_matches('"').to_owned();
            out.push((name.clone(), n + 1));
            section = Some(name);
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        depth = brackets(value);
        let key = key.trim().trim_matches('"');
        match &section {
            Some(s) if s == "policies" => {}
            Some(s) => out.push((format!("{s}.{key}"), n + 1)),
            None => out.push((key.to_owned(), n + 1)),
        }
    }
    out
}

/// `line` without a `#` comment (a `#` inside a string stays).
fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    for (i, c) in line.char_indices() {
        match (c, quote) {
            ('"' | '\'', None) => quote = Some(c),
            (c, Some(q)) if c == q => quote = None,
            ('#', None) => return &line[..i],
            _ => {}
        }
    }
    line
}

/// Opening minus closing brackets and braces outside strings: above zero, the value
/// goes on over the next lines.
fn brackets(text: &str) -> i32 {
    let mut quote: Option<char> = None;
    let mut depth = 0;
    for c in text.chars() {
        match (c, quote) {
            ('"' | '\'', None) => quote = Some(c),
            (c, Some(q)) if c == q => quote = None,
            ('[' | '{', None) => depth += 1,
            (']' | '}', None) => depth -= 1,
            _ => {}
        }
    }
    depth
}

/// The file layer for `path`: that file (which must exist), else the implicit one if
/// present.
pub fn file_layer(path: Option<&Path>) -> Option<PathBuf> {
    match path {
        Some(p) => Some(p.to_owned()),
        None => Path::new(IMPLICIT_FILE).is_file().then(|| PathBuf::from(IMPLICIT_FILE)),
    }
}

pub fn defaults() -> config::File<config::FileSourceString, config::FileFormat> {
    config::File::from_str(DEFAULTS, config::FileFormat::Toml)
}

/// Where one value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    File(PathBuf),
    Env(String),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::File(path) => write!(f, "file {}", path.display()),
            Source::Env(name) => write!(f, "env {name}"),
        }
    }
}

/// Every dotted key whose value differs from the built-in default, with the source
/// that set it (the environment wins over the file, as it does when loading). Values
/// are not returned: they may be secrets.
pub fn provenance(path: Option<&Path>, environment: Environment) -> Result<Vec<(String, Source)>, ConfigError> {
    let flat = |builder: config::ConfigBuilder<config::builder::DefaultState>| -> Result<BTreeMap<String, Value>, ConfigError> {
        let value: Value = builder.build()?.try_deserialize()?;
        let mut out = BTreeMap::new();
        flatten("", &value, &mut out);
        Ok(out)
    };
    let defaults_only = flat(config::Config::builder().add_source(defaults()))?;
    let file = file_layer(path);
    let mut with_file = config::Config::builder().add_source(defaults());
    if let Some(file) = &file {
        with_file = with_file.add_source(config::File::from(file.as_path()).required(true));
    }
    let with_file_only = flat(with_file.clone())?;
    let everything = flat(with_file.add_source(environment.clone()))?;
    let env_names: BTreeMap<String, String> = environment.keys().map(|(name, key)| (key, name.to_owned())).collect();
    let mut changed = Vec::new();
    for (key, value) in &everything {
        if defaults_only.get(key) == Some(value) {
            continue;
        }
        let from_env =
            env_names.iter().find(|(env_key, _)| key == *env_key || key.starts_with(&format!("{env_key}.")) || key.starts_with(&format!("{env_key}[")));
        let source = match (from_env, &file) {
            (Some((_, name)), _) => Source::Env(name.clone()),
            (None, Some(file)) if with_file_only.get(key) == Some(value) => Source::File(file.clone()),
            // A key the defaults lack and nothing set cannot differ; be safe anyway.
            _ => continue,
        };
        changed.push((key.clone(), source));
    }
    Ok(changed)
}

/// `{"a":{"b":1},"c":[x]}` as `a.b` and `c[0]`, leaves only.
fn flatten(prefix: &str, value: &Value, out: &mut BTreeMap<String, Value>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, inner) in map {
                let key = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
                flatten(&key, inner, out);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for (n, inner) in items.iter().enumerate() {
                flatten(&format!("{prefix}[{n}]"), inner, out);
            }
        }
        leaf => {
            out.insert(prefix.to_owned(), leaf.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_keys_flatten_to_dotted_paths() {
        let mut out = BTreeMap::new();
        flatten("", &serde_json::json!({"a": {"b": 1, "c": [true, {"d": "x"}]}, "e": {}}), &mut out);
        let keys: Vec<&str> = out.keys().map(String::as_str).collect();
        assert_eq!(keys, ["a.b", "a.c[0]", "a.c[1].d", "e"]);
    }

    #[test]
    fn a_file_value_is_named_by_its_file_and_defaults_are_not_listed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("small.toml");
        // `log.filter` repeats its default: set, but not a change.
        let default_filter = config::Config::builder().add_source(defaults()).build().unwrap().get_string("log.filter").unwrap();
        std::fs::write(&file, format!("[telegram]\nenabled = true\ntoken = \"1:abc\"\n[log]\nfilter = \"{default_filter}\"\n")).unwrap();
        let environment = Environment::default();
        let found = provenance(Some(&file), environment).unwrap();
        let keys: Vec<&str> = found.iter().map(|(k, _)| k.as_str()).collect();
        assert!(keys.contains(&"telegram.enabled") && keys.contains(&"telegram.token"), "{found:?}");
        assert!(found.iter().all(|(_, s)| *s == Source::File(file.clone())), "{found:?}");
        assert!(!keys.contains(&"log.filter"), "{found:?}");
    }
}
