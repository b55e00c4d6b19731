//! Callback queries: verify the token, then one call to the engine
//! ([`crate::engine::EngineHandle::click`]), whose plan turns the button into what it
//! does on the request as loaded: a [`UserAction`] with the wizard view to show after
//! it (stored by the engine with the action, so a refused click leaves the view as it
//! was), a navigation step, or a ForceReply prompt. Then answer the query. Every query
//! gets exactly one answer, whatever happens: [`on_callback`] computes the answer
//! first and sends it last.

use teloxide::types::{CallbackQuery, ChatId, MessageId};

use super::Telegram;
use super::api;
use super::chat::{actor_of, ask_for_text, chat_key};
use super::codes::Code;
use super::render::{OPTIONS_PER_PAGE, pages};
use super::text::{Tg, tg as tg_text};
use super::wizard::{self, PromptKind, View};
use crate::engine::{ActError, ActOutcome, Click, Clicked};
use crate::interaction::{Attempt, Draft, FreeText, Interaction, Opening, Refusal, RequestKind, UserAction};
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
    api::answer(&tg.bot, query.id.clone(), answer.text.as_deref(), answer.alert).await;
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
    let Some(attempt) = attempt_of(code) else { return unknown() };
    // One call: the engine loads the request, checks who may act, runs `plan` on it
    // and applies what it says (a decision, an answer with the wizard's next step) or
    // hands the request back for what the click opens (a prompt, another page).
    let clicked = tg.engine.click(&verified.interaction_id, actor_of(&query.from), attempt, move |i: &Interaction| plan(i, code)).await;
    match clicked {
        Ok(Clicked::Acted(outcome)) => outcome_answer(Ok(outcome), locale),
        Ok(Clicked::Opened { interaction, then: Shows::Prompt(kind), .. }) => prompt(tg, origin, &query.from, &interaction, kind, locale).await,
        // The engine logged why; the message would show the step it already shows.
        Ok(Clicked::Opened { then: Shows::Page, ui_kept: false, .. }) => Answer::toast(tg_text(locale, Tg::CommandFailed)),
        Ok(Clicked::Opened { interaction, then: Shows::Page, ui_kept: true }) => redraw(tg, origin, &interaction, locale).await,
        Err(e) => outcome_answer(Err(e), locale),
    }
}

/// What a click that opens something shows, once the engine has said the clicker may.
enum Shows {
    /// A ForceReply prompt for typed text.
    Prompt(PromptKind),
    /// The clicked message again, at the wizard view the click stored.
    Page,
}

