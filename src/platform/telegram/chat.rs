//! Incoming messages: a ForceReply answer (Other text, Edit JSON, a comment), a
//! command (`/new`, `/cancel`, `/pending`, `/rules`, `/start`, `/help`, `/pair`, `/web`), or a message
//! for the agent. Commands and messages pass the engine's admission first: a stranger
//! gets the refusal (or pairing code) as a reply, and nothing reaches the agent. In
//! groups only messages addressed to the bot count (a command, an @mention, a reply
//! to the bot) unless `telegram.respond_to_all` is set; this is also why the bot
//! works with BotFather's privacy mode on.

use teloxide::types::{ChatId, ForceReply, Message, ReplyMarkup, User};

use super::send;
use super::text::{MAX_PLACEHOLDER_CHARS, Tg, cut, escape, escape_cut, tg as tg_text};
use super::wizard::{self, Prompt, PromptKind, View};
use super::{PLATFORM, Telegram};
use crate::engine::{ActError, Click, CommandOutcome, EngineError, PairRefusal, PendingShown};
use crate::interaction::command::ChatCommand;
use crate::interaction::{Actor, Attempt, Interaction, Refusal, RequestKind, UserAction};
use crate::platform::PlatformError;
use crate::platform::kit::commands;
use crate::platform::kit::refusals::{Refused, engine_failure, paired_notice, stranger_notice};
use crate::platform::locale::{self, Locale, Msg, text};
use crate::store::ChatKey;

/// The chat key of a message: the chat, plus the forum topic when it is in one.
/// Reply threads in ordinary groups are not topics and share the chat's session.
/// `/pending` lists at most this many requests.
const MAX_PENDING_LISTED: usize = 5;

pub fn chat_key(chat_id: ChatId, message: Option<&Message>) -> ChatKey {
    let thread = message.filter(|m| m.is_topic_message).and_then(|m| m.thread_id).map(|t| t.0.0.to_string());
    ChatKey { platform: PLATFORM.into(), chat_id: chat_id.0.to_string(), thread_id: thread }
}

pub fn actor_of(user: &User) -> Actor {
    Actor::new(PLATFORM, &user.id.0.to_string(), &user.full_name())
}

