//! The Slack app manifest `hitl-bridge slack manifest` prints: everything a new app
//! needs switched on, so that creating it from the manifest is the whole set-up
//! (<https://api.slack.com/reference/manifests>). Interactivity is on in both modes:
//! without it Slack shows "This app is not configured to handle interactive
//! responses" on every button.
//!
//! Socket Mode (the default) needs no public URL; for HTTP mode every request URL
//! (events, interactivity, the slash command) is the one path the bridge serves,
//! `{PUBLIC_URL}/slack/events`.

use serde_json::{Value, json};

/// The path HTTP mode serves, under `slack.events_listen`.
pub const EVENTS_PATH: &str = "/slack/events";

/// The one slash command, `/hitl <command>`.
pub const SLASH_COMMAND: &str = "/hitl";

/// What the bot may do, each for a reason: post and edit cards (`chat:write`), take
/// `/hitl` (`commands`), open a person's DM (`im:write`), read the messages of the
/// channels it is in, of private channels and of DMs to start turns (`channels:history`,
/// `groups:history`, `im:history`), hear mentions (`app_mentions:read`), read the
/// members of approver groups (`usergroups:read`) and people's names
/// (`users:read`).
pub const BOT_SCOPES: &[&str] =
    &["app_mentions:read", "channels:history", "chat:write", "commands", "groups:history", "im:history", "im:write", "usergroups:read", "users:read"];

/// The events that start or continue a turn.
pub const BOT_EVENTS: &[&str] = &["app_mention", "message.channels", "message.groups", "message.im"];

/// The manifest, as JSON (Slack's "Create an app → From a manifest" takes JSON or
/// YAML). `http` is the bridge's public base URL for HTTP mode; `None` is Socket Mode.
pub fn manifest(http: Option<&str>) -> Value {
    let request_url = http.map(|base| format!("{}{EVENTS_PATH}", base.trim_end_matches('/')));
    let mut slash = json!({
        "command": SLASH_COMMAND,
        "description": "Talk to hitl-bridge: new, cancel, pending, rules, id, pair, web",
        "usage_hint": "new | cancel | pending | rules [revoke ID] | id | pair CODE | web",
        "should_escape": false,
    });
    let mut events = json!({ "bot_events": BOT_EVENTS });
    let mut interactivity = json!({ "is_enabled": true });
    if let Some(url) = &request_url {
        slash["url"] = json!(url);
        events["request_url"] = json!(url);
        interactivity["request_url"] = json!(url);
    }
    json!({
        "_metadata": { "major_version": 1, "minor_version": 1 },
        "display_information": {
            "name": "hitl-bridge",
            "description": "Approve an AI agent's tool calls and answer its questions",
            "background_color": "#1d3b5a",
        },
        "features": {
            // The Messages tab, writable: people DM the bot to talk to the agent.
            "app_home": { "home_tab_enabled": false, "messages_tab_enabled": true, "messages_tab_read_only_enabled": false },
            "bot_user": { "display_name": "hitl-bridge", "always_online": true },
            "slash_commands": [slash],
        },
        "oauth_config": { "scopes": { "bot": BOT_SCOPES } },
        "settings": {
            "event_subscriptions": events,
            "interactivity": interactivity,
            "org_deploy_enabled": false,
            "socket_mode_enabled": request_url.is_none(),
            "token_rotation_enabled": false,
        },
    })
}

/// Checks `--http`'s URL: an absolute https URL (Slack posts only to https), with no
/// query or fragment (the path is appended).
pub fn check_public_url(url: &str) -> Result<(), String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("--http {url:?} is not a URL ({e})"))?;
    if parsed.scheme() != "https" {
        return Err(format!("--http {url:?}: Slack sends requests to https URLs only"));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(format!("--http {url:?}: give the base URL, without ? or #; {EVENTS_PATH} is appended"));
    }
    Ok(())
}

/// `hitl-bridge slack …`: Slack's own admin commands.
pub fn admin_command() -> clap::Command {
    clap::Command::new("slack").about("Slack's set-up: `slack manifest` prints the app manifest").subcommand_required(true).subcommand(
        clap::Command::new("manifest").about("Print the Slack app manifest (JSON) to create the app from: Socket Mode, or HTTP with --http").arg(
            clap::Arg::new("http")
                .long("http")
                .value_name("PUBLIC_URL")
                .help("The bridge's public https base URL: the manifest then uses HTTP mode, with PUBLIC_URL/slack/events as every request URL"),
        ),
    )
}

