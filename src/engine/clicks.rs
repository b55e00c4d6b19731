//! A click on a card, taken in one trip. The platform hands over who clicked, what the
//! click would try (for the audit of a refusal) and its plan: what the click does,
//! decided on the request as the engine loaded it, once it is known the clicker may
//! act. The engine loads the request once, checks access, runs the plan, and then
//! applies the action (or opens: hands the request back for a prompt, a form or a
//! page), writing the UI state the platform keeps for the click (a wizard's step, a
//! page) in the same step. A refusal, the engine's or the plan's, is counted and
//! audited here and changes nothing: no UI state is written for a refused click.
//!
//! It owns no rule of who may act (the core's) and no wording (the platform's).

use super::{ActError, ActOutcome, LOG_TARGET, OpeningCheck, Shard, now_ms};

use crate::interaction::{Actor, Attempt, Interaction, Refusal, UserAction};

/// One row of a platform's UI state (`ui_state`, see [`crate::store::UiStates`]) that
/// a click sets: the platform names and encodes it, the engine writes it for the
/// clicked request when the click goes through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UiStateWrite {
    pub kind: &'static str,
    pub key: String,
    pub value: String,
    /// When the row stops counting (the platform's grace after the request's deadline).
    pub expires_ms: i64,
}

/// What a click does, as its platform's plan decided on the loaded request. `T` is
/// what the platform wants back when the click opens something (which prompt, which
/// page), so it decides once, inside the engine's step.
#[derive(Debug)]
pub struct Click<T> {
    does: Does<T>,
    ui: Option<UiStateWrite>,
}

#[derive(Debug)]
enum Does<T> {
    /// Actions applied in turn, each stored before the next.
    Act(UserAction, Vec<UserAction>),
    Open(T),
}

impl<T> Click<T> {
    /// Applies `action`.
    pub fn act(action: UserAction) -> Self {
        Self::act_in_turn(action, Vec::new())
    }

    /// Applies `first`, then each of `rest`, each stored before the next (Discord's
    /// Skip, which skips every question and then submits); the first refusal stops
    /// the rest, and what was applied before it stays.
    pub fn act_in_turn(first: UserAction, rest: Vec<UserAction>) -> Self {
        Self { does: Does::Act(first, rest), ui: None }
    }

    /// Opens something: the engine hands back the request as loaded, with `then`.
    pub fn open(then: T) -> Self {
        Self { does: Does::Open(then), ui: None }
    }

    /// Writes `ui` with the click: for an action, once the first one is stored and
    /// before the request's cards are re-rendered (which read it); not at all when
    /// that action ends the request (its UI state is forgotten as it ends) or is
    /// refused. For an opening, before the request is handed back.
    pub fn keeping(mut self, ui: UiStateWrite) -> Self {
        self.ui = Some(ui);
        self
    }
}

/// What a click did.
#[derive(Debug)]
pub enum Clicked<T> {
    /// The action was applied (the last one, when several were).
    Acted(ActOutcome),
    /// The clicker may open what the click opens: the request as loaded, the plan's
    /// `then`, and whether the UI state the plan asked for was written (a store
    /// failure is logged; the platform says what it shows without it).
    Opened { interaction: Interaction, then: T, ui_kept: bool },
}

impl Shard {
    /// See [`EngineHandle::click`](super::EngineHandle::click).
    #[tracing::instrument(name = "interaction", skip_all, fields(approval_key = tracing::field::Empty, session_id = tracing::field::Empty))]
    pub(super) async fn click<T>(
        &mut self,
        interaction_id: &str,
        actor: &Actor,
        attempt: Attempt,
        plan: impl FnOnce(&Interaction) -> Result<Click<T>, Refusal>,
    ) -> Result<Clicked<T>, ActError> {
        let (interaction, Click { does, ui }) = self.checked(interaction_id, actor, &attempt, plan).await?;
        match does {
            Does::Open(then) => {
                let ui_kept = match &ui {
                    Some(ui) => self.keep_ui(&interaction, ui).await,
                    None => true,
                };
                Ok(Clicked::Opened { interaction, then, ui_kept })
            }
            Does::Act(first, rest) => {
                let mut outcome = self.act_until_stored(interaction_id, actor, first, Some(interaction), ui.as_ref()).await?;
                for action in rest {
                    outcome = self.act_until_stored(interaction_id, actor, action, None, None).await?;
                }
                Ok(Clicked::Acted(outcome))
            }
        }
    }

    /// See [`EngineHandle::open`](super::EngineHandle::open).
    pub(super) async fn open(&mut self, interaction_id: &str, actor: &Actor, attempt: Attempt, valid: OpeningCheck) -> Result<Interaction, ActError> {
        self.checked(interaction_id, actor, &attempt, valid).await.map(|(interaction, ())| interaction)
    }

    /// The request, loaded once, with what `check` makes of it when `actor` may act
    /// on it; else the refusal (who may act, or `check`'s), counted and audited as
    /// `attempt`.
    async fn checked<R>(
        &mut self,
        interaction_id: &str,
        actor: &Actor,
        attempt: &Attempt,
        check: impl FnOnce(&Interaction) -> Result<R, Refusal>,
    ) -> Result<(Interaction, R), ActError> {
        let interaction = self.load(interaction_id).await?.ok_or(ActError::UnknownInteraction)?;
        crate::logging::record_interaction(&interaction);
        match interaction.may_act(actor, &self.policy, now_ms()).and_then(|()| check(&interaction)) {
            Ok(checked) => Ok((interaction, checked)),
            Err(refusal) => {
                self.record_refusal(&interaction, actor, attempt, &refusal).await;
                Err(ActError::Refused(refusal))
            }
        }
    }

    /// Writes a click's UI state for `interaction`; false (logged) when the store
    /// failed: the platform then shows what the request's draft implies.
    pub(super) async fn keep_ui(&self, interaction: &Interaction, ui: &UiStateWrite) -> bool {
        let written = self.store.ui_states().put(ui.kind, &ui.key, &interaction.id, &ui.value, now_ms(), ui.expires_ms).await;
        if let Err(e) = &written {
            tracing::warn!(target: LOG_TARGET, error = %e, kind = ui.kind, interaction = %interaction.id, "cannot store a click's UI state");
        }
        written.is_ok()
    }
}