pub async fn on_message(tg: &Telegram, message: Message) {
    let Some(user) = message.from.as_ref().filter(|u| !u.is_bot) else { return };
    let Some(typed) = message.text() else { return };
    let chat = chat_key(message.chat.id, Some(&message));
    if let Some(code) = &user.language_code {
        tg.caches().remember_language(&chat.chat_id, code);
    }
    let locale = tg.locale(&chat.chat_id, user.language_code.as_deref());
    let private = message.chat.is_private();
    let reply_to = message.reply_to_message().map(|m| m.id.0);
    let is_command = typed.starts_with('/');

    // Typed text for an open prompt: the reply to it, or in a private chat simply the
    // person's next message (phones do not always keep the reply attached).
    // Looked up in the store: the prompt may have been sent by another replica.
    match tg.wizard.take_prompt(message.chat.id.0, user.id.0, reply_to, private && !is_command).await {
        Ok(Some(prompt)) => return answer_prompt(tg, &chat, user, prompt, typed, locale).await,
        Ok(None) => {}
        Err(e) => {
            // Not knowing whether this text answers a prompt, passing it to the agent
            // could start a turn with someone's edit JSON: ask them to send it again.
            tracing::error!(error = %e, "cannot look up a prompt");
            log_failure(send::html(&tg.bot, &chat, &escape(tg_text(locale, Tg::CommandFailed)), None).await.map(|_| ()));
            return;
        }
    }

    let (me_id, me_name) = tg.me.get().cloned().unwrap_or_default();
    if let Some(command_line) = typed.strip_prefix('/') {
        let (command, rest) = command_line.split_once(char::is_whitespace).unwrap_or((command_line, ""));
        let (command, target) = command.split_once('@').unwrap_or((command, ""));
        if !target.is_empty() && !target.eq_ignore_ascii_case(&me_name) {
            return; // a command for another bot in the group
        }
        let parsed = ChatCommand::parse(command, rest);
        // `/pair` is the admins' business, whoever may talk; `/id` is for anyone (a
        // newcomer needs their id before anyone can admit them), `/web` too (see
        // `ChatCommand::needs_admission`); everything else (even /start and /help,
        // which then explain the refusal) needs admission.
        match &parsed {
            Some(ChatCommand::Pair { code }) => return pair(tg, &chat, user, code, private, locale).await,
            Some(ChatCommand::Id) => return ids(tg, &chat, user, locale).await,
            Some(ChatCommand::Web) => return web_link(tg, &chat, user, private, locale).await,
            _ => {}
        }
        if !admitted(tg, &chat, user, "command", typed, locale, message.id).await {
            return;
        }
        let Some(parsed) = parsed else {
            let command = command.to_ascii_lowercase();
            if command == "start" || command == "help" {
                // `/web` is offered only while there is an inbox to sign in to.
                let help = if tg.web.is_on() { Tg::Help } else { Tg::HelpNoInbox };
                log_failure(send::html(&tg.bot, &chat, &escape(tg_text(locale, help)), None).await.map(|_| ()));
                return;
            }
            // Any other command is a message for the agent, without the slash syntax.
            return to_agent(tg, chat, user, format!("/{command} {rest}").trim(), locale).await;
        };
        let failed = tg_text(locale, Tg::CommandFailed);
        match tg.engine.run_command(chat.clone(), actor_of(user), &parsed).await {
            CommandOutcome::Pending(waiting) => pending(tg, &chat, &waiting, locale).await,
            outcome => {
                let reply = commands::reply(locale, &outcome, failed).unwrap_or_else(|| failed.to_owned());
                log_failure(send::html(&tg.bot, &chat, &escape(&reply), None).await.map(|_| ()));
            }
        }
        return;
    }

    let mention = format!("@{me_name}");
    let mentioned = !me_name.is_empty() && find_mention(typed, &mention).is_some();
    let replied_to_bot = message.reply_to_message().and_then(|m| m.from.as_ref()).is_some_and(|u| u.id.0 == me_id && me_id != 0);
    if !(private || tg.settings.respond_to_all || mentioned || replied_to_bot) {
        return;
    }
    let cleaned = if mentioned { strip_mention(typed, &mention) } else { typed.trim().to_owned() };
    if cleaned.is_empty() {
        return;
    }
    if !admitted(tg, &chat, user, "message", &cleaned, locale, message.id).await {
        return;
    }
    to_agent(tg, chat, user, &cleaned, locale).await;
}

/// Asks the engine whether `user` may talk here; a stranger gets the refusal (with a
/// pairing code when pairing is on) as a reply to their message, once per refusal
/// window: within it they get nothing.
async fn admitted(
    tg: &Telegram,
    chat: &ChatKey,
    user: &User,
    attempted: &'static str,
    typed: &str,
    locale: Locale,
    message: teloxide::types::MessageId,
) -> bool {
    match tg.engine.admit(chat.clone(), actor_of(user), attempted, typed, locale.code()).await {
        Ok(()) => true,
        Err(EngineError::NotAdmitted(stranger)) => {
            if !stranger.silent {
                log_failure(send::refusal(&tg.bot, chat, &escape(&stranger_notice(&stranger, locale)), Some(message)).await.map(|_| ()));
            }
            false
        }
        Err(e) => {
            let notice = engine_failure(locale, &e, "cannot check who may talk", tg_text(locale, Tg::CommandFailed));
            log_failure(send::html(&tg.bot, chat, &escape(&notice), None).await.map(|_| ()));
            false
        }
    }
}

