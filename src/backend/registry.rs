//! The agent backends this bridge has: one line each. The only file that names them:
//! a new backend is its folder and its line here. The assembly (configuration, the
//! app and `main`) reads this list and hands what the rest needs down to it (each
//! backend's section in [`BackendSections`], the names policies may filter on);
//! nothing else imports it, and no backend does (`tests/layers.rs`).

use super::descriptor::{BackendDescriptor, BackendSections};
use super::{acp, agno, claude_code, kimi, langgraph, stream};

/// Every backend, in the order messages list them; the first is the default kind.
pub static DESCRIPTORS: &[&dyn BackendDescriptor] = &[
    &stream::descriptor::Stream,
    &claude_code::descriptor::ClaudeCode,
    &agno::descriptor::Agno,
    &kimi::descriptor::Kimi,
    &langgraph::descriptor::LangGraph,
    &acp::descriptor::Acp,
];

/// The backend named `name` (`backend.kind`).
pub fn descriptor(name: &str) -> Option<&'static dyn BackendDescriptor> {
    DESCRIPTORS.iter().copied().find(|d| d.name() == name)
}

/// Every backend's name, in the registry's order.
pub fn names() -> Vec<&'static str> {
    DESCRIPTORS.iter().map(|d| d.name()).collect()
}

/// The names as a message lists them: `stream, claude_code, agno, kimi or langgraph`.
pub fn listed() -> String {
    let names = names();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

/// The sections of `config/default.toml` of every backend that has one, in the
/// registry's order (the file's generated block; `tests/docs.rs` keeps that copy
/// current).
pub fn default_sections() -> String {
    DESCRIPTORS.iter().filter_map(|d| d.defaults()).collect::<Vec<_>>().join("\n")
}

/// The docs' table of every backend: its `backend.kind`, its section and its guide
/// (docs/configuration.md, "Agent backends"; `tests/docs.rs` keeps that copy current).
pub fn backends_table() -> String {
    let mut table = String::from("| `backend.kind` | backend | its section | its guide |\n|---|---|---|---|\n");
    for descriptor in DESCRIPTORS {
        let name = descriptor.name();
        let section = if descriptor.defaults().is_some() { format!("[`[{name}]`](#{name})") } else { "`[backend]`".to_owned() };
        let page = descriptor.docs_page();
        let link = page.trim_start_matches("docs/");
        table.push_str(&format!("| `{name}` | {} | {section} | [{page}]({link}) |\n", descriptor.title()));
    }
    table
}

impl Default for BackendSections {
    /// Every registered backend's defaults. Here, not beside [`BackendSections`]: only
    /// the registry knows every backend, and the descriptors it lists import that file.
    fn default() -> Self {
        let empty = config::Config::default();
        let defaults = DESCRIPTORS.iter().map(|d| (d.name(), d.read_section(&empty).expect("an empty configuration reads as the defaults")));
        Self::new(defaults.collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backends_are_listed_as_messages_name_them() {
        assert_eq!(listed(), "stream, claude_code, agno, kimi, langgraph or acp");
        assert_eq!(names()[0], "stream", "the default kind comes first");
        assert!(descriptor("kimi").is_some_and(|d| d.starts_agents()) && descriptor("ftp").is_none());
    }

    /// Each backend's shipped section reads as its settings' own defaults, so the
    /// copy in `config/default.toml` changes nothing.
    #[test]
    fn each_shipped_section_is_its_settings_defaults() {
        let defaults = BackendSections::default();
        for descriptor in DESCRIPTORS {
            let Some(text) = descriptor.defaults() else { continue };
            let config = config::Config::builder().add_source(config::File::from_str(text, config::FileFormat::Toml)).build().expect("its default.toml");
            let read = descriptor.read_section(&config).expect("its section reads");
            let name = descriptor.name();
            assert_eq!(read.to_json(), defaults.named(name).and_then(|s| s.to_json()), "{name}'s default.toml");
        }
    }
}
