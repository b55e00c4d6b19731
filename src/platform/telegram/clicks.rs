//! Callback queries: verify the token, find the interaction, turn the button into a
//! [`UserAction`] for the engine (or into a navigation step or a ForceReply prompt),
//! and answer the query. Every query gets exactly one answer, whatever happens:
//! [`on_callback`] computes the answer first and sends it last.

use teloxide::types::{CallbackQuery, ChatId, MessageId};

use super::Telegram;
use super::callback::Code;
use super::chat::{actor_of, ask_for_text, chat_key};
use super::render::{OPTIONS_PER_PAGE, pages};
use super::send;
use super::text::{Tg, tg as tg_text};
use super::wizard::{PromptKind, View};
use crate::engine::{ActError, ActOutcome, now_ms};
use crate::interaction::{Actor, Attempt, FreeText, Interaction, Opening, Refusal, RefusedAttempt, RequestKind, UserAction};
use crate::platform::locale::{self, Locale, Msg, text};
use crate::protocol::DecisionType;
use crate::store::ChatKey;

/// How a callback query is answered: a toast, or an alert the person must dismiss.
struct Answer {
    text: Option<String>,
    alert: bool,
}

impl Answer {
    fn none() -> Self {
        Answer { text: None, alert: false }
    }
    fn toast(text: impl Into<String>) -> Self {
        Answer { text: Some(text.into()), alert: false }
    }
    fn alert(text: impl Into<String>) -> Self {
        Answer { text: Some(text.into()), alert: true }
    }
}

/// Where the clicked button is.
struct Origin {
    chat: ChatKey,
    chat_id: ChatId,
    message_id: MessageId,
}

pub async fn on_callback(tg: &Telegram, query: CallbackQuery) {
    tracing::debug!(user = query.from.id.0, "callback query");
    let user_language = query.from.language_code.clone();
    let origin = query.message.as_ref().map(|m| Origin { chat: chat_key(m.chat().id, m.regular_message()), chat_id: m.chat().id, message_id: m.id() });
    let chat_id = origin.as_ref().map(|o| o.chat.chat_id.clone()).unwrap_or_default();
    // Remembered before acting: the engine re-renders the message while it acts, and
    // after a restart a click may be the first thing seen from this chat.
    if let Some(code) = &user_language {
        tg.caches().remember_language(&chat_id, code);
    }
    let locale = tg.locale(&chat_id, user_language.as_deref());
    let answer = click(tg, &query, origin.as_ref(), locale).await;
    tracing::debug!(text = ?answer.text, alert = answer.alert, "answering a callback query");
    send::answer(&tg.bot, query.id.clone(), answer.text.as_deref(), answer.alert).await;
}

