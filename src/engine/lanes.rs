//! Outgoing work for platforms, one ordered lane per chat.
//!
//! The engine never waits on a platform: a slow chat (Telegram's per-group rate limit,
//! Discord retrying a 429) would otherwise hold up every other session. Each chat gets
//! a task that performs its jobs in the order the engine queued them, so within a chat
//! a request is always shown before its outcome, and text stays in order.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use crate::backend::ToolGroupStatus;
use crate::interaction::Interaction;
use crate::platform::{Platform, PlatformError};
use crate::store::{ChatKey, MessageRef, Store};

/// One thing to do in one chat.
#[derive(Debug)]
pub enum Job {
    Text(String),
    ToolStatus(ToolGroupStatus),
    Notice(String),
    /// Show a new interaction and remember the message that shows it.
    Show(Interaction),
    /// Re-render every message of this chat that shows the interaction.
    Refresh(Interaction),
    /// Signals once every job queued before it is done (e.g. before listing what a
    /// chat shows).
    Barrier(oneshot::Sender<()>),
}

pub struct Lanes {
    store: Store,
    platforms: HashMap<&'static str, Arc<dyn Platform>>,
    lanes: HashMap<ChatKey, mpsc::UnboundedSender<Job>>,
}

impl Lanes {
    pub fn new(store: Store, platforms: Vec<Arc<dyn Platform>>) -> Self {
        Self { store, platforms: platforms.into_iter().map(|p| (p.name(), p)).collect(), lanes: HashMap::new() }
    }

    /// Queues `job` for `chat`; a chat on a platform that is not enabled is logged and
    /// skipped.
    pub fn push(&mut self, chat: &ChatKey, job: Job) {
        let lane = match self.lanes.get(chat) {
            Some(lane) if !lane.is_closed() => lane,
            _ => {
                let Some(platform) = self.platforms.get(chat.platform.as_str()).cloned() else {
                    tracing::warn!(platform = %chat.platform, "a chat is bound to a platform that is not enabled");
                    return;
                };
                let (tx, rx) = mpsc::unbounded_channel();
                tokio::spawn(run(self.store.clone(), platform, chat.clone(), rx));
                self.lanes.entry(chat.clone()).insert_entry(tx).into_mut()
            }
        };
        if lane.send(job).is_err() {
            tracing::error!(chat = %chat.chat_id, "a chat lane stopped; a platform update is lost");
        }
    }
}

impl Lanes {
    /// Resolves once the jobs queued so far for `chat` are done.
    pub fn barrier(&mut self, chat: &ChatKey) -> oneshot::Receiver<()> {
        let (reached, wait) = oneshot::channel();
        self.push(chat, Job::Barrier(reached));
        wait
    }
}

/// Performs one chat's jobs in order until the engine drops its lanes.
async fn run(store: Store, platform: Arc<dyn Platform>, chat: ChatKey, mut jobs: mpsc::UnboundedReceiver<Job>) {
    while let Some(job) = jobs.recv().await {
        let result = match &job {
            Job::Text(text) => platform.send_text(&chat, text).await,
            Job::ToolStatus(status) => platform.tool_status(&chat, status).await,
            Job::Notice(text) => platform.send_notice(&chat, text).await,
            Job::Show(interaction) => show(&store, platform.as_ref(), &chat, interaction).await,
            Job::Refresh(interaction) => refresh(&store, platform.as_ref(), &chat, interaction).await,
            Job::Barrier(_) => Ok(()),
        };
        if let Job::Barrier(reached) = job {
            let _ = reached.send(());
            continue;
        }
        if let Err(e) = result {
            tracing::error!(platform = platform.name(), chat = %chat.chat_id, error = %e, "platform call failed");
        }
    }
}

async fn show(store: &Store, platform: &dyn Platform, chat: &ChatKey, interaction: &Interaction) -> Result<(), PlatformError> {
    if let Some(message_id) = platform.show_interaction(chat, interaction).await? {
        let message = MessageRef { interaction_id: interaction.id.clone(), chat: chat.clone(), message_id };
        if let Err(e) = store.add_message_ref(&message).await {
            // The message is out but cannot be edited later; say so loudly.
            tracing::error!(error = %e, interaction = %interaction.id, "cannot remember the message showing an interaction");
        }
    }
    Ok(())
}

/// Reads the message references when the job runs, not when it was queued, so a
/// `Show` queued just before is already recorded.
async fn refresh(store: &Store, platform: &dyn Platform, chat: &ChatKey, interaction: &Interaction) -> Result<(), PlatformError> {
    let messages = match store.message_refs(&interaction.id).await {
        Ok(messages) => messages,
        Err(e) => {
            tracing::error!(error = %e, "cannot load message references");
            return Ok(());
        }
    };
    for message in messages.iter().filter(|m| m.chat == *chat) {
        platform.refresh_interaction(message, interaction).await?;
    }
    Ok(())
}
