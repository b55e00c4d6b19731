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
use crate::engine::{ActError, ActOutcome};
use crate::interaction::{Actor, Attempt, FreeText, Interaction, Opening, Refusal, RequestKind, UserAction};
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
    let actor = actor_of(&query.from);
    let id = verified.interaction_id;
    // A decision is one call: the engine checks who may decide, applies and audits.
    if let Code::Decide { .. } | Code::All(_) | Code::Submit | Code::Remember(_) = code {
        return match code.direct_action() {
            Some(action) => outcome_answer(tg.engine.act(&id, actor, action).await, locale),
            None => unknown(),
        };
    }
    // Anything else opens something first (a prompt, a page, the next step): the
    // engine checks access and what the button names, and hands back the request.
    let Some(attempt) = attempt_of(code) else { return unknown() };
    let interaction = match tg.engine.open(&id, actor.clone(), attempt, Box::new(move |i| valid(i, code))).await {
        Ok(interaction) => interaction,
        Err(e) => return outcome_answer(Err(e), locale),
    };
    let i = &interaction;
    match code {
        Code::Decide { .. } | Code::All(_) | Code::Submit | Code::Remember(_) => unknown(),
        Code::Edit { action } => prompt(tg, origin, &query.from, i, PromptKind::Edit { action }, locale).await,
        Code::Comment { action } => prompt(tg, origin, &query.from, i, PromptKind::Comment { action }, locale).await,
        Code::Option { question, option } => {
            let RequestKind::Questions { questions, .. } = &i.request.kind else { return unknown() };
            let (Some(q), crate::interaction::Draft::Answers { answers }) = (questions.get(question), &i.draft) else { return unknown() };
            let selected = answers.get(question).is_some_and(|a| a.selected.contains(&option));
            if q.options.get(option).is_some_and(|o| o.input) && !(q.multi_select && selected) {
                // The backend's own free-text option: its answer is typed.
                return prompt(tg, origin, &query.from, i, PromptKind::Text { question }, locale).await;
            }
            if q.multi_select {
                // The question stays, on the page the option is on.
                let view = View { step: question, page: option / OPTIONS_PER_PAGE };
                act(tg, i, actor, UserAction::Toggle { question, option }, Some(view), locale).await
            } else {
                act(tg, i, actor, UserAction::Select { question, options: vec![option] }, Some(View { step: question + 1, page: 0 }), locale).await
            }
        }
        Code::Other { question } => prompt(tg, origin, &query.from, i, PromptKind::Text { question }, locale).await,
        Code::Skip { question } => act(tg, i, actor, UserAction::Skip { question }, Some(View { step: question + 1, page: 0 }), locale).await,
        Code::Done { question } => navigate(tg, origin, i, View { step: question + 1, page: 0 }, locale).await,
        Code::Goto { step } => navigate(tg, origin, i, View { step, page: 0 }, locale).await,
        Code::Page { step, page } => navigate(tg, origin, i, View { step, page }, locale).await,
    }
}

/// Whether what `code` opens makes sense on `interaction` as stored (who may act is
/// the engine's check): run by the engine, which refuses and audits what it rejects.
fn valid(interaction: &Interaction, code: Code) -> Result<(), Refusal> {
    let actions = interaction.request.actions();
    match code {
        Code::Edit { action } => {
            let a = actions.get(action).ok_or(Refusal::OutOfRange("action"))?;
            if a.allowed.contains(&DecisionType::Edit) {
                Ok(())
            } else {
                Err(Refusal::DecisionNotAllowed { action: a.name.clone(), decision: DecisionType::Edit })
            }
        }
        Code::Comment { action } if actions.get(action).is_none() || interaction.request.is_question() => Err(Refusal::OutOfRange("action")),
        Code::Option { question, option } => {
            let (RequestKind::Questions { questions, .. }, crate::interaction::Draft::Answers { .. }) = (&interaction.request.kind, &interaction.draft) else {
                return Err(Refusal::WrongKind { expected: "decisions", got: "answers" });
            };
            let q = questions.get(question).ok_or(Refusal::OutOfRange("question"))?;
            q.options.get(option).map(|_| ()).ok_or(Refusal::OutOfRange("option"))
        }
        Code::Other { question } => match &interaction.request.kind {
            RequestKind::Questions { questions, .. } => match questions.get(question) {
                Some(q) if q.free_text != FreeText::Disabled => Ok(()),
                Some(_) => Err(Refusal::NoFreeText),
                None => Err(Refusal::OutOfRange("question")),
            },
            RequestKind::Approval { .. } => Err(Refusal::OutOfRange("question")),
        },
        Code::Done { question } => page_exists(interaction, View { step: question + 1, page: 0 }),
        Code::Goto { step } => page_exists(interaction, View { step, page: 0 }),
        Code::Page { step, page } => page_exists(interaction, View { step, page }),
        Code::Comment { .. } | Code::Skip { .. } | Code::Decide { .. } | Code::All(_) | Code::Submit | Code::Remember(_) => Ok(()),
    }
}

/// A wizard step (or the summary after the last) and a page of it that exist.
fn page_exists(interaction: &Interaction, view: View) -> Result<(), Refusal> {
    let count = match &interaction.request.kind {
        RequestKind::Questions { questions, .. } => questions.len(),
        // An approval has one step; only its pages turn.
        RequestKind::Approval { .. } => 0,
    };
    if view.step > count || view.page >= pages(interaction, view.step) { Err(Refusal::OutOfRange("question")) } else { Ok(()) }
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

/// Shows another wizard step, or another page of one, in the clicked message (the
/// engine checked it exists).
async fn navigate(tg: &Telegram, origin: Option<&Origin>, interaction: &Interaction, view: View, locale: Locale) -> Answer {
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
