//! What people do: talk to the agent, start or cancel a session, push a request over
//! the API, and act on a request (a click, a form), retried when another replica
//! changed the same draft at the same moment.

use tokio::sync::oneshot;

use super::lanes::Job;
use super::shards::Input;
use super::{ActError, ActOutcome, DRAFT_RACE_BACKOFF, Decided, EngineError, LOG_TARGET, MAX_DRAFT_RACES, PushOutcome, Shard, UiStateWrite, now_ms, policies};

use crate::interaction::{Actor, Applied, Attempt, Interaction, Origin, UserAction};
use crate::protocol::{Command, UserInfo};
use crate::store::{ApiRequest, AuditEntry, ChatKey, Queued};

/// Why a pushed request that no target would show was cancelled.
const NOT_SHOWN_ANYWHERE: &str = "not shown anywhere: every target refused it for good";

impl Shard {
    pub(super) async fn session_for(&self, chat: &ChatKey) -> Result<String, EngineError> {
        match self.store.session_for_chat(chat).await? {
            Some(session) => Ok(session),
            None => self.new_session(chat).await,
        }
    }

    pub(super) async fn new_session(&self, chat: &ChatKey) -> Result<String, EngineError> {
        let session = uuid::Uuid::new_v4().simple().to_string();
        self.store.bind_chat(chat, &session, now_ms()).await?;
        tracing::info!(target: LOG_TARGET, session_id = %session, platform = %chat.platform, chat = %chat.chat_id, "new session");
        Ok(session)
    }

    pub(super) async fn user_message(&self, chat: &ChatKey, actor: &Actor, text: &str) -> Result<String, EngineError> {
        // Platforms ask first (`admit`, in the person's language); this is the check no
        // platform can skip.
        self.gate(chat, actor, "message", text, Default::default()).await?;
        let session = self.session_for(chat).await?;
        self.store.set_requester(&session, actor).await?;
        let user = UserInfo { platform: actor.platform.clone(), id: actor.user_id.clone(), name: actor.name.clone() };
        let (command, now) = (Command::message(&session, text, Some(user)), now_ms());
        let id = self.store.enqueue(&command, now).await?;
        self.connectors.deliver_queued(Queued { id, created_at_ms: now, command });
        Ok(session)
    }

    /// A request pushed over the HTTP API: stored with its interaction in one
    /// transaction, then shown on its targets. An existing key changes nothing.
    #[tracing::instrument(name = "interaction", skip_all, fields(approval_key = %interaction.approval_key(), session_id = %interaction.session_id))]
    pub(super) async fn push(&mut self, request: ApiRequest, mut interaction: Interaction) -> Result<PushOutcome, EngineError> {
        // The agent's own policy applies only when no configured one matches.
        let requested = interaction.policy.take();
        let interaction = self.policy_for(interaction, policies::PUSHED_BACKEND, &request.targets, requested);
        if let Some(existing) = self.store.create_api_request(&request, &interaction, &self.show_claim(now_ms())).await? {
            return Ok(PushOutcome::Existing(existing));
        }
        tracing::info!(target: LOG_TARGET, approval_key = %interaction.approval_key(), agent = %request.agent, targets = request.targets.len(), "request pushed");
        self.copies.keep(&interaction);
        self.routes.insert(&interaction.id, &interaction.session_id);
        self.deadlines.insert(interaction.id.clone(), interaction.deadline_ms);
        self.watch_escalation(&interaction);
        let interaction = self.answer_by_rule(interaction, policies::PUSHED_BACKEND).await?;
        for chat in &request.targets {
            if !self.lanes.push(chat, Job::Show(interaction.clone())) {
                self.store.drop_show(&interaction.id, chat).await?;
            }
        }
        Ok(PushOutcome::Created(Box::new(interaction)))
    }

    /// Cancels one interaction (an agent's DELETE). Returns it as it is afterwards;
    /// one that had already ended is returned unchanged.
    #[tracing::instrument(name = "interaction", skip_all, fields(approval_key = tracing::field::Empty, session_id = tracing::field::Empty))]
    pub(super) async fn cancel_interaction(&mut self, interaction_id: &str, reason: &str) -> Result<Option<Interaction>, EngineError> {
        let Some(mut interaction) = self.load(interaction_id).await? else { return Ok(None) };
        crate::logging::record_interaction(&interaction);
        let now = now_ms();
        if interaction.cancel(now, reason) && !self.settle(&interaction, None, &AuditEntry::for_settled(&interaction, now)).await? {
            // Another replica settled it first: report what it stored.
            return Ok(self.store.interaction(interaction_id).await?);
        }
        Ok(Some(interaction))
    }

