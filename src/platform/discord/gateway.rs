//! The gateway connection (serenity's client): READY registers the slash commands,
//! messages go to [`chat`](super::chat), interactions to [`handler`](super::handler)
//! whose first response is posted at once and whose work runs after.

use std::sync::{Arc, OnceLock};

use serenity::all::{Command, Context, CreateCommand, EventHandler, GatewayIntents, Interaction, Message, Ready, ShardManager, UserId};
use serenity::builder::Builder as _;

use super::text::{DMsg, dtext};
use super::{Shared, chat, handler, rest};
use crate::platform::locale::Locale;

/// What the bridge needs: guild and DM messages with their content (MESSAGE_CONTENT is
/// privileged: enable it in the Developer Portal; without it only DMs and mentions
/// carry text). Interactions arrive without any intent.
pub fn intents() -> GatewayIntents {
    GatewayIntents::GUILDS | GatewayIntents::GUILD_MESSAGES | GatewayIntents::DIRECT_MESSAGES | GatewayIntents::MESSAGE_CONTENT
}

/// `/new`, `/cancel`, `/pending`, described in the three languages.
pub fn commands() -> Vec<CreateCommand> {
    [("new", DMsg::NewDescription), ("cancel", DMsg::CancelDescription), ("pending", DMsg::PendingDescription)]
        .into_iter()
        .map(|(name, msg)| {
            CreateCommand::new(name)
                .description(dtext(Locale::En, msg))
                .description_localized("vi", dtext(Locale::Vi, msg))
                .description_localized("zh-CN", dtext(Locale::Zh, msg))
        })
        .collect()
}

struct Handler {
    shared: Arc<Shared>,
    bot: OnceLock<UserId>,
}

#[serenity::async_trait]
impl EventHandler for Handler {
    async fn ready(&self, _ctx: Context, ready: Ready) {
        let _ = self.bot.set(ready.user.id);
        self.shared.http.set_application_id(ready.application.id);
        tracing::info!(user = %ready.user.name, "Discord gateway ready");
        let http = self.shared.http.clone();
        match rest::retrying("register commands", || Command::set_global_commands(&*http, commands())).await {
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
        match rest::retrying("interaction response", || handled.response.clone().execute(&*http, (id, &token))).await {
            Ok(()) => {
                if let Some(work) = handled.work {
                    work.await;
                }
            }
            Err(e) => tracing::error!(error = %e, "cannot answer an interaction; its work is dropped so nothing half-happens"),
        }
    }
}

/// Connects the gateway in the background; returns its shard manager for shutdown.
pub async fn connect(shared: Arc<Shared>, token: &str) -> Result<Arc<ShardManager>, serenity::Error> {
    // The client gets its own REST client (serenity wraps it); both point at the same
    // place, and the gateway URL comes from GET /gateway on it.
    let http = rest::http(&shared.settings, token);
    let handler = Handler { shared, bot: OnceLock::new() };
    let mut client = serenity::client::ClientBuilder::new_with_http(http, intents()).event_handler(handler).await?;
    let manager = client.shard_manager.clone();
    tokio::spawn(async move {
        if let Err(e) = client.start().await {
            tracing::error!(error = %e, "the Discord gateway stopped");
        }
    });
    Ok(manager)
}
