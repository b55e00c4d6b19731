//! The app package `hitl-bridge teams package --app-id ID [--public-url URL]` writes:
//! a zip of `manifest.json` and its two icons, which Teams' "Upload a custom app"
//! (or the Teams admin center) takes as it is. The manifest follows the current
//! schema (learn.microsoft.com, "App manifest schema reference", v1.19): one bot, the
//! Azure Bot's app id, in the `personal`, `team` and `groupChat` scopes, its command
//! list (the bridge's chat commands, which Teams offers as a menu and sends as the
//! message text), and the public host among `validDomains`. The icons are a 192×192
//! colour icon and a 32×32 white outline on transparency, as Teams asks.
//!
//! The zip is written here ("stored", no compression: the three files are small and
//! Teams reads any valid zip), which saves a zip crate for 80 lines.

use std::path::Path;

use serde_json::{Value, json};

use super::settings::is_guid;
use crate::platform::kit::commands::COMMANDS;
use crate::texts::Locale;

/// The manifest schema the package follows.
pub const SCHEMA_VERSION: &str = "1.19";
const COLOR_ICON: &[u8] = include_bytes!("icons/color.png");
const OUTLINE_ICON: &[u8] = include_bytes!("icons/outline.png");
/// The developer URLs Teams requires when no public URL is given: a reserved name
/// (RFC 2606), so nothing pretends to be a real site.
const NO_SITE: &str = "https://hitl-bridge.invalid/";

/// The manifest for bot `app_id`, served at `public_url` when given.
pub fn manifest(app_id: &str, public_url: Option<&str>) -> Value {
    let site = public_url.map_or_else(|| NO_SITE.to_owned(), |url| format!("{}/", url.trim_end_matches('/')));
    let domains: Vec<String> = public_url.and_then(|url| url::Url::parse(url).ok()).and_then(|u| u.host_str().map(str::to_owned)).into_iter().collect();
    let commands: Vec<Value> = COMMANDS.iter().map(|c| json!({ "title": c.name, "description": c.description(Locale::En) })).collect();
    json!({
        "$schema": format!("https://developer.microsoft.com/en-us/json-schemas/teams/v{SCHEMA_VERSION}/MicrosoftTeams.schema.json"),
        "manifestVersion": SCHEMA_VERSION,
        "version": env!("CARGO_PKG_VERSION"),
        "id": app_id,
        "developer": { "name": "hitl-bridge", "websiteUrl": site, "privacyUrl": site, "termsOfUseUrl": site },
        "name": { "short": "hitl-bridge", "full": "hitl-bridge: approvals for AI agents" },
        "description": {
            "short": "Approve an AI agent's tool calls and answer its questions",
            "full": "hitl-bridge shows an AI agent's tool calls and questions as cards: approve, edit, reject or comment, and talk to the agent in channels, group chats and 1:1 chats.",
        },
        "icons": { "color": "color.png", "outline": "outline.png" },
        "accentColor": "#1D3B5A",
        "bots": [{
            "botId": app_id,
            "scopes": ["personal", "team", "groupChat"],
            "supportsFiles": false,
            "isNotificationOnly": false,
            "commandLists": [{ "scopes": ["personal", "team", "groupChat"], "commands": commands }],
        }],
        "permissions": ["identity", "messageTeamMembers"],
        "validDomains": domains,
    })
}

/// The package: `manifest.json` and the two icons, zipped.
pub fn package(app_id: &str, public_url: Option<&str>) -> Vec<u8> {
    let manifest = serde_json::to_vec_pretty(&manifest(app_id, public_url)).unwrap_or_default();
    zip(&[("manifest.json", &manifest), ("color.png", COLOR_ICON), ("outline.png", OUTLINE_ICON)])
}

/// CRC-32 (IEEE), as zip records it.
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

/// A zip of `files`, each stored (PKWARE APPNOTE 4.3: local headers, then the central
/// directory, then its end record), dated 1980-01-01.
pub fn zip(files: &[(&str, &[u8])]) -> Vec<u8> {
    const DATE: u16 = 0x21; // 1980-01-01
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, data) in files {
        let offset = out.len() as u32;
        let (crc, size, name_len) = (crc32(data), data.len() as u32, name.len() as u16);
        let common = |buffer: &mut Vec<u8>| {
            for half in [20u16, 0, 0, 0, DATE] {
                buffer.extend(half.to_le_bytes()); // version needed, flags, stored, time, date
            }
            for word in [crc, size, size] {
                buffer.extend(word.to_le_bytes());
            }
            buffer.extend(name_len.to_le_bytes());
            buffer.extend(0u16.to_le_bytes()); // no extra field
        };
        out.extend(0x0403_4b50u32.to_le_bytes());
        common(&mut out);
        out.extend(name.as_bytes());
        out.extend(*data);
        central.extend(0x0201_4b50u32.to_le_bytes());
        central.extend(20u16.to_le_bytes()); // made by
        common(&mut central);
        for half in [0u16, 0, 0] {
            central.extend(half.to_le_bytes()); // comment, disk, internal attributes
        }
        central.extend(0u32.to_le_bytes()); // external attributes
        central.extend(offset.to_le_bytes());
        central.extend(name.as_bytes());
    }
    let (central_offset, central_size, count) = (out.len() as u32, central.len() as u32, files.len() as u16);
    out.extend(central);
    out.extend(0x0605_4b50u32.to_le_bytes());
    for half in [0u16, 0, count, count] {
        out.extend(half.to_le_bytes());
    }
    out.extend(central_size.to_le_bytes());
    out.extend(central_offset.to_le_bytes());
    out.extend(0u16.to_le_bytes());
    out
}