    /// A platform refused `interaction_id` for good in a chat: when it is a pushed
    /// request now shown nowhere and queued nowhere, and no escalation step of its
    /// policy will show it in another chat, nobody can ever answer it, so it ends at
    /// once as cancelled (its callback fires, its state lists every target under
    /// `not_shown`) rather than waiting silently for its deadline.
    pub(super) async fn end_if_shown_nowhere(&mut self, interaction_id: &str) -> Result<(), EngineError> {
        let Some(interaction) = self.store.interaction(interaction_id).await?.filter(|i| i.status.is_pending()) else { return Ok(()) };
        if !matches!(interaction.origin, Origin::Pushed { .. })
            || interaction.shows_in_another_chat_later()
            || !self.store.shown_nowhere(interaction_id).await?
        {
            return Ok(());
        }
        tracing::warn!(target: LOG_TARGET, approval_key = %interaction.approval_key(), "every target refused the request for good; cancelling it");
        self.cancel_interaction(interaction_id, NOT_SHOWN_ANYWHERE).await?;
        Ok(())
    }

    /// `/cancel` in `chat`: the `cancel` command is queued here, in the chat's shard;
    /// the session's shard settles its pending interactions and answers on the
    /// returned channel.
    pub(super) async fn cancel(&mut self, chat: &ChatKey, actor: &Actor) -> oneshot::Receiver<Result<(), EngineError>> {
        let (done, settled) = oneshot::channel();
        let session_id = match self.store.session_for_chat(chat).await {
            Ok(Some(session)) => session,
            Ok(None) => return answered(done, Err(EngineError::NoSession), settled),
            Err(e) => return answered(done, Err(e.into()), settled),
        };
        let (command, now) = (Command::Cancel { session_id: session_id.clone() }, now_ms());
        match self.store.enqueue(&command, now).await {
            Ok(id) => self.connectors.deliver_queued(Queued { id, created_at_ms: now, command }),
            Err(e) => return answered(done, Err(e.into()), settled),
        }
        // Sent from a task: the session's shard may be this one, whose queue this
        // shard must not wait on.
        let (shards, actor) = (self.shards.clone(), actor.clone());
        tokio::spawn(async move {
            let shard = shards.of_session(&session_id);
            shards.send(shard, Input::CancelSession { session_id, actor, done }).await;
        });
        settled
    }

    /// Cancels the session's pending interactions on behalf of `actor` (`/cancel`).
    pub(super) async fn cancel_session(&mut self, session_id: &str, actor: &Actor) -> Result<(), EngineError> {
        let now = now_ms();
        for mut interaction in self.store.pending_in_session(session_id).await? {
            if interaction.cancel(now, &format!("cancelled by {}", actor.name)) {
                let mut audit = AuditEntry::for_settled(&interaction, now);
                audit.actor = Some(actor.clone());
                self.settle(&interaction, None, &audit).await?;
            }
        }
        Ok(())
    }

    #[tracing::instrument(name = "interaction", skip_all, fields(approval_key = tracing::field::Empty, session_id = tracing::field::Empty))]
    pub(super) async fn act(&mut self, interaction_id: &str, actor: &Actor, action: UserAction) -> Result<ActOutcome, ActError> {
        self.act_until_stored(interaction_id, actor, action, None, None).await
    }

    /// Applies `action` and stores the result. `loaded` is the request as the caller
    /// just loaded it (a click's one load), used by the first attempt; `ui` is a
    /// click's UI state, written once the action is stored while the request still
    /// waits ([`Click::keeping`](super::Click::keeping)).
    pub(super) async fn act_until_stored(
        &mut self,
        interaction_id: &str,
        actor: &Actor,
        action: UserAction,
        mut loaded: Option<Interaction>,
        ui: Option<&UiStateWrite>,
    ) -> Result<ActOutcome, ActError> {
        // A draft write loses only to a concurrent change of the same request (another
        // replica's vote or escalation step): apply the action again to what is stored
        // now, so a vote is never lost to a race. A settle that loses is final.
        for attempt in 0..MAX_DRAFT_RACES {
            let interaction = match loaded.take() {
                Some(interaction) => interaction,
                None => self.load(interaction_id).await?.ok_or(ActError::UnknownInteraction)?,
            };
            if let Some(outcome) = self.act_once(interaction, actor, action.clone(), ui).await? {
                return Ok(outcome);
            }
            // The other replica is writing this request right now (a burst of votes):
            // give it a moment, longer each time, rather than lose to it again.
            tokio::time::sleep(DRAFT_RACE_BACKOFF * (attempt as u32 + 1)).await;
        }
        Err(ActError::Internal("the request kept changing while deciding; try again".into()))
    }

