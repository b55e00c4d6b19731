//! The gateway connection (serenity's client): READY registers the slash commands,
//! messages go to [`chat`](super::chat), interactions to [`handler`](super::handler)
//! whose first response is posted at once and whose work runs after.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serenity::all::{
    Command, CommandOptionType, Context, CreateCommand, CreateCommandOption, EventHandler, GatewayIntents, Interaction, Message, Ready, ShardManager, UserId,
};
use serenity::builder::Builder as _;

use super::{Shared, chat, handler, rest};
use crate::platform::kit::commands::{COMMANDS, LANGUAGES};
use crate::platform::locale::Locale;

/// What the bridge needs: guild and DM messages with their content (MESSAGE_CONTENT is
/// privileged: enable it in the Developer Portal; without it only DMs and mentions
/// carry text). Interactions arrive without any intent.
pub fn intents() -> GatewayIntents {
    GatewayIntents::GUILDS | GatewayIntents::GUILD_MESSAGES | GatewayIntents::DIRECT_MESSAGES | GatewayIntents::MESSAGE_CONTENT
}

/// The bridge's chat commands ([`COMMANDS`], shared with Telegram) as slash commands,
/// described in the three languages; `/pair` takes a required `code`, `/rules` an
/// optional `revoke`.
pub fn commands() -> Vec<CreateCommand> {
    COMMANDS
        .iter()
        .map(|command| {
            let mut slash = CreateCommand::new(command.name);
            for &(locale, _, discord) in LANGUAGES {
                slash = if locale == Locale::En {
                    slash.description(command.description(locale))
                } else {
                    slash.description_localized(discord, command.description(locale))
                };
            }
            match command.argument {
                Some(argument) => {
                    let mut option = CreateCommandOption::new(CommandOptionType::String, argument.name, command.argument_description(Locale::En))
                        .required(argument.required);
                    for &(locale, _, discord) in LANGUAGES.iter().filter(|(l, _, _)| *l != Locale::En) {
                        option = option.description_localized(discord, command.argument_description(locale));
                    }
                    slash.add_option(option)
                }
                None => slash,
            }
        })
        .collect()
}

/// How long [`connect`] waits for the first READY before carrying on regardless
/// (the gateway keeps trying in the background).
const READY_WAIT: Duration = Duration::from_secs(30);

struct Handler {
    shared: Arc<Shared>,
    bot: OnceLock<UserId>,
    /// Told once, at the first READY.
    first_ready: Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
}

#[serenity::async_trait]
impl EventHandler for Handler {
    async fn ready(&self, _ctx: Context, ready: Ready) {
        let _ = self.bot.set(ready.user.id);
        if let Some(first) = self.first_ready.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = first.send(());
        }
        self.shared.http.set_application_id(ready.application.id);
        tracing::info!(user = %ready.user.name, "Discord gateway ready");
        let http = self.shared.http.clone();
        match rest::retrying(&self.shared.metrics, "register commands", || Command::set_global_commands(&*http, commands())).await {
            Ok(_) => tracing::info!("slash commands registered"),
            Err(e) => tracing::error!(error = %e, "cannot register slash commands"),
        }
    }

    async fn message(&self, _ctx: Context, message: Message) {
        let Some(bot) = self.bot.get().copied() else {
            tracing::debug!("message before READY; ignored");
            return;
        };
        chat::on_message(&self.shared, &message, bot).await;
    }

    async fn interaction_create(&self, _ctx: Context, interaction: Interaction) {
        let (id, token) = match &interaction {
            Interaction::Component(c) => (c.id, c.token.clone()),
            Interaction::Modal(m) => (m.id, m.token.clone()),
            Interaction::Command(c) => (c.id, c.token.clone()),
            _ => return,
        };
        let handled = handler::handle(self.shared.clone(), interaction).await;
        let http = self.shared.http.clone();
        // The 3-second window: the response goes out before any work starts.
        match rest::retrying(&self.shared.metrics, "interaction response", || handled.response.clone().execute(&*http, (id, &token))).await {
            Ok(()) => {
                if let Some(work) = handled.work {
                    work.await;
                }
            }
            Err(e) => tracing::error!(error = %e, "cannot answer an interaction; its work is dropped so nothing half-happens"),
        }
    }
}

/// Connects the gateway and waits for its first READY (at most [`READY_WAIT`]);
/// returns its shard manager for shutdown. A gateway that gives up before READY
/// (Discord closed it: a refused token, intents not enabled in the Developer Portal)
/// is an error, so the bridge does not run deaf.
pub async fn connect(shared: Arc<Shared>, token: &str) -> Result<Arc<ShardManager>, serenity::Error> {
    // The client gets its own REST client (serenity wraps it); both point at the same
    // place, and the gateway URL comes from GET /gateway on it.
    let http = rest::http(&shared.settings, token);
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    let handler = Handler { shared, bot: OnceLock::new(), first_ready: Mutex::new(Some(ready_tx)) };
    let mut client = serenity::client::ClientBuilder::new_with_http(http, intents()).event_handler(handler).await?;
    let manager = client.shard_manager.clone();
    let (ended_tx, ended_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let result = client.start().await;
        if let Err(e) = &result {
            tracing::error!(error = %e, "the Discord gateway stopped");
        }
        let _ = ended_tx.send(result);
    });
    tokio::select! {
        Ok(()) = ready_rx => Ok(manager),
        Ok(ended) = ended_rx => Err(ended.err().unwrap_or(serenity::Error::Other("the gateway closed before READY"))),
        () = tokio::time::sleep(READY_WAIT) => {
            tracing::warn!(wait_s = READY_WAIT.as_secs(), "the Discord gateway is not READY yet; carrying on while it keeps trying");
            Ok(manager)
        }
    }
}

/// A gateway error as the operator needs to read it: what to change where.
pub fn explain(e: &serenity::Error) -> String {
    use serenity::gateway::GatewayError;
    match e {
        serenity::Error::Gateway(GatewayError::DisallowedGatewayIntents) => {
            format!("{e}: enable the Message Content intent for the bot in the Discord Developer Portal (Bot → Privileged Gateway Intents)")
        }
        serenity::Error::Gateway(GatewayError::InvalidAuthentication) => format!("{e}: discord.token was refused"),
        _ => e.to_string(),
    }
}
