//! Where the configuration comes from, in order: the defaults built into the binary
//! (the text of `config/default.toml`), a file (`--config PATH`; without it,
//! `config/default.toml` in the working directory if there is one), then the
//! environment (`HITL_BRIDGE__SECTION__KEY`). The binary therefore runs from any
//! directory with a small file or with environment variables alone.
//!
//! [`provenance`] tells, for `check-config`, which source set each value that differs
//! from the built-in default.

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
pub fn provenance(path: Option<&Path>, environment: config::Environment) -> Result<Vec<(String, Source)>, ConfigError> {
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
    let everything = flat(with_file.add_source(environment))?;
    let env_names: BTreeMap<String, String> = std::env::vars()
        .filter_map(|(name, _)| {
            let rest = name.strip_prefix(ENV_PREFIX)?.strip_prefix("__")?;
            Some((rest.split("__").map(str::to_lowercase).collect::<Vec<_>>().join("."), name))
        })
        .collect();
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
        let environment = config::Environment::with_prefix("HITL_BRIDGE_PROVENANCE_TEST_UNSET").separator("__");
        let found = provenance(Some(&file), environment).unwrap();
        let keys: Vec<&str> = found.iter().map(|(k, _)| k.as_str()).collect();
        assert!(keys.contains(&"telegram.enabled") && keys.contains(&"telegram.token"), "{found:?}");
        assert!(found.iter().all(|(_, s)| *s == Source::File(file.clone())), "{found:?}");
        assert!(!keys.contains(&"log.filter"), "{found:?}");
    }
}