    /// One attempt at [`Shard::act_until_stored`] on `interaction` as loaded: `None`
    /// when the draft changed under it.
    async fn act_once(
        &mut self,
        mut interaction: Interaction,
        actor: &Actor,
        action: UserAction,
        ui: Option<&UiStateWrite>,
    ) -> Result<Option<ActOutcome>, ActError> {
        let interaction_id = interaction.id.clone();
        crate::logging::record_interaction(&interaction);
        let now = now_ms();
        let applied = match interaction.apply(actor, action.clone(), &self.policy, now) {
            Ok(applied) => applied,
            Err(refusal) => {
                self.record_refusal(&interaction, actor, &Attempt::Act(action), &refusal).await;
                return Err(ActError::Refused(refusal));
            }
        };
        match applied {
            Applied::Updated => {
                if !self.store.save_draft(&interaction).await? {
                    // The copy was stale (another replica wrote the row): read again.
                    self.copies.forget(&interaction_id);
                    return match self.store.interaction(&interaction_id).await? {
                        Some(current) if current.status.is_pending() => Ok(None),
                        _ => Err(self.lost_race(&interaction_id, actor, action, now).await),
                    };
                }
                // As the store holds it now: saving a draft bumps the revision.
                interaction.revision.0 += 1;
                self.copies.keep(&interaction);
                // Before the re-render, which reads it.
                if let Some(ui) = ui {
                    self.keep_ui(&interaction, ui).await;
                }
                self.refresh(&interaction).await;
                Ok(Some(ActOutcome::Updated(interaction)))
            }
            Applied::Resolved(reply) => {
                let command = self.command_for(&interaction, reply);
                let audit = AuditEntry::for_settled(&interaction, now);
                let rule = interaction.rule_to_save(&self.backend_of(&interaction));
                if !self.settle_as(&interaction, command.as_ref(), &audit, Decided::ByPerson { rule: rule.as_ref() }).await? {
                    return match self.store.interaction(&interaction_id).await? {
                        // Its draft changed meanwhile (a vote on another replica):
                        // apply this action again to what is stored.
                        Some(current) if current.status.is_pending() => Ok(None),
                        _ => Err(self.lost_race(&interaction_id, actor, action, now).await),
                    };
                }
                if let Some(rule) = &rule {
                    tracing::info!(target: LOG_TARGET, approval_key = %interaction.approval_key(), rule = %rule.id, scope = rule.scope.as_str(), tool = %rule.tool, "approval remembered");
                }
                tracing::info!(target: LOG_TARGET, approval_key = %interaction.approval_key(), session_id = %interaction.session_id, by = %actor.name, "decided");
                Ok(Some(ActOutcome::Resolved(interaction)))
            }
        }
    }

    /// The backend name rules and policies use for `interaction`'s requests.
    pub(super) fn backend_of(&self, interaction: &Interaction) -> String {
        match interaction.origin {
            Origin::Pushed { .. } => policies::PUSHED_BACKEND.to_owned(),
            Origin::Chat => self.backend_kind.clone(),
        }
    }

    /// Another replica settled the interaction between our read and our write: answer
    /// with the refusal its stored state gives.
    pub(super) async fn lost_race(&self, interaction_id: &str, actor: &Actor, action: UserAction, now: i64) -> ActError {
        match self.store.interaction(interaction_id).await {
            Ok(Some(mut current)) => match current.apply(actor, action.clone(), &self.policy, now) {
                Err(refusal) => {
                    self.record_refusal(&current, actor, &Attempt::Act(action), &refusal).await;
                    ActError::Refused(refusal)
                }
                Ok(_) => ActError::Internal("the interaction changed while deciding; try again".into()),
            },
            Ok(None) => ActError::UnknownInteraction,
            Err(e) => e.into(),
        }
    }
}

/// `settled`, with `result` already in it.
fn answered<T>(done: oneshot::Sender<T>, result: T, settled: oneshot::Receiver<T>) -> oneshot::Receiver<T> {
    let _ = done.send(result);
    settled
}
