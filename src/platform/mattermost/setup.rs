//! `hitl-bridge mattermost setup`: what a System Admin creates in Mattermost before
//! the bridge starts (a bot account and its token, the `/hitl` slash command) and the
//! one server setting a bridge on a private address needs: Mattermost refuses to post
//! button clicks and dialogs to private addresses unless they are listed in
//! `ServiceSettings.AllowedUntrustedInternalConnections`
//! (<https://docs.mattermost.com/configure/environment-configuration-settings.html#allow-untrusted-internal-connections>).

/// The path button clicks and menu choices are posted to, under `mattermost.listen`.
pub const ACTIONS_PATH: &str = "/mattermost/actions";
/// The path dialog submissions are posted to.
pub const DIALOGS_PATH: &str = "/mattermost/dialogs";
/// The path the `/hitl` slash command posts to.
pub const COMMAND_PATH: &str = "/mattermost/command";

/// `hitl-bridge mattermost …`.
pub fn admin_command() -> clap::Command {
    clap::Command::new("mattermost").about("Mattermost's set-up: `mattermost setup` prints what a System Admin creates").subcommand_required(true).subcommand(
        clap::Command::new("setup").about("Print the bot account, the slash command and the server setting the bridge needs").arg(
            clap::Arg::new("public_url")
                .long("public-url")
                .value_name("PUBLIC_URL")
                .help("The bridge's address as Mattermost reaches it (mattermost.public_url)"),
        ),
    )
}

/// Runs `hitl-bridge mattermost …` (`matches` are `mattermost`'s).
pub fn run_admin_command(matches: &clap::ArgMatches) -> Result<String, String> {
    match matches.subcommand() {
        Some(("setup", args)) => {
            let public = args.get_one::<String>("public_url").map_or("https://bridge.example.com", String::as_str);
            let parsed = url::Url::parse(public).map_err(|e| format!("--public-url {public:?} is not a URL ({e})"))?;
            if !matches!(parsed.scheme(), "http" | "https") || parsed.query().is_some() || parsed.fragment().is_some() {
                return Err(format!("--public-url {public:?}: give the http(s) base address, without ? or #"));
            }
            Ok(instructions(public.trim_end_matches('/'), parsed.host_str().unwrap_or_default()))
        }
        _ => Err("usage: hitl-bridge mattermost setup [--public-url PUBLIC_URL]".into()),
    }
}

/// The set-up steps for a bridge reached at `public` (whose host is `host`).
pub fn instructions(public: &str, host: &str) -> String {
    format!(
        "\
Mattermost set-up for hitl-bridge (a System Admin does this once)

1. Bot account: System Console > Integrations > Bot Accounts: enable bot account
   creation. Then Integrations > Bot Accounts > Add Bot Account:
     username: hitl-bridge    role: Member
   Copy its access token into mattermost.bot_token
   (env HITL_BRIDGE__MATTERMOST__BOT_TOKEN), and add the bot to the team
   (mattermost.team) and to every channel in mattermost.channels or in a target.

2. Slash command: Integrations > Slash Commands > Add Slash Command:
     trigger word: hitl    request method: POST
     request URL:  {public}{COMMAND_PATH}
     autocomplete: on, hint: new | cancel | pending | id | pair CODE | web
   Copy its token into mattermost.slash_token
   (env HITL_BRIDGE__MATTERMOST__SLASH_TOKEN).

3. Buttons and dialogs post to {public}{ACTIONS_PATH} and {public}{DIALOGS_PATH}
   (mattermost.public_url = \"{public}\"). When that address is private (a LAN,
   localhost, a cluster service), allow it in System Console > Environment >
   Developer > Allow untrusted internal connections to, i.e. config.json:
     \"ServiceSettings\": {{ \"AllowedUntrustedInternalConnections\": \"{host}\" }}
   Otherwise Mattermost refuses every click with \"address forbidden\".
"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setup_names_the_bot_the_slash_command_and_the_untrusted_connections_entry() {
        let run = |args: &[&str]| run_admin_command(&admin_command().try_get_matches_from(args).unwrap());
        let printed = run(&["mattermost", "setup", "--public-url", "http://10.0.0.5:3002/"]).unwrap();
        assert!(printed.contains("Add Bot Account"), "{printed}");
        assert!(printed.contains("request URL:  http://10.0.0.5:3002/mattermost/command"), "{printed}");
        assert!(printed.contains("\"AllowedUntrustedInternalConnections\": \"10.0.0.5\""), "{printed}");
        assert!(printed.contains("http://10.0.0.5:3002/mattermost/actions"), "{printed}");
        assert!(run(&["mattermost", "setup", "--public-url", "bridge:3002"]).is_err());
        assert!(run(&["mattermost", "setup", "--public-url", "https://b.example.com/?x"]).is_err());
    }
}
