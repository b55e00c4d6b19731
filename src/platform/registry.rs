//! The chat platforms this bridge has: one line each. Configuration, the app, the
//! HTTP API, MCP, pairing, the admin commands and the demo read this list; a new
//! platform is its folder and its line here.

use std::sync::Arc;

use super::descriptor::Descriptor;
use super::{console, discord, slack, telegram};
use crate::interaction::chat::Networks;

/// Every platform, in the order messages list them.
pub static DESCRIPTORS: &[&dyn Descriptor] =
    &[&telegram::descriptor::Telegram, &discord::descriptor::Discord, &slack::descriptor::Slack, &console::descriptor::Console];

/// Every platform's address grammar: what the core, the engine and the HTTP API know
/// of the platforms.
pub fn networks() -> Networks {
    Networks::new(DESCRIPTORS.iter().map(|d| d.network()).collect::<Vec<Arc<_>>>())
}

/// The docs' table of every platform's addresses (docs/configuration.md,
/// "Addresses"; `tests/docs.rs` keeps that copy current): how its chats, people,
/// groups and spaces are written in configuration, and the fields of its HTTP API
/// target object.
pub fn addresses_table() -> String {
    let mut table = String::from(
        "| platform | a chat (`routing.channels`, `access.chats`, MCP `targets`) | a person (`access.users`, `access.approvers`, `access.admins`) | a space (`access.chats`) | a group (`access.roles`, `access.approver_roles`) | HTTP API target (`targets`) |\n|---|---|---|---|---|---|\n",
    );
    let code = |text: &str| format!("`{text}`");
    for descriptor in DESCRIPTORS {
        let network = descriptor.network();
        let name = network.name();
        let chats: Vec<String> = network.chat_forms().iter().map(|form| code(form)).collect();
        let person = if network.always_open() { "anyone at it".to_owned() } else { code(&format!("{name}:USER_ID")) };
        let space = network.space_form().map_or_else(|| "—".to_owned(), code);
        let group = if network.has_groups() { network.group_form().unwrap_or("—").to_owned() } else { "—".to_owned() };
        let schema = network.target_schema();
        let fields: Vec<String> = schema["properties"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(field, _)| field.as_str() != "platform")
            .map(|(field, property)| format!("`{field}`: {}", property["description"].as_str().unwrap_or("").trim_end_matches('.')))
            .collect();
        let target = std::iter::once(code(&format!("\"platform\": \"{name}\""))).chain(fields).collect::<Vec<_>>().join("; ");
        table.push_str(&format!("| {} | {} | {person} | {space} | {group} | {target} |\n", descriptor.title(), chats.join(", ")));
    }
    table
}

/// The docs' table of every platform's configuration section and the page that
/// documents its keys (docs/configuration.md, "Chat platforms"; `tests/docs.rs` keeps
/// that copy current, and checks each page documents every key of its section).
pub fn sections_table() -> String {
    let mut table = String::from("| section | platform | its keys |\n|---|---|---|\n");
    for descriptor in DESCRIPTORS {
        let name = descriptor.network().name();
        let page = docs_page(*descriptor);
        let link = page.trim_start_matches("docs/");
        table.push_str(&format!("| `[{name}]` | {} | [{page}]({link}#configuration) |\n", descriptor.title()));
    }
    table
}

/// Every platform's section of `config/default.toml`, in the registry's order (the
/// file's generated block; `tests/docs.rs` keeps that copy current).
pub fn default_sections() -> String {
    DESCRIPTORS.iter().map(|d| d.defaults()).collect::<Vec<_>>().join("\n")
}

/// Where a platform's keys are documented: its page, `docs/<name>.md`.
pub fn docs_page(descriptor: &dyn Descriptor) -> String {
    format!("docs/{}.md", descriptor.network().name())
}

/// The platform named `name`.
pub fn descriptor(name: &str) -> Option<&'static dyn Descriptor> {
    DESCRIPTORS.iter().copied().find(|d| d.network().name() == name)
}
