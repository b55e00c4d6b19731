//! What a backend said: text (and its progress while it streams), tool lines, new
//! requests, results, history after a reconnect, errors, each turned into store
//! writes and chat jobs.

use super::lanes::Job;
use super::{EngineError, LOG_TARGET, Shard, now_ms, routing};

use crate::interaction::updates::{self as history, BackendInput, HistoryResolution, Notice, SessionUpdate, ToolGroupStatus};
use crate::interaction::{Delivery, Interaction, Request};
use crate::store::AuditEntry;

impl Shard {
    pub(super) async fn handle_backend(&mut self, input: BackendInput) -> Result<(), EngineError> {
        let BackendInput { session_id, update } = input;
        match update {
            SessionUpdate::Text { text, block, .. } => {
                for chat in self.store.chats_for_session(&session_id).await? {
                    let job = match block {
                        Some(block) => Job::FinishText { block, text: text.clone() },
                        None => Job::Text(text.clone()),
                    };
                    self.lanes.push(&chat, job);
                }
            }
            SessionUpdate::TextProgress { block, text_so_far } => {
                for chat in self.store.chats_for_session(&session_id).await? {
                    self.lanes.progress(&chat, block, text_so_far.clone());
                }
            }
            SessionUpdate::ToolGroup(status) => self.tool_status(&session_id, &status).await?,
            SessionUpdate::Request(request) => self.new_interaction(&session_id, request).await?,
            SessionUpdate::InvalidRequest { approval_key, reason } => {
                tracing::warn!(target: LOG_TARGET, %session_id, %approval_key, %reason, "cannot show an approval request");
                self.notice(&session_id, Notice::UnshowableRequest { approval_key, reason }).await?;
            }
            SessionUpdate::Resolved { approval_key, reply } => {
                let now = now_ms();
                if let Some(mut interaction) = self.store.interaction_by_key(&session_id, &approval_key).await?
                    && interaction.resolve_elsewhere(reply, now)
                {
                    self.settle(&interaction, None, &AuditEntry::for_settled(&interaction, now)).await?;
                }
            }
            SessionUpdate::TimedOut { approval_key } => {
                let now = now_ms();
                if let Some(mut interaction) = self.store.interaction_by_key(&session_id, &approval_key).await? {
                    if interaction.expire(now, true) {
                        self.settle(&interaction, None, &AuditEntry::for_settled(&interaction, now)).await?;
                    } else {
                        self.delivery_changed(&session_id, &approval_key, Delivery::TooLate { at_ms: now }).await?;
                    }
                }
            }
            SessionUpdate::Delivered { approval_key } => {
                self.delivery_changed(&session_id, &approval_key, Delivery::Delivered { at_ms: now_ms() }).await?;
            }
            SessionUpdate::NoLongerWaiting { approval_key } => {
                tracing::warn!(target: LOG_TARGET, %session_id, %approval_key, "the backend no longer waits for this request; the reply was not delivered");
                self.delivery_changed(&session_id, &approval_key, Delivery::NotWaiting { at_ms: now_ms() }).await?;
            }
            SessionUpdate::TurnEnded => tracing::debug!(target: LOG_TARGET, %session_id, "turn ended"),
            SessionUpdate::TurnFailed { message } => {
                self.notice(&session_id, Notice::AgentError { message }).await?;
            }
            SessionUpdate::ResolvedInHistory(resolved) => self.reconcile(&session_id, &resolved).await?,
            SessionUpdate::TurnShown { opened_at_ms, texts, ended } => self.turn_shown(session_id, opened_at_ms, texts, ended).await?,
        }
        Ok(())
    }

