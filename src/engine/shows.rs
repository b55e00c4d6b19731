//! Showing requests in chats: the store-wide rescans every replica runs, shows that
//! failed and are due again, re-rendering what a restart left stale, and which chats
//! show a request.

use super::lanes::Job;
use super::shards::{Input, Shards, Watched};
use super::{EngineError, LOG_TARGET, PendingShown, SHOW_CLAIM_MS, Shared};

use crate::clock::now_ms;
use crate::interaction::{Interaction, Origin};
use crate::store::{ChatKey, MessageRef, ShowClaim, Showing, Store};

/// How far back a restart looks for ended requests whose cards may still show their
/// buttons (a request counts while its deadline is after that). An hour covers any
/// edit a kill can have cut short; older cards are not edited again on every start.
const ENDED_LOOKBACK_MS: i64 = 3_600_000;

impl Shared {
    /// Picks up what other replicas started: deadlines to watch (each handed to its
    /// session's shard), sessions to connect (the connector only connects those whose
    /// lease it can take).
    ///
    /// A narrow rescan (`created_since`) reads the requests created since then and
    /// hands over only those this replica does not route yet: the others' timers are
    /// already watched, and with 10,000 pending, reading and handing them all over
    /// every few seconds was most of an idle bridge's work. A full rescan (`None`)
    /// hands every pending request over again, the safety net for a timer a shard
    /// dropped (a shard keeps the timers it has: handing one twice is harmless).
    pub(super) async fn rescan(&self, shards: &Shards, created_since: Option<i64>) -> Result<(), EngineError> {
        let mut watch: Vec<Vec<Watched>> = vec![Vec::new(); shards.count()];
        for timers in self.store.pending_timers(created_since).await? {
            let new = self.routes.insert_new(&timers.id, &timers.session_id);
            if new || created_since.is_none() {
                watch[shards.of_session(&timers.session_id)].push(timers);
            }
        }
        for (shard, pending) in watch.into_iter().enumerate().filter(|(_, pending)| !pending.is_empty()) {
            shards.send(shard, Input::Watch(pending)).await;
        }
        for session in self.store.sessions_with_work().await? {
            self.connectors.deliver(&session);
        }
        self.show_outside_settles().await?;
        self.notify_pairings().await
    }

    /// A claim on `pending_shows` rows for this replica, from `now`.
    pub(super) fn show_claim(&self, now: i64) -> ShowClaim {
        ShowClaim { owner: self.show_owner.clone(), until_ms: now + SHOW_CLAIM_MS }
    }

    /// Shows again what still has to appear somewhere: failed sends whose backoff is
    /// over, and, after a restart, what was never shown. Each is shown by the shard
    /// of its session ([`Shard::reshow`]).
    pub(super) async fn show_due(&self, shards: &Shards, now: i64) -> Result<(), EngineError> {
        self.store.renew_show_claims(&self.show_claim(now), now).await?;
        for due in self.store.claim_due_shows(&self.show_claim(now), now).await? {
            let session = match self.routes.session_of(&due.interaction_id) {
                Some(session) => session,
                None => match self.store.interaction(&due.interaction_id).await? {
                    Some(interaction) => interaction.session_id,
                    None => {
                        self.store.drop_show(&due.interaction_id, &due.chat).await?;
                        continue;
                    }
                },
            };
            shards.send(shards.of_session(&session), Input::Reshow(due)).await;
        }
        Ok(())
    }

    /// After a restart, platforms re-render what does not show its current state: a
    /// chat message whose interaction moved on since it was last edited (a vote or a
    /// decision saved just before a crash, for decisions up to [`ENDED_LOOKBACK_MS`]
    /// before the start), and everything pending a terminal printed.
    /// A message already showing its state is left alone, so a restart with thousands
    /// pending costs no edits. Each lane reads the interaction when its turn comes, so
    /// one settled meanwhile is shown settled.
    pub(super) async fn show_pending(&self) {
        match self.store.stale_messages(now_ms() - ENDED_LOOKBACK_MS).await {
            Ok(stale) => {
                tracing::info!(target: LOG_TARGET, messages = stale.len(), "rendering again what does not show its current state");
                for (interaction_id, chat) in stale {
                    self.lanes.push(&chat, Job::Rerender(interaction_id));
                }
            }
            Err(e) => tracing::error!(target: LOG_TARGET, error = %e, "cannot list the messages to render again"),
        }
    }

    /// Re-renders every message that shows `interaction`, in each chat's lane, handing
    /// each lane the messages known in its chat (it reads them itself when there are
    /// none yet: a `Show` queued there records its message before the refresh runs).
    pub(super) async fn refresh(&self, interaction: &Interaction) {
        for (chat, messages) in self.showing(interaction).await {
            self.lanes.push(&chat, Job::Refresh(interaction.clone(), messages));
        }
    }

    /// Re-renders every message that shows `interaction` as the store has it when each
    /// chat's lane gets to it: a change another replica saves meanwhile (a delivery
    /// proof, a click) is never overwritten by an older copy.
    pub(super) async fn rerender(&self, interaction: &Interaction) {
        for (chat, _) in self.showing(interaction).await {
            self.lanes.push(&chat, Job::Rerender(interaction.id.clone()));
        }
    }

    /// The chats that show `interaction` or may yet.
    pub(super) async fn chats_showing(&self, interaction: &Interaction) -> Vec<ChatKey> {
        self.showing(interaction).await.into_iter().map(|(chat, _)| chat).collect()
    }

    /// The chats that show `interaction` or may yet, each with the messages there that
    /// show it: those bound to its session (a `Show` may still be queued there) and any
    /// other chat with a message showing it.
    async fn showing(&self, interaction: &Interaction) -> Vec<(ChatKey, Vec<MessageRef>)> {
        let Showing { bound: mut chats, messages, targets } = match self.store.showing(&interaction.session_id, &interaction.id).await {
            Ok(found) => found,
            Err(e) => {
                tracing::error!(target: LOG_TARGET, error = %e, "cannot load where an interaction is shown");
                return Vec::new();
            }
        };
        chats.extend(messages.iter().map(|m| m.chat.clone()));
        // Where a `Show` may still be queued: routed chats, or a pushed request's targets.
        match &interaction.origin {
            Origin::Chat => chats.extend(self.extra_chats.iter().cloned()),
            Origin::Pushed { .. } => chats.extend(targets),
        }
        chats.sort_by(|a, b| (&a.platform, &a.chat_id, &a.thread_id).cmp(&(&b.platform, &b.chat_id, &b.thread_id)));
        chats.dedup();
        chats
            .into_iter()
            .map(|chat| {
                let here = messages.iter().filter(|m| m.chat == chat).cloned().collect();
                (chat, here)
            })
            .collect()
    }
}

/// Pending interactions shown in `chat`, with the messages there that show them.
pub(super) async fn pending_in_chat(store: &Store, chat: &ChatKey) -> Result<PendingShown, EngineError> {
    let mut out = Vec::new();
    for interaction in store.pending_in_chat(chat).await? {
        let messages = store.message_refs(&interaction.id).await?;
        let here = messages.into_iter().filter(|m| m.chat == *chat).collect();
        out.push((interaction, here));
    }
    Ok(out)
}