async fn click(tg: &Telegram, query: &CallbackQuery, origin: Option<&Origin>, locale: Locale) -> Answer {
    let unknown = || Answer::toast(text(locale, Msg::UnknownButton));
    let Some(data) = query.data.as_deref() else { return unknown() };
    let verified = match tg.signer.verify(data) {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!(user = query.from.id.0, error = %e, "refusing a callback token");
            return unknown();
        }
    };
    let Some(code) = Code::parse(&verified.code) else {
        tracing::warn!(code = %verified.code, "a signed token with an unknown code");
        return unknown();
    };
    let interaction = match tg.engine.interaction(&verified.interaction_id).await {
        Ok(Some(i)) => i,
        Ok(None) => return unknown(),
        Err(e) => {
            tracing::error!(error = %e, "cannot load an interaction for a click");
            return Answer::toast(tg_text(locale, Tg::CommandFailed));
        }
    };
    let actor = actor_of(&query.from);
    let Some(attempt) = attempt_of(code) else { return unknown() };
    let refuser = Refuser { tg, interaction_id: &interaction.id, actor: &actor, attempt, locale };
    // Checked here too (the engine checks again) because navigation and prompts do not
    // reach the engine, and a stranger must not even open a prompt.
    if let Some(refusal) = precheck(tg, &interaction, &actor) {
        return refuser.refuse(refusal).await;
    }
    let i = &interaction;
    match code {
        Code::Decide { .. } | Code::All(_) | Code::Submit | Code::Remember(_) => match code.direct_action() {
            Some(action) => act(tg, i, actor.clone(), action, None, locale).await,
            None => unknown(),
        },
        Code::Edit { action } => {
            let Some(a) = interaction.request.actions().get(action) else { return refuser.refuse(Refusal::OutOfRange("action")).await };
            if !a.allowed.contains(&DecisionType::Edit) {
                return refuser.refuse(Refusal::DecisionNotAllowed { action: a.name.clone(), decision: DecisionType::Edit }).await;
            }
            prompt(tg, origin, &query.from, &interaction, PromptKind::Edit { action }, locale).await
        }
        Code::Comment { action } => {
            if interaction.request.actions().get(action).is_none() || interaction.request.is_question() {
                return refuser.refuse(Refusal::OutOfRange("action")).await;
            }
            prompt(tg, origin, &query.from, &interaction, PromptKind::Comment { action }, locale).await
        }
        Code::Option { question, option } => {
            let (RequestKind::Questions { questions, .. }, crate::interaction::Draft::Answers { answers }) = (&interaction.request.kind, &interaction.draft)
            else {
                return refuser.refuse(Refusal::WrongKind { expected: "decisions", got: "answers" }).await;
            };
            let Some(q) = questions.get(question) else { return refuser.refuse(Refusal::OutOfRange("question")).await };
            let Some(o) = q.options.get(option) else { return refuser.refuse(Refusal::OutOfRange("option")).await };
            let selected = answers.get(question).is_some_and(|a| a.selected.contains(&option));
            if o.input && !(q.multi_select && selected) {
                // The backend's own free-text option: its answer is typed.
                return prompt(tg, origin, &query.from, &interaction, PromptKind::Text { question }, locale).await;
            }
            if q.multi_select {
                // The question stays, on the page the option is on.
                let view = View { step: question, page: option / OPTIONS_PER_PAGE };
                act(tg, i, actor.clone(), UserAction::Toggle { question, option }, Some(view), locale).await
            } else {
                act(tg, i, actor.clone(), UserAction::Select { question, options: vec![option] }, Some(View { step: question + 1, page: 0 }), locale).await
            }
        }
        Code::Other { question } => {
            let allowed = match &interaction.request.kind {
                RequestKind::Questions { questions, .. } => questions.get(question).map(|q| q.free_text != FreeText::Disabled),
                RequestKind::Approval { .. } => None,
            };
            match allowed {
                Some(true) => prompt(tg, origin, &query.from, &interaction, PromptKind::Text { question }, locale).await,
                Some(false) => refuser.refuse(Refusal::NoFreeText).await,
                None => refuser.refuse(Refusal::OutOfRange("question")).await,
            }
        }
        Code::Skip { question } => act(tg, i, actor.clone(), UserAction::Skip { question }, Some(View { step: question + 1, page: 0 }), locale).await,
        Code::Done { question } => navigate(tg, &refuser, origin, &interaction, View { step: question + 1, page: 0 }).await,
        Code::Goto { step } => navigate(tg, &refuser, origin, &interaction, View { step, page: 0 }).await,
        Code::Page { step, page } => navigate(tg, &refuser, origin, &interaction, View { step, page }).await,
    }
}

/// What a click on `code` tries, as the refusal's audit entry records it: the action
/// it applies, or what it would open. `None` for a code that names no action.
fn attempt_of(code: Code) -> Option<Attempt> {
    let open = |open, index| Some(Attempt::Open { open, index });
    match code {
        Code::Edit { action } => open(Opening::Edit, action),
        Code::Comment { action } => open(Opening::Comment, action),
        Code::Other { question } => open(Opening::Text, question),
        // As chosen: a multi-select toggles it, and either way this option is the pick.
        Code::Option { question, option } => Some(Attempt::Act(UserAction::Select { question, options: vec![option] })),
        Code::Skip { question } => Some(Attempt::Act(UserAction::Skip { question })),
        Code::Done { question } => open(Opening::Page, question + 1),
        Code::Goto { step } | Code::Page { step, .. } => open(Opening::Page, step),
        Code::Decide { .. } | Code::All(_) | Code::Submit | Code::Remember(_) => code.direct_action().map(Attempt::Act),
    }
}

/// Why `actor` may not act on `interaction` now, judged from the stored state.
fn precheck(tg: &Telegram, interaction: &Interaction, actor: &Actor) -> Option<Refusal> {
    interaction.may_act(actor, &tg.policy, now_ms()).err()
}