/// `/id`: the person's, the chat's and the topic's ids as the config writes them; at
/// most once per `ID_ANSWER_EVERY` (10 s) per chat.
async fn ids(tg: &Telegram, chat: &ChatKey, user: &User, locale: Locale) {
    if !tg.caches().may_answer_id(&chat.chat_id, std::time::Instant::now()) {
        return;
    }
    let you = format!("telegram:{}", user.id.0);
    let here = format!("telegram:{}", chat.chat_id);
    let topic = chat.thread_id.as_ref().map(|t| format!("{here}/{t}"));
    let reply = locale::ids(locale, &you, &here, topic.as_deref());
    log_failure(send::html(&tg.bot, chat, &escape(&reply), None).await.map(|_| ()));
}

/// `/pair CODE`: approves a pairing code, for an admin (`access.admins`) in an admin
/// chat or in their private chat with the bot (`private`).
async fn pair(tg: &Telegram, chat: &ChatKey, user: &User, code: &str, private: bool, locale: Locale) {
    let reply = match tg.engine.pair(chat.clone(), actor_of(user), code, private).await {
        Ok(paired) => paired_notice(locale, &paired),
        // Already told within the refusal window, like a stranger's messages.
        Err(PairRefusal::NotAdmin { silent: true }) => return,
        Err(refusal) => refusal.notice(locale).unwrap_or_else(|| tg_text(locale, Tg::CommandFailed).to_owned()),
    };
    log_failure(send::html(&tg.bot, chat, &escape(&reply), None).await.map(|_| ()));
}

/// `/web`: a one-time sign-in link to the web inbox, in a direct message only (the
/// link signs in whoever opens it first). Sent without a link preview, like every
/// message of the bridge ([`send`]): a preview would fetch the link's page.
async fn web_link(tg: &Telegram, chat: &ChatKey, user: &User, private: bool, locale: Locale) {
    let reply = commands::web_reply(&*tg.web, &actor_of(user), private, locale).await.unwrap_or_else(|| tg_text(locale, Tg::CommandFailed).to_owned());
    log_failure(send::html(&tg.bot, chat, &escape(&reply), None).await.map(|_| ()));
}

