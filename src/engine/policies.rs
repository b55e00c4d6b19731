//! Decision policies in the engine: the IO around the pure rules of
//! [`crate::interaction::policy`].
//!
//! - When an approval arrives, its policy is chosen ([`Shard::policy_for`]) and stored
//!   in it; a remembered rule that answers it approves it at once
//!   ([`Shard::answer_by_rule`]), and it is still shown, as "approved by rule set by X
//!   at T", so the chat sees what ran.
//! - An approval "for this session" / "always" stores its rule in the same transaction
//!   as the settle (in the engine's `act`).
//! - Escalation steps run from timers derived from the stored interaction (when it
//!   arrived, how many steps are done), so a restart or another replica resumes them
//!   exactly: [`Shard::escalate_due`]. The step is recorded (with its audit entry, and
//!   for `show_in` the chat it must now appear in) before it is performed, and only by
//!   the replica whose write wins, so a reminder is never sent twice and a `show_in`
//!   is retried until it is shown.
//! - The fallback runs at the deadline, in place of `timeouts.on_expiry`
//!   (`Shard::expire_due`).

use super::lanes::Job;
use super::{EngineError, Shard};
use crate::interaction::policy::{self, RequestFacts, StepAction};
use crate::interaction::{Interaction, Policy};
use crate::store::{AuditEntry, ChatKey};

/// The backend name policies and rules use for requests pushed over the HTTP API.
pub(super) const PUSHED_BACKEND: &str = "http";

impl Shard {
    /// Puts a new approval under its policy: the first `[[policies]]` entry that
    /// matches, else `requested` (a pushed request's own). The deadline is the
    /// request's own timeout unless the chosen policy has a fallback.
    pub(super) fn policy_for(&self, interaction: Interaction, backend: &str, chats: &[ChatKey], requested: Option<Policy>) -> Interaction {
        let targets: Vec<String> = chats.iter().map(|chat| self.networks.display_chat(chat)).collect();
        let facts = RequestFacts { request: &interaction.request, backend, session_id: &interaction.session_id, targets: &targets };
        let chosen = policy::select(&self.policies, &facts, requested.as_ref()).cloned();
        if let Some(p) = &chosen {
            tracing::info!(approval_key = %interaction.approval_key(), policy = %p.name, quorum = p.quorum, "under a decision policy");
        }
        interaction.with_policy(chosen)
    }

    /// Approves a just-stored pending approval at once when a remembered rule answers
    /// it: settled with its command and an audit entry naming the rule. Returns the
    /// interaction as it is now (resolved, or unchanged when no rule answers).
    pub(super) async fn answer_by_rule(&mut self, interaction: Interaction, backend: &str) -> Result<Interaction, EngineError> {
        if interaction.policy.as_ref().is_none_or(|p| p.remember.is_empty()) {
            return Ok(interaction);
        }
        let rules = self.store.rules_for(backend, &interaction.session_id).await?;
        let Some(rule) = policy::rule_answers(&rules, &interaction.request, &interaction.session_id, backend, interaction.policy.as_ref()) else {
            return Ok(interaction);
        };
        let now = super::now_ms();
        let mut approved = interaction.clone();
        let Some(reply) = approved.resolve_by_rule(rule, now) else { return Ok(interaction) };
        let command = self.command_for(&approved, reply);
        if !self.settle(&approved, command.as_ref(), &AuditEntry::for_settled(&approved, now)).await? {
            // Settled meanwhile (another replica): show what the store has.
            return Ok(self.store.interaction(&interaction.id).await?.unwrap_or(interaction));
        }
        tracing::info!(approval_key = %approved.approval_key(), rule = %rule.id, set_by = %rule.set_by.name, "approved by a remembered rule");
        self.metrics.policy_action("rule_approve");
        Ok(approved)
    }

    /// Watches `interaction`'s next escalation step, if it has one left.
    pub(super) fn watch_escalation(&mut self, interaction: &Interaction) {
        match interaction.next_escalation_at() {
            Some(at) => self.escalations.insert(interaction.id.clone(), at),
            None => self.escalations.remove(&interaction.id),
        };
    }