/// What a click on `code` does to `interaction` as stored (who may act is the
/// engine's check, made before): the action it applies, with the wizard view to show
/// afterwards, or what it opens; `Err` for a click that makes no sense on it (the
/// action allows no editing, the page does not exist), which the engine refuses and
/// audits.
fn plan(interaction: &Interaction, code: Code) -> Result<Click<Shows>, Refusal> {
    let actions = interaction.request.actions();
    let showing = |view| wizard::view_state(interaction, view);
    let turning_to = |view| page_exists(interaction, view).map(|()| Click::open(Shows::Page).keeping(showing(view)));
    match code {
        Code::Decide(decide) => Ok(Click::act(decide.action())),
        Code::Edit { action } => {
            let a = actions.get(action).ok_or(Refusal::OutOfRange("action"))?;
            if a.allowed.contains(&DecisionType::Edit) {
                Ok(Click::open(Shows::Prompt(PromptKind::Edit { action })))
            } else {
                Err(Refusal::DecisionNotAllowed { action: a.name.clone(), decision: DecisionType::Edit })
            }
        }
        Code::Comment { action } if actions.get(action).is_none() || interaction.request.is_question() => Err(Refusal::OutOfRange("action")),
        Code::Comment { action } => Ok(Click::open(Shows::Prompt(PromptKind::Comment { action }))),
        Code::Option { question, option } => {
            let (RequestKind::Questions { questions, .. }, Draft::Answers { answers }) = (&interaction.request.kind, &interaction.draft) else {
                return Err(Refusal::WrongKind { expected: "decisions", got: "answers" });
            };
            let q = questions.get(question).ok_or(Refusal::OutOfRange("question"))?;
            let picked = q.options.get(option).ok_or(Refusal::OutOfRange("option"))?;
            let selected = answers.get(question).is_some_and(|a| a.selected.contains(&option));
            if picked.input && !(q.multi_select && selected) {
                // The backend's own free-text option: its answer is typed.
                Ok(Click::open(Shows::Prompt(PromptKind::Text { question })))
            } else if q.multi_select {
                // The question stays, on the page the option is on.
                Ok(Click::act(UserAction::Toggle { question, option }).keeping(showing(View { step: question, page: option / OPTIONS_PER_PAGE })))
            } else {
                Ok(Click::act(UserAction::Select { question, options: vec![option] }).keeping(showing(View { step: question + 1, page: 0 })))
            }
        }
        Code::Other { question } => match &interaction.request.kind {
            RequestKind::Questions { questions, .. } => match questions.get(question) {
                Some(q) if q.free_text != FreeText::Disabled => Ok(Click::open(Shows::Prompt(PromptKind::Text { question }))),
                Some(_) => Err(Refusal::NoFreeText),
                None => Err(Refusal::OutOfRange("question")),
            },
            RequestKind::Approval { .. } => Err(Refusal::OutOfRange("question")),
        },
        Code::Skip { question } => Ok(Click::act(UserAction::Skip { question }).keeping(showing(View { step: question + 1, page: 0 }))),
        Code::Done { question } => turning_to(View { step: question + 1, page: 0 }),
        Code::Goto { step } => turning_to(View { step, page: 0 }),
        Code::Page { step, page } => turning_to(View { step, page }),
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
        Code::Decide(decide) => Some(Attempt::Act(decide.action())),
    }
}

fn refused(locale: Locale, refusal: &Refusal) -> Answer {
    let text = locale::refusal(locale, refusal);
    // An alert for strangers: a toast is easy to miss, and they should know why
    // nothing happened.
    if matches!(refusal, Refusal::NotAllowed | Refusal::SelfApproval) { Answer::alert(text) } else { Answer::toast(text) }
}

fn outcome_answer(result: Result<ActOutcome, ActError>, locale: Locale) -> Answer {
    match result {
        Ok(ActOutcome::Updated(_)) => Answer::toast(text(locale, Msg::Saved)),
        Ok(ActOutcome::Resolved(_)) => Answer::toast(text(locale, Msg::DecisionSaved)),
        Err(ActError::Refused(refusal)) => refused(locale, &refusal),
        Err(ActError::UnknownInteraction) => Answer::toast(text(locale, Msg::UnknownButton)),
        Err(ActError::StoreFailing(e)) => {
            tracing::error!(error = %e, "a click was not saved: the store is failing");
            Answer::alert(text(locale, Msg::StoreFailing))
        }
        Err(ActError::Internal(e)) => {
            tracing::error!(error = %e, "an action failed inside the bridge");
            Answer::toast(tg_text(locale, Tg::CommandFailed))
        }
    }
}