/// Where `@bot` is mentioned in `text`, ignoring ASCII case (usernames are ASCII) and
/// not as the prefix of a longer name. Bytes of an ASCII needle never occur inside a
/// multi-byte UTF-8 character, so the position is always a char boundary.
fn find_mention(text: &str, mention: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let needle = mention.as_bytes();
    (0..bytes.len().saturating_sub(needle.len()) + 1).find(|&at| {
        bytes.get(at..at + needle.len()).is_some_and(|w| w.eq_ignore_ascii_case(needle))
            && bytes.get(at + needle.len()).is_none_or(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
    })
}

/// `text` without the `@bot` mention, spaces tidied.
fn strip_mention(text: &str, mention: &str) -> String {
    let Some(at) = find_mention(text, mention) else { return text.trim().to_owned() };
    let before = text.get(..at).unwrap_or_default();
    let after = text.get(at + mention.len()..).unwrap_or_default();
    format!("{before} {after}").split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `/pending`: each request still waiting here, as a reply to the message that shows
/// it (tapping the quote jumps there), with its deadline.
async fn pending(tg: &Telegram, chat: &ChatKey, waiting: &PendingShown, locale: Locale) {
    if waiting.is_empty() {
        log_failure(send::html(&tg.bot, chat, &escape(text(locale, Msg::NoPending)), None).await.map(|_| ()));
        return;
    }
    // A handful is enough to find them; each is a message, and chats are rate limited.
    for (interaction, messages) in waiting.iter().take(MAX_PENDING_LISTED) {
        let what = match &interaction.request.kind {
            RequestKind::Approval { actions } => actions.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join(", "),
            RequestKind::Questions { questions, .. } => questions.first().map(|q| q.text.clone()).unwrap_or_default(),
        };
        let line = format!("⏳ {}: {} · ⏰ {}", escape(text(locale, Msg::Pending)), escape_cut(&what, 300), locale::clock(interaction.deadline_ms));
        let reply_to = messages.first().and_then(|m| m.message_id.parse::<i32>().ok()).map(teloxide::types::MessageId);
        log_failure(send::html_reply(&tg.bot, chat, &line, None, reply_to).await.map(|_| ()));
    }
}

/// A message for the agent, from someone already admitted (the engine checks again).
async fn to_agent(tg: &Telegram, chat: ChatKey, user: &User, text: &str, locale: Locale) {
    let notice = match tg.engine.user_message(chat.clone(), actor_of(user), text.to_owned()).await {
        Ok(_) => return,
        Err(EngineError::NotAdmitted(stranger)) if stranger.silent => return,
        Err(EngineError::NotAdmitted(stranger)) => {
            let refusal = escape(&stranger_notice(&stranger, locale));
            return log_failure(send::refusal(&tg.bot, &chat, &refusal, None).await.map(|_| ()));
        }
        Err(e) => engine_failure(locale, &e, "cannot pass a message to the agent", tg_text(locale, Tg::CommandFailed)),
    };
    log_failure(send::html(&tg.bot, &chat, &escape(&notice), None).await.map(|_| ()));
}

/// Typed text for a prompt goes to the engine; a refused edit gets the reason and a
/// fresh prompt, so the person can try again without pressing Edit.
async fn answer_prompt(tg: &Telegram, chat: &ChatKey, user: &User, prompt: Prompt, typed: &str, locale: Locale) {
    let id = prompt.interaction_id.clone();
    let action = match prompt.kind {
        PromptKind::Text { question } => UserAction::OtherText { question, text: typed.to_owned() },
        PromptKind::Edit { action } => UserAction::EditArgs { action, json: typed.to_owned() },
        PromptKind::Comment { action } => UserAction::Comment { action, text: typed.to_owned() },
    };
    let attempt = Attempt::Act(action.clone());
    let kind = prompt.kind;
    // One call: the engine loads the request, applies the text and stores the view
    // with it (a refused answer leaves the view as it was).
    let plan = move |interaction: &Interaction| {
        let click = Click::<()>::act(action);
        Ok(match kind {
            // After typed text a single-choice question is answered: show the next one.
            // A multi-select question stays, so more options can still be ticked.
            PromptKind::Text { question } => {
                let multi =
                    matches!(&interaction.request.kind, RequestKind::Questions { questions, .. } if questions.get(question).is_some_and(|q| q.multi_select));
                let step = if multi { question } else { question + 1 };
                click.keeping(wizard::view_state(interaction, View { step, page: 0 }))
            }
            PromptKind::Edit { .. } | PromptKind::Comment { .. } => click,
        })
    };
    let result = tg.engine.click(&id, actor_of(user), attempt, plan).await;
    let problem = match result {
        Ok(_) => return,
        Err(ActError::Refused(refusal)) => refusal,
        Err(ActError::UnknownInteraction) => {
            log_failure(send::html(&tg.bot, chat, &escape(tg_text(locale, Tg::InvalidPrompt)), None).await.map(|_| ()));
            return;
        }
        Err(ActError::StoreFailing(e)) => {
            tracing::error!(error = %e, "a typed answer was not saved: the store is failing");
            log_failure(send::html(&tg.bot, chat, &format!("⚠️ {}", escape(text(locale, Msg::StoreFailing))), None).await.map(|_| ()));
            return;
        }
        Err(ActError::Internal(e)) => {
            tracing::error!(error = %e, "a typed answer failed inside the bridge");
            log_failure(send::html(&tg.bot, chat, &escape(tg_text(locale, Tg::CommandFailed)), None).await.map(|_| ()));
            return;
        }
    };
    log_failure(send::html(&tg.bot, chat, &format!("⚠️ {}", escape(&locale::refusal(locale, &problem))), None).await.map(|_| ()));
    // Ask again when trying again can help: bad JSON, empty or too long text.
    if matches!(problem, Refusal::InvalidEdit(_) | Refusal::EmptyText | Refusal::TextTooLong) {
        match tg.engine.interaction(&id).await {
            Ok(Some(interaction)) if interaction.status.is_pending() => {
                log_failure(ask_for_text(tg, chat, user, &interaction, prompt.kind, locale).await);
            }
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "cannot reload an interaction to prompt again"),
        }
    }
}

/// Sends a ForceReply prompt asking `user` for text, and remembers it.
pub async fn ask_for_text(
    tg: &Telegram,
    chat: &ChatKey,
    user: &User,
    interaction: &Interaction,
    kind: PromptKind,
    locale: Locale,
) -> Result<(), PlatformError> {
    let (label, body) = match (kind, &interaction.request.kind) {
        (PromptKind::Text { question }, RequestKind::Questions { questions, .. }) => {
            let q = questions.get(question);
            let label = q.and_then(|q| q.free_text_label()).unwrap_or(text(locale, Msg::Other)).to_owned();
            let body = format!("<b>{}</b>\n{}", escape_cut(q.map_or("", |q| q.text.as_str()), 1000), escape(text(locale, Msg::TextPrompt)));
            (label, body)
        }
        (PromptKind::Edit { action }, _) => {
            let a = interaction.request.actions().get(action);
            let name = a.map_or("", |a| a.name.as_str());
            // The current args, ready to copy and change.
            let args = a.map(|a| serde_json::to_string_pretty(&a.args).unwrap_or_default()).unwrap_or_default();
            let body = format!("<b>{}</b>\n{}\n<pre>{}</pre>", escape_cut(name, 200), escape(text(locale, Msg::EditPrompt)), escape_cut(&args, 3000));
            (text(locale, Msg::Edit).to_owned(), body)
        }
        (PromptKind::Comment { action }, _) => {
            let name = interaction.request.actions().get(action).map_or("", |a| a.name.as_str());
            let body = format!("<b>{}</b>\n{}", escape_cut(name, 200), escape(text(locale, Msg::RespondPrompt)));
            (text(locale, Msg::Respond).to_owned(), body)
        }
        (PromptKind::Text { .. }, RequestKind::Approval { .. }) => return Ok(()),
    };
    // In a group, name the person: with `selective`, ForceReply then opens the reply
    // box for them only.
    let private = chat.chat_id.parse::<i64>().is_ok_and(|id| id > 0);
    let mention = if private { String::new() } else { format!("<a href=\"tg://user?id={}\">{}</a> ", user.id.0, escape(&user.full_name())) };
    let markup = ReplyMarkup::ForceReply(ForceReply::new().selective().input_field_placeholder(cut(&label, MAX_PLACEHOLDER_CHARS)));
    let message_id = send::html(&tg.bot, chat, &format!("{mention}{body}"), Some(markup)).await?;
    let chat_id = chat.chat_id.parse::<i64>().map_err(send::fail)?;
    let prompt = Prompt { chat_id, message_id: message_id.0, user_id: user.id.0, interaction_id: interaction.id.clone(), kind };
    tg.wizard.add_prompt(&prompt, interaction).await.map_err(send::fail)
}

fn log_failure(result: Result<(), PlatformError>) {
    if let Err(e) = result {
        tracing::warn!(error = %e, "cannot send a chat reply");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mention_is_removed_in_any_case() {
        assert_eq!(strip_mention("@HitlBot trade  now", "@hitlbot"), "trade now");
        assert_eq!(strip_mention("hỏi 2 lần @hitlbot", "@hitlbot"), "hỏi 2 lần");
        assert_eq!(strip_mention("ẞ İ @hitlbot x", "@hitlbot"), "ẞ İ x");
    }

    #[test]
    fn a_longer_name_is_not_a_mention() {
        assert_eq!(find_mention("@hitlbot_two hi", "@hitlbot"), None);
        assert_eq!(find_mention("hi @hitlbot", "@hitlbot"), Some(3));
        assert_eq!(find_mention("@hit", "@hitlbot"), None);
    }
}