    /// Records what the turn has shown once every chat of the session has performed
    /// the jobs queued before now (the texts are on screen, or their send failed and
    /// was logged). Written after the chats, never before: a bridge killed in between
    /// relays a text again after its restart rather than losing it. The engine does
    /// not wait for the chats.
    async fn turn_shown(&mut self, session_id: String, opened_at_ms: i64, texts: u64, ended: bool) -> Result<(), EngineError> {
        let shown: Vec<_> = self.store.chats_for_session(&session_id).await?.iter().map(|chat| self.lanes.barrier(chat)).collect();
        let store = self.store.clone();
        tokio::spawn(async move {
            // A lane that ended without reaching its barrier has nothing left to show.
            futures_util::future::join_all(shown).await;
            let noted = if ended { store.end_turn(&session_id, opened_at_ms).await } else { store.note_texts_shown(&session_id, opened_at_ms, texts).await };
            if let Err(e) = noted {
                tracing::warn!(target: LOG_TARGET, %session_id, error = %e, "cannot record what the turn has shown; a restart may show its last text again");
            }
        });
        Ok(())
    }

    pub(super) async fn tool_status(&mut self, session_id: &str, status: &ToolGroupStatus) -> Result<(), EngineError> {
        for chat in self.store.chats_for_session(session_id).await? {
            self.lanes.push(&chat, Job::ToolStatus(status.clone()));
        }
        Ok(())
    }

    #[tracing::instrument(name = "interaction", skip_all, fields(approval_key = tracing::field::Empty, session_id = tracing::field::Empty))]
    pub(super) async fn new_interaction(&mut self, session_id: &str, request: Request) -> Result<(), EngineError> {
        let id = uuid::Uuid::new_v4().simple().to_string()[..12].to_owned();
        let requester = self.store.requester(session_id).await?;
        let now = now_ms();
        let interaction = Interaction::new(id, session_id.to_owned(), request, requester, now);
        crate::logging::record_interaction(&interaction);
        let mut chats = self.store.chats_for_session(session_id).await?;
        chats.extend(self.extra_chats.iter().cloned());
        let chats = routing::dedup(chats);
        let backend = self.backend_kind.clone();
        let interaction = self.policy_for(interaction, &backend, &chats, None);
        // Stored with the chats it must appear in: shown now, or retried until it is.
        if !self.store.insert_interaction_to_show(&interaction, &chats, &self.show_claim(now), now).await? {
            tracing::debug!(target: LOG_TARGET, %session_id, approval_key = %interaction.approval_key(), "request already known; ignoring the replay");
            return Ok(());
        }
        self.routes.insert(&interaction.id, &interaction.session_id);
        self.deadlines.insert(interaction.id.clone(), interaction.deadline_ms);
        self.watch_escalation(&interaction);
        self.copies.keep(&interaction);
        let interaction = self.answer_by_rule(interaction, &backend).await?;
        if chats.is_empty() {
            tracing::warn!(target: LOG_TARGET, %session_id, approval_key = %interaction.approval_key(), "no chat is bound to this session; the request waits for its deadline");
        }
        for chat in chats {
            if !self.lanes.push(&chat, Job::Show(interaction.clone())) {
                self.store.drop_show(&interaction.id, &chat).await?;
            }
        }
        Ok(())
    }

    pub(super) async fn reconcile(&mut self, session_id: &str, resolved: &[HistoryResolution]) -> Result<(), EngineError> {
        let now = now_ms();
        let session = self.store.interactions_in_session(session_id).await?;
        for interaction in session.iter().filter(|i| i.status.is_pending()) {
            let mut interaction = interaction.clone();
            if let Some(found) = history::resolution_for(resolved, &interaction, &session)
                && interaction.resolve_elsewhere(found.reply.clone(), now)
            {
                tracing::info!(target: LOG_TARGET, %session_id, approval_key = %interaction.approval_key(), "resolved while the bridge was away");
                self.settle(&interaction, None, &AuditEntry::for_settled(&interaction, now)).await?;
            }
        }
        Ok(())
    }

    pub(super) async fn notice(&mut self, session_id: &str, notice: Notice) -> Result<(), EngineError> {
        for chat in self.store.chats_for_session(session_id).await? {
            self.lanes.push(&chat, Job::Notice(notice.clone()));
        }
        Ok(())
    }
}
