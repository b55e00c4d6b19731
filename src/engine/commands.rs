//! Running the chat commands that steer a session ([`ChatCommand`]), the same for
//! every platform; each platform shows the [`CommandOutcome`] its own way. `/id`,
//! `/pair` and `/web` are the platform's to answer (they need what only it knows: how
//! it writes ids, whether the chat is a direct one).

use super::{EngineError, EngineHandle, PendingShown, RevokeRefusal};
use crate::interaction::chat::ChatKey;
use crate::interaction::command::ChatCommand;
use crate::interaction::{Actor, RememberedRule};

/// What a chat command did.
#[derive(Debug)]
pub enum CommandOutcome {
    SessionStarted {
        session_id: String,
    },
    Cancelled,
    /// `/cancel` in a chat with no session.
    NoSession,
    Pending(PendingShown),
    Rules(Vec<RememberedRule>),
    /// Boxed: a rule is large beside the other outcomes.
    Revoked(Box<RememberedRule>),
    RevokeRefused(RevokeRefusal),
    /// `/rules` with words it does not take.
    RulesUsage,
    /// `/id`, `/pair` or `/web`: the platform answers them itself.
    ForThePlatform,
    Failed(EngineError),
}

impl EngineHandle {
    /// Runs `command` for `actor` in `chat`. Admission is the caller's to check first
    /// ([`ChatCommand::needs_admission`]), as it answers a stranger its own way.
    pub async fn run_command(&self, chat: ChatKey, actor: Actor, command: &ChatCommand) -> CommandOutcome {
        let failed = CommandOutcome::Failed;
        match command {
            ChatCommand::New => self.new_session(chat).await.map_or_else(failed, |session_id| CommandOutcome::SessionStarted { session_id }),
            ChatCommand::Cancel => match self.cancel(chat, actor).await {
                Ok(()) => CommandOutcome::Cancelled,
                Err(EngineError::NoSession) => CommandOutcome::NoSession,
                Err(e) => failed(e),
            },
            ChatCommand::Pending => self.pending_in_chat(chat).await.map_or_else(failed, CommandOutcome::Pending),
            ChatCommand::Rules => self.rules(chat, actor).await.map_or_else(failed, CommandOutcome::Rules),
            ChatCommand::Revoke { id } => {
                self.revoke_rule(chat, actor, id).await.map_or_else(CommandOutcome::RevokeRefused, |rule| CommandOutcome::Revoked(Box::new(rule)))
            }
            ChatCommand::RulesUsage => CommandOutcome::RulesUsage,
            ChatCommand::Id | ChatCommand::Pair { .. } | ChatCommand::Web => CommandOutcome::ForThePlatform,
        }
    }
}
