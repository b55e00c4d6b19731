//! A shard's loop: its inputs in order (a person's request, a backend update, a
//! deadline), one at a time, and which handler each goes to.

use tokio::sync::{mpsc, oneshot, watch};

use super::lanes::Job;
use super::shards::{Input, Watched};
use super::shows::pending_in_chat;
use super::{EngineError, EngineRequest, LOG_TARGET, PendingShown, Shard, TICK, now_ms};

use crate::store::{ChatKey, PendingShow};

impl Shard {
    /// Handles this shard's inputs in order, and its deadlines, until the engine
    /// stops; what was queued by then is still handled.
    pub(super) async fn run(mut self, mut inputs: mpsc::Receiver<Input>, mut stopping: watch::Receiver<bool>) {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                input = inputs.recv() => match input {
                    Some(input) => self.handle(input).await,
                    None => return,
                },
                _ = tick.tick() => {
                    if let Err(e) = self.escalate_due(now_ms()).await {
                        tracing::error!(target: LOG_TARGET, error = %e, "escalation check failed");
                    }
                    if let Err(e) = self.expire_due(now_ms()).await {
                        tracing::error!(target: LOG_TARGET, error = %e, "deadline check failed");
                    }
                    self.show_undelivered(now_ms()).await;
                }
                _ = stopping.changed() => break,
            }
        }
        inputs.close();
        while let Some(input) = inputs.recv().await {
            self.handle(input).await;
        }
    }

    pub(super) async fn handle(&mut self, input: Input) {
        match input {
            Input::Request(request) => self.handle_request(request).await,
            Input::Backend(input) => {
                let session_id = input.session_id.clone();
                if let Err(e) = self.handle_backend(input).await {
                    tracing::error!(target: LOG_TARGET, %session_id, error = %e, "cannot handle a backend update");
                }
            }
            Input::CancelSession { session_id, actor, done } => {
                let _ = done.send(self.cancel_session(&session_id, &actor).await);
            }
            Input::Watch(pending) => self.watch(pending),
            Input::Reshow(due) => {
                if let Err(e) = self.reshow(due).await {
                    tracing::error!(target: LOG_TARGET, error = %e, "cannot show a request again");
                }
            }
        }
    }

    /// Watches the timers of pending interactions found in the store. One already
    /// watched keeps its own (this shard may have moved it on since the read).
    pub(super) fn watch(&mut self, pending: Vec<Watched>) {
        for Watched { id, deadline_ms, escalation_ms, .. } in pending {
            if let Some(at) = escalation_ms {
                self.escalations.entry(id.clone()).or_insert(at);
            }
            self.deadlines.entry(id).or_insert(deadline_ms);
        }
    }

    /// A request due to be shown again, handed over by [`housekeeping`]: shown if it
    /// still waits (read here, in its shard, so it cannot overtake its own settle).
    pub(super) async fn reshow(&mut self, due: PendingShow) -> Result<(), EngineError> {
        let Some(interaction) = self.store.interaction(&due.interaction_id).await?.filter(|i| i.status.is_pending()) else {
            self.store.drop_show(&due.interaction_id, &due.chat).await?;
            return Ok(());
        };
        tracing::info!(target: LOG_TARGET, approval_key = %interaction.approval_key(), platform = %due.chat.platform, chat = %due.chat.chat_id, attempts = due.attempts, "showing a request again");
        if !self.lanes.push(&due.chat, Job::Show(interaction)) {
            self.store.drop_show(&due.interaction_id, &due.chat).await?;
        }
        Ok(())
    }

    pub(super) async fn handle_request(&mut self, request: EngineRequest) {
        (request.work)(self).await;
    }

    /// `/pending`'s answer, read once the chat's queued messages are out (a request
    /// shown a moment ago is then listed); the shard goes on meanwhile.
    pub(super) fn pending_in_chat(&self, chat: ChatKey) -> oneshot::Receiver<Result<PendingShown, EngineError>> {
        let (done, answer) = oneshot::channel();
        let reached = self.lanes.barrier(&chat);
        let store = self.store.clone();
        tokio::spawn(async move {
            let _ = reached.await;
            let _ = done.send(pending_in_chat(&store, &chat).await);
        });
        answer
    }
}
