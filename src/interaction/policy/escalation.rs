//! Escalation: what happens to a request nobody answers, as a pure schedule.
//!
//! A policy lists steps, each at an offset from the request's creation: remind in the
//! chats it is shown in, mentioning someone ([`StepAction::Remind`]), then show it in
//! another chat too ([`StepAction::ShowIn`]). A [`Fallback`] ends it at its own offset.
//! This module only says which steps are due; the engine performs them, and keeps how
//! many are done in the interaction, so the same inputs (creation time, steps done, now)
//! give the same answer before and after a restart.
//!
//! Rules (documented in config/default.toml):
//! - steps run in order; a step is due once `created + after ≤ now`;
//! - a step at or after the interaction's deadline never runs (the deadline ends the
//!   request first; with a fallback the deadline *is* the fallback's moment);
//! - after downtime several steps may be due at once: all of them are returned, oldest
//!   first, so a reminder is never silently lost and a later `show_in` still happens.

use serde::{Deserialize, Serialize};

/// Who a reminder mentions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "who", rename_all = "snake_case")]
pub enum Mention {
    /// Everyone who may decide (the policy's approvers, else the configured ones).
    Approvers,
    /// One person, `platform:user_id` in config.
    User { platform: String, user_id: String },
    /// A Discord role, `role:ROLE_ID` in config.
    Role { role_id: String },
}

/// What one escalation step does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum StepAction {
    /// Post a reminder in every chat the request is shown in.
    Remind { mention: Mention },
    /// Show the request in one more chat (`platform:chat[/thread]`, as
    /// `routing.channels`), with the same buttons.
    ShowIn { target: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EscalationStep {
    /// Seconds after the request was created.
    pub after_secs: u64,
    #[serde(flatten)]
    pub action: StepAction,
}

impl EscalationStep {
    pub fn due_at_ms(&self, created_at_ms: i64) -> i64 {
        created_at_ms.saturating_add((self.after_secs as i64).saturating_mul(1000))
    }
}

/// How a request nobody decided ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FallbackDecision {
    /// Approve every action.
    Approve,
    /// Reject every action, saying why.
    Reject,
    /// End the request and send nothing (as `timeouts.on_expiry = "leave"`): the agent
    /// decides what its own timeout means.
    Leave,
}

impl FallbackDecision {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::Reject => "reject",
            Self::Leave => "leave",
        }
    }
}

/// The last word of an escalation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fallback {
    pub after_secs: u64,
    pub decision: FallbackDecision,
}

/// One step that is due now, with its index (pass it to `mark_escalated`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueStep<'a> {
    pub index: usize,
    pub step: &'a EscalationStep,
}

/// The steps due at `now_ms`, given that the first `done` have been performed.
pub fn due_steps(steps: &[EscalationStep], created_at_ms: i64, deadline_ms: i64, done: usize, now_ms: i64) -> Vec<DueStep<'_>> {
    steps
        .iter()
        .enumerate()
        .skip(done)
        .take_while(|(_, s)| s.due_at_ms(created_at_ms) <= now_ms)
        .filter(|(_, s)| s.due_at_ms(created_at_ms) < deadline_ms)
        .map(|(index, step)| DueStep { index, step })
        .collect()
}

/// When the next step not yet performed is due, if it will run at all (before the
/// deadline): the engine's durable timer.
pub fn next_due_at(steps: &[EscalationStep], created_at_ms: i64, deadline_ms: i64, done: usize) -> Option<i64> {
    steps.get(done).map(|s| s.due_at_ms(created_at_ms)).filter(|&at| at < deadline_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: i64 = 1_700_000_000_000;

    fn steps() -> Vec<EscalationStep> {
        vec![
            EscalationStep { after_secs: 300, action: StepAction::Remind { mention: Mention::Role { role_id: "900".into() } } },
            EscalationStep { after_secs: 900, action: StepAction::ShowIn { target: "discord:1300".into() } },
        ]
    }

    fn indexes(due: Vec<DueStep<'_>>) -> Vec<usize> {
        due.iter().map(|d| d.index).collect()
    }

    #[test]
    fn steps_come_due_in_order_and_once_done_stay_done() {
        let s = steps();
        let deadline = T0 + 1_800_000;
        assert!(due_steps(&s, T0, deadline, 0, T0 + 299_999).is_empty());
        assert_eq!(indexes(due_steps(&s, T0, deadline, 0, T0 + 300_000)), [0]);
        assert!(due_steps(&s, T0, deadline, 1, T0 + 899_999).is_empty());
        assert_eq!(indexes(due_steps(&s, T0, deadline, 1, T0 + 900_000)), [1]);
        assert!(due_steps(&s, T0, deadline, 2, T0 + 1_000_000).is_empty());
        assert_eq!(next_due_at(&s, T0, deadline, 0), Some(T0 + 300_000));
        assert_eq!(next_due_at(&s, T0, deadline, 1), Some(T0 + 900_000));
        assert_eq!(next_due_at(&s, T0, deadline, 2), None);
    }

    #[test]
    fn after_downtime_every_overdue_step_is_due_oldest_first() {
        assert_eq!(indexes(due_steps(&steps(), T0, T0 + 1_800_000, 0, T0 + 1_000_000)), [0, 1]);
    }

    #[test]
    fn a_step_at_or_after_the_deadline_never_runs() {
        let s = steps();
        assert_eq!(indexes(due_steps(&s, T0, T0 + 900_000, 0, T0 + 900_000)), [0]);
        assert_eq!(next_due_at(&s, T0, T0 + 900_000, 1), None);
    }

    #[test]
    fn step_json_is_flat_and_tagged() {
        let json = serde_json::to_value(steps()).unwrap();
        assert_eq!(
            json,
            serde_json::json!([
                {"after_secs":300,"step":"remind","mention":{"who":"role","role_id":"900"}},
                {"after_secs":900,"step":"show_in","target":"discord:1300"}
            ])
        );
        let back: Vec<EscalationStep> = serde_json::from_value(json).unwrap();
        assert_eq!(back, steps());
    }
}