/// `hitl-bridge teams …`: Teams' own admin commands.
pub fn admin_command() -> clap::Command {
    clap::Command::new("teams").about("Microsoft Teams' set-up: `teams package` writes the app package").subcommand_required(true).subcommand(
        clap::Command::new("package")
            .about("Write the Teams app package (manifest.json and two icons, zipped) to upload as a custom app")
            .arg(clap::Arg::new("app-id").long("app-id").value_name("ID").required(true).help("The Azure Bot's Microsoft App ID (teams.app_id)"))
            .arg(clap::Arg::new("public-url").long("public-url").value_name("URL").help("The bridge's public https base URL: its host goes in validDomains"))
            .arg(clap::Arg::new("out").long("out").value_name("PATH").default_value("hitl-bridge-teams.zip").help("Where the zip is written")),
    )
}

/// Runs `hitl-bridge teams …` (`matches` are `teams`'s).
pub fn run_admin_command(matches: &clap::ArgMatches) -> Result<String, String> {
    let Some(("package", args)) = matches.subcommand() else { return Err("usage: hitl-bridge teams package --app-id ID [--public-url URL]".into()) };
    let app_id = args.get_one::<String>("app-id").map(String::as_str).unwrap_or_default();
    if !is_guid(app_id) {
        return Err(format!("--app-id {app_id:?} is not a Microsoft App ID: a GUID, as the Azure Bot's Configuration page shows it"));
    }
    let public_url = args.get_one::<String>("public-url").map(String::as_str);
    if let Some(url) = public_url {
        let parsed = url::Url::parse(url).map_err(|e| format!("--public-url {url:?} is not a URL ({e})"))?;
        if parsed.scheme() != "https" || parsed.host_str().is_none() {
            return Err(format!("--public-url {url:?}: Teams reaches bots over https only"));
        }
    }
    let out = args.get_one::<String>("out").map(String::as_str).unwrap_or("hitl-bridge-teams.zip");
    std::fs::write(Path::new(out), package(app_id, public_url)).map_err(|e| format!("cannot write {out}: {e}"))?;
    Ok(format!("wrote {out}: upload it in Teams (Apps → Manage your apps → Upload an app)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const APP: &str = "2f1c9a64-8d0e-4c3b-9a51-7e2d4b6c8f10";

    #[test]
    fn the_crc_is_zips() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn the_zip_lists_its_files_where_its_end_record_says() {
        let zipped = zip(&[("a.txt", b"hello"), ("b.bin", &[0, 1, 2])]);
        let end = zipped.len() - 22;
        assert_eq!(&zipped[end..end + 4], &0x0605_4b50u32.to_le_bytes());
        let word = |at: usize| u32::from_le_bytes(zipped[at..at + 4].try_into().unwrap()) as usize;
        let (size, offset) = (word(end + 12), word(end + 16));
        assert_eq!(offset + size, end, "the central directory ends where the end record starts");
        assert_eq!(&zipped[offset..offset + 4], &0x0201_4b50u32.to_le_bytes());
        assert_eq!(&zipped[30..35], b"a.txt");
        assert_eq!(&zipped[35..40], b"hello");
        assert_eq!(word(14), crc32(b"hello") as usize);
    }

    #[test]
    fn the_manifest_has_the_bot_its_scopes_commands_and_domain() {
        let m = manifest(APP, Some("https://bridge.example.com/teams"));
        assert_eq!(m["manifestVersion"], SCHEMA_VERSION);
        assert_eq!((m["id"].clone(), m["bots"][0]["botId"].clone()), (json!(APP), json!(APP)));
        assert_eq!(m["bots"][0]["scopes"], json!(["personal", "team", "groupChat"]));
        let titles: Vec<&str> = m["bots"][0]["commandLists"][0]["commands"].as_array().unwrap().iter().map(|c| c["title"].as_str().unwrap()).collect();
        assert_eq!(titles, ["new", "cancel", "pending", "rules", "id", "pair", "web"]);
        assert_eq!(m["validDomains"], json!(["bridge.example.com"]));
        assert_eq!(manifest(APP, None)["validDomains"], json!([]));
    }

    #[test]
    fn the_admin_command_refuses_a_bad_id_or_url() {
        let run = |args: &[&str]| run_admin_command(&admin_command().try_get_matches_from(args).unwrap());
        assert!(run(&["teams", "package", "--app-id", "my-bot"]).unwrap_err().contains("--app-id"));
        assert!(run(&["teams", "package", "--app-id", APP, "--public-url", "http://x.example.com"]).unwrap_err().contains("https"));
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("p.zip");
        let said = run(&["teams", "package", "--app-id", APP, "--out", out.to_str().unwrap()]).unwrap();
        assert!(said.starts_with("wrote "), "{said}");
        let zipped = std::fs::read(out).unwrap();
        assert_eq!(&zipped[..4], &0x0403_4b50u32.to_le_bytes());
    }
}