    /// Performs the escalation steps that are due.
    pub(super) async fn escalate_due(&mut self, now: i64) -> Result<(), EngineError> {
        let due: Vec<String> = self.escalations.iter().filter(|(_, at)| now >= **at).map(|(id, _)| id.clone()).collect();
        for id in due {
            let Some(at) = self.escalations.remove(&id) else { continue };
            let escalated = match self.store.interaction(&id).await {
                Ok(Some(interaction)) => self.escalate(interaction, now).await,
                Ok(None) => Ok(()),
                Err(e) => Err(e.into()),
            };
            if let Err(e) = escalated {
                // Not (all) recorded: tried again at the next tick (a step already
                // recorded is not performed twice: the stored steps say what ran).
                self.escalations.entry(id).or_insert(at);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Records, then performs, every step of `interaction` due at `now` (after
    /// downtime there may be several: each runs, oldest first).
    async fn escalate(&mut self, interaction: Interaction, now: i64) -> Result<(), EngineError> {
        // Recorded below with a new revision (or found changed): the copy is not current.
        self.copies.forget(&interaction.id);
        let steps: Vec<_> = interaction.due_escalations(now).into_iter().map(|d| (d.index, d.step.clone())).collect();
        let Some(&(last, _)) = steps.last() else {
            self.watch_escalation(&interaction);
            return Ok(());
        };
        let mut escalated = interaction.clone();
        escalated.mark_escalated(last);
        let audits: Vec<AuditEntry> = steps.iter().map(|(_, step)| AuditEntry::for_escalation(&escalated, step, now)).collect();
        // Where it is shown now: where reminders go, and where `show_in` need not.
        let showing = self.chats_showing(&interaction).await;
        let mut new_chats = Vec::new();
        for (_, step) in &steps {
            if let StepAction::ShowIn { target } = &step.action {
                match self.networks.parse_chat(target) {
                    // Already there: one message per chat.
                    Some(chat) if showing.contains(&chat) || new_chats.contains(&chat) => {}
                    Some(chat) => new_chats.push(chat),
                    // Validated when the policy was read; a stored one from an older
                    // version might not be.
                    None => tracing::warn!(approval_key = %interaction.approval_key(), %target, "cannot show a request in a chat that does not parse"),
                }
            }
        }
        if !self.store.record_escalation(&interaction, &escalated, &new_chats, &self.show_claim(now), &audits).await? {
            // Another replica did it, or the request changed (a vote, a settle): what
            // the store holds now decides.
            if let Some(current) = self.store.interaction(&interaction.id).await? {
                self.watch_escalation(&current);
            }
            return Ok(());
        }
        for (index, step) in &steps {
            tracing::info!(approval_key = %escalated.approval_key(), step = index, action = ?step.action, "escalation step");
            match &step.action {
                StepAction::Remind { mention } => {
                    self.metrics.policy_action("remind");
                    for chat in &showing {
                        self.lanes.push(chat, Job::Remind(escalated.clone(), mention.clone()));
                    }
                }
                StepAction::ShowIn { .. } => self.metrics.policy_action("show_in"),
            }
        }
        for chat in new_chats {
            if !self.lanes.push(&chat, Job::Show(escalated.clone())) {
                self.store.drop_show(&escalated.id, &chat).await?;
            }
        }
        self.watch_escalation(&escalated);
        Ok(())
    }
}

/// The `policy_actions` label of a fallback.
pub(super) fn fallback_action(interaction: &Interaction) -> Option<&'static str> {
    use crate::interaction::policy::{FallbackDecision, PolicySettlement};
    match interaction.settled_by_policy {
        Some(PolicySettlement::Fallback { decision: FallbackDecision::Approve, .. }) => Some("fallback_approve"),
        Some(PolicySettlement::Fallback { decision: FallbackDecision::Reject, .. }) => Some("fallback_reject"),
        Some(PolicySettlement::Fallback { decision: FallbackDecision::Leave, .. }) => Some("fallback_leave"),
        _ => None,
    }
}