/// Refuses a click here, before (or instead of) the engine: the answer is made at
/// once, and the refusal handed to the engine, which counts and audits it as it does
/// its own (what the engine refuses it records itself).
struct Refuser<'a> {
    tg: &'a Telegram,
    interaction_id: &'a str,
    actor: &'a Actor,
    attempt: Attempt,
    locale: Locale,
}

impl Refuser<'_> {
    async fn refuse(&self, refusal: Refusal) -> Answer {
        let answer = refused(self.locale, &refusal);
        let refused = RefusedAttempt { interaction_id: self.interaction_id.to_owned(), actor: self.actor.clone(), attempt: self.attempt.clone(), refusal };
        self.tg.engine.refused(refused).await;
        answer
    }
}

fn refused(locale: Locale, refusal: &Refusal) -> Answer {
    let text = locale::refusal(locale, refusal);
    // An alert for strangers: a toast is easy to miss, and they should know why
    // nothing happened.
    if matches!(refusal, Refusal::NotAllowed | Refusal::SelfApproval) { Answer::alert(text) } else { Answer::toast(text) }
}

/// Sends one action to the engine. `view` is the wizard view to show afterwards; it is
/// stored before the call because the engine re-renders the message while handling it
/// (on whichever replica holds the session), and put back if the action is refused.
async fn act(tg: &Telegram, interaction: &Interaction, actor: Actor, action: UserAction, view: Option<View>, locale: Locale) -> Answer {
    let mut previous = None;
    if let Some(view) = view {
        match tg.wizard.set_view(interaction, view).await {
            Ok(p) => previous = Some(p),
            // The draft then decides the step: still a valid view.
            Err(e) => tracing::warn!(error = %e, "cannot store the wizard view"),
        }
    }
    let result = tg.engine.act(&interaction.id, actor, action).await;
    if let (Err(_), Some(previous)) = (&result, previous) {
        tg.wizard.restore_view(interaction, previous).await;
    }
    outcome_answer(result, locale)
}

fn outcome_answer(result: Result<ActOutcome, ActError>, locale: Locale) -> Answer {
    match result {
        Ok(ActOutcome::Updated(_)) => Answer::toast(text(locale, Msg::Saved)),
        Ok(ActOutcome::Resolved(_)) => Answer::toast(text(locale, Msg::DecisionSaved)),
        Err(ActError::Refused(refusal)) => refused(locale, &refusal),
        Err(ActError::UnknownInteraction) => Answer::toast(text(locale, Msg::UnknownButton)),
        Err(ActError::Internal(e)) => {
            tracing::error!(error = %e, "an action failed inside the bridge");
            Answer::toast(tg_text(locale, Tg::CommandFailed))
        }
    }
}

/// Shows another wizard step, or another page of one, in the clicked message.
async fn navigate(tg: &Telegram, refuser: &Refuser<'_>, origin: Option<&Origin>, interaction: &Interaction, view: View) -> Answer {
    let locale = refuser.locale;
    let count = match &interaction.request.kind {
        RequestKind::Questions { questions, .. } => questions.len(),
        // An approval has one step; only its pages turn.
        RequestKind::Approval { .. } => 0,
    };
    if view.step > count || view.page >= pages(interaction, view.step) {
        return refuser.refuse(Refusal::OutOfRange("question")).await;
    }
    if let Err(e) = tg.wizard.set_view(interaction, view).await {
        tracing::warn!(error = %e, "cannot store the wizard view");
        return Answer::toast(tg_text(locale, Tg::CommandFailed));
    }
    let Some(origin) = origin else { return Answer::none() };
    match tg.redraw(origin.chat_id, origin.message_id, interaction, locale).await {
        Ok(()) => Answer::none(),
        Err(e) => {
            tracing::warn!(error = %e, "cannot show the next step");
            Answer::toast(tg_text(locale, Tg::CommandFailed))
        }
    }
}

async fn prompt(tg: &Telegram, origin: Option<&Origin>, user: &teloxide::types::User, interaction: &Interaction, kind: PromptKind, locale: Locale) -> Answer {
    // A button on an inline message has no chat to ask in; our messages are never inline.
    let Some(origin) = origin else { return Answer::toast(text(locale, Msg::UnknownButton)) };
    match ask_for_text(tg, &origin.chat, user, interaction, kind, locale).await {
        Ok(()) => Answer::none(),
        Err(e) => {
            tracing::warn!(error = %e, "cannot send a prompt");
            Answer::toast(tg_text(locale, Tg::CommandFailed))
        }
    }
}