/// Shows the clicked message again, at the wizard step or page the click stored (the
/// engine checked it exists).
async fn redraw(tg: &Telegram, origin: Option<&Origin>, interaction: &Interaction, locale: Locale) -> Answer {
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex, OnceLock};

    use futures_util::future::BoxFuture;
    use serde_json::json;
    use teloxide::Bot;
    use tokio::sync::{mpsc, oneshot};

    use super::super::settings::TelegramSettings;
    use super::super::wizard::{Caches, Wizard};
    use super::super::{TgBot, pacing};
    use super::*;
    use crate::engine::{Connectors, Engine, EngineConfig, EngineHandle, EngineRequest, OnExpiry, now_ms};
    use crate::interaction::{AccessPolicy, Actor, RequestBuilder, TimeoutDefaults};
    use crate::metrics::Metrics;
    use crate::platform::descriptor::{SignInLinkError, WebLinks};
    use crate::platform::kit::inbox::DurableInbox;
    use crate::platform::kit::token::TokenSigner;
    use crate::protocol::ActionRequest;
    use crate::store::Store;

    struct NoWebInbox;

    impl WebLinks for NoWebInbox {
        fn request_link(&self, _: &str) -> Option<String> {
            None
        }

        fn sign_in_link<'a>(&'a self, _: &'a Actor) -> BoxFuture<'a, Result<Option<String>, SignInLinkError>> {
            Box::pin(async { Ok(None) })
        }
    }

    /// A running engine on a fresh SQLite file holding one two-question wizard that
    /// Thảo (1001) started, and a Telegram front end on it whose calls to the engine
    /// are counted on their way there. Telegram itself is never called: the engine
    /// shows nothing anywhere, and these clicks answer without a message.
    struct Rig {
        tg: Telegram,
        store: Store,
        interaction: Interaction,
        engine_calls: Arc<AtomicUsize>,
        stop: oneshot::Sender<()>,
        _dir: tempfile::TempDir,
    }

    async fn rig() -> Rig {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::connect(&format!("sqlite://{}", dir.path().join("bridge.db").display())).await.unwrap();
        let questions = json!([{"question": "Q1?", "options": [{"label": "A"}, {"label": "B"}]}, {"question": "Q2?", "options": [{"label": "C"}]}]);
        let ask = ActionRequest { name: "ask_user_question".into(), args: json!({ "questions": questions }), description: None, tool_use_id: None };
        let request = RequestBuilder::start("ask_1", vec![ask], vec![], Some(600)).finish(TimeoutDefaults::default()).unwrap();
        let thao = Actor::new(super::super::PLATFORM, "1001", "Thảo");
        let interaction = Interaction::new("i-1".into(), "s-1".into(), request, Some(thao), now_ms());
        assert!(store.insert_interaction(&interaction).await.unwrap());

        let config = EngineConfig {
            policy: AccessPolicy::default(),
            allowlist: Default::default(),
            pairing_admins: Default::default(),
            refusal_window_ms: 0,
            pairing_ttl_ms: 0,
            routing: Default::default(),
            // Telegram's own grammar: a platform never reads the registry of the others.
            networks: crate::interaction::chat::Networks::new(vec![Arc::new(super::super::address::ADDRESS)]),
            grace_ms: 0,
            on_expiry: OnExpiry::Leave,
            replica_id: "r1".into(),
            policies: Vec::new(),
            backend_kind: "stream".into(),
        };
        let (handle, from_platform) = EngineHandle::channel();
        let (to_engine, requests) = mpsc::channel::<EngineRequest>(16);
        let engine_calls = Arc::new(AtomicUsize::new(0));
        tokio::spawn(count_calls(from_platform, to_engine, engine_calls.clone()));
        let (_backend, backend) = mpsc::channel(1);
        let engine = Engine::start(&config, store.clone(), Vec::new(), Connectors::new(Vec::new()), backend, requests).await.unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(engine.run(async move {
            let _ = stopped.await;
        }));

        let settings = TelegramSettings::default();
        let bot = Bot::new("0:test").set_api_url(reqwest::Url::parse("http://127.0.0.1:9/").unwrap());
        let metrics = Metrics::default();
        let tg = Telegram {
            bot: TgBot { bot, limiter: pacing::Limiter::new(false), metrics: metrics.clone() },
            engine: handle,
            signer: TokenSigner::new(b"test-secret"),
            policy: AccessPolicy::default(),
            settings,
            limits: crate::listener::Limits::from_settings(&Default::default(), None),
            me: OnceLock::new(),
            wizard: Wizard::new(store.ui_states()),
            inbox: DurableInbox::new(store.inboxes().of(super::super::PLATFORM), "r1".into()),
            caches: Mutex::new(Caches::default()),
            lanes: crate::platform::kit::lanes::Lanes::new("a Telegram update"),
            tasks: Mutex::new(Vec::new()),
            metrics,
            web: Arc::new(NoWebInbox),
        };
        Rig { tg, store, interaction, engine_calls, stop, _dir: dir }
    }

    /// Passes the platform's calls on to the engine, counting them.
    async fn count_calls(mut from_platform: mpsc::Receiver<EngineRequest>, to_engine: mpsc::Sender<EngineRequest>, calls: Arc<AtomicUsize>) {
        while let Some(request) = from_platform.recv().await {
            calls.fetch_add(1, Ordering::SeqCst);
            if to_engine.send(request).await.is_err() {
                return;
            }
        }
    }

    impl Rig {
        /// `user` presses the button `code` stands for; the answer, and how many calls
        /// it took to the engine.
        async fn press(&self, user: u64, code: Code) -> (Answer, usize) {
            let token = self.tg.signer.sign(&self.interaction.id, &code.encode()).unwrap();
            let from = json!({"id": user, "is_bot": false, "first_name": format!("User {user}")});
            let query: CallbackQuery = serde_json::from_value(json!({"id": "q1", "from": from, "chat_instance": "c1", "data": token})).unwrap();
            let before = self.engine_calls.load(Ordering::SeqCst);
            let answer = click(&self.tg, &query, None, Locale::En).await;
            (answer, self.engine_calls.load(Ordering::SeqCst) - before)
        }

        async fn selected(&self) -> Vec<Vec<usize>> {
            let stored = self.store.interaction(&self.interaction.id).await.unwrap().unwrap();
            let Draft::Answers { answers } = stored.draft else { panic!("a wizard's draft holds answers") };
            answers.into_iter().map(|a| a.selected).collect()
        }

        async fn stop(self) {
            let _ = self.stop.send(());
        }
    }

    /// An option click is one call to the engine, which applies the answer and stores
    /// the wizard's next step with it.
    #[tokio::test]
    async fn an_option_click_is_one_engine_call_that_stores_the_next_step_with_the_answer() {
        let rig = rig().await;
        let (answer, calls) = rig.press(1001, Code::Option { question: 0, option: 1 }).await;
        assert_eq!((answer.text.as_deref(), answer.alert, calls), (Some("Saved"), false, 1));
        assert_eq!(rig.selected().await, [vec![1], vec![]]);
        assert_eq!(rig.tg.wizard.view(&rig.interaction.id).await, Some(View { step: 1, page: 0 }));
        rig.stop().await;
    }

    /// A stranger's option click, and a click on a step that does not exist, are
    /// refused in their one call and leave the answer and the wizard's view as they
    /// were.
    #[tokio::test]
    async fn a_refused_click_leaves_the_wizard_view_as_it_was() {
        let rig = rig().await;
        rig.press(1001, Code::Skip { question: 0 }).await;
        assert_eq!(rig.tg.wizard.view(&rig.interaction.id).await, Some(View { step: 1, page: 0 }));

        let (answer, calls) = rig.press(2002, Code::Option { question: 1, option: 0 }).await;
        assert_eq!((answer.text.as_deref(), answer.alert, calls), (Some("You are not allowed to answer this request."), true, 1));
        let (answer, calls) = rig.press(1001, Code::Goto { step: 5 }).await;
        assert_eq!((answer.alert, calls), (false, 1), "{:?}", answer.text);
        assert_eq!(rig.selected().await, [Vec::<usize>::new(), vec![]]);
        assert_eq!(rig.tg.wizard.view(&rig.interaction.id).await, Some(View { step: 1, page: 0 }));
        rig.stop().await;
    }
}