/// Runs `hitl-bridge slack …` (`matches` are `slack`'s).
pub fn run_admin_command(matches: &clap::ArgMatches) -> Result<String, String> {
    match matches.subcommand() {
        Some(("manifest", args)) => {
            let http = args.get_one::<String>("http").map(String::as_str);
            if let Some(url) = http {
                check_public_url(url)?;
            }
            serde_json::to_string_pretty(&manifest(http)).map_err(|e| e.to_string())
        }
        _ => Err("usage: hitl-bridge slack manifest [--http PUBLIC_URL]".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::command::ChatCommand;

    /// The `/hitl` hint and description name every command the bridge reads, and
    /// nothing else.
    #[test]
    fn the_slash_commands_hint_names_every_command() {
        let slash = &manifest(None)["features"]["slash_commands"][0];
        let hint = slash["usage_hint"].as_str().unwrap();
        let hinted: Vec<&str> = hint.split(" | ").map(|h| h.split(' ').next().unwrap()).collect();
        let mut names = ChatCommand::NAMES.to_vec();
        let mut sorted = hinted.clone();
        names.sort_unstable();
        sorted.sort_unstable();
        assert_eq!(sorted, names, "{hint}");
        let description = slash["description"].as_str().unwrap();
        assert!(ChatCommand::NAMES.iter().all(|n| description.contains(n)), "{description}");
    }

    #[test]
    fn socket_mode_needs_no_url_and_keeps_interactivity_on() {
        let m = manifest(None);
        assert_eq!(m["settings"]["socket_mode_enabled"], json!(true));
        assert_eq!(m["settings"]["interactivity"], json!({"is_enabled": true}));
        assert_eq!(m["settings"]["event_subscriptions"], json!({"bot_events": ["app_mention", "message.channels", "message.groups", "message.im"]}));
        assert_eq!(m["features"]["slash_commands"][0]["command"], "/hitl");
        assert!(m["features"]["slash_commands"][0].get("url").is_none());
        assert!(m.to_string().find("request_url").is_none());
    }

    #[test]
    fn http_mode_sends_everything_to_the_one_path() {
        let m = manifest(Some("https://bridge.example.com/"));
        let url = "https://bridge.example.com/slack/events";
        assert_eq!(m["settings"]["socket_mode_enabled"], json!(false));
        assert_eq!(m["settings"]["interactivity"], json!({"is_enabled": true, "request_url": url}));
        assert_eq!(m["settings"]["event_subscriptions"]["request_url"], url);
        assert_eq!(m["features"]["slash_commands"][0]["url"], url);
    }

    #[test]
    fn the_scopes_cover_what_the_bridge_calls() {
        let m = manifest(None);
        let scopes: Vec<&str> = m["oauth_config"]["scopes"]["bot"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
        for needed in ["chat:write", "commands", "im:write", "usergroups:read", "app_mentions:read", "im:history"] {
            assert!(scopes.contains(&needed), "{needed}");
        }
    }

    #[test]
    fn the_admin_command_prints_the_manifest_or_refuses_a_bad_url() {
        let run = |args: &[&str]| run_admin_command(&admin_command().try_get_matches_from(args).unwrap());
        let printed: Value = serde_json::from_str(&run(&["slack", "manifest"]).unwrap()).unwrap();
        assert_eq!(printed, manifest(None));
        let printed: Value = serde_json::from_str(&run(&["slack", "manifest", "--http", "https://b.example.com"]).unwrap()).unwrap();
        assert_eq!(printed, manifest(Some("https://b.example.com")));
        assert_eq!(
            run(&["slack", "manifest", "--http", "http://b.example.com"]),
            Err("--http \"http://b.example.com\": Slack sends requests to https URLs only".into())
        );
    }

    #[test]
    fn public_urls_must_be_https_bases() {
        assert_eq!(check_public_url("https://bridge.example.com"), Ok(()));
        for bad in ["http://bridge.example.com", "bridge.example.com", "https://b.example.com/?x=1", "https://b.example.com/#top"] {
            assert!(check_public_url(bad).is_err(), "{bad}");
        }
    }
}
