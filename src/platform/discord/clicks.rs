//! One handler for every incoming interaction, whether it came over the gateway or
//! the HTTP endpoint: it decides the immediate response (what Discord must get
//! within 3 s) and the work that follows it.
//!
//! Clicks and modal submits are acknowledged with a deferred update first and acted
//! on after, so a slow database never makes Discord show "interaction failed". Edit,
//! Comment and Other… answer with their modal directly, because a modal can only be
//! the first response. Refusals (not allowed, already decided, expired, bad JSON)
//! come back as ephemeral follow-ups that only the clicker sees; nothing changes.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serenity::all::{
    ChannelType, CommandInteraction, ComponentInteraction, ComponentInteractionDataKind, CreateInteractionResponse, CreateInteractionResponseFollowup,
    CreateInteractionResponseMessage, EditInteractionResponse, GuildId, InteractionContext, MessageFlags, ModalInteraction,
};
use serenity::builder::Builder as _;

use super::codes::Code;
use super::limits;
use super::text::{DMsg, dtext, truncate};
use super::{PLATFORM, Shared, api, groups, modal, render};
use crate::engine::{ActError, Click, Clicked, CommandOutcome, EngineError};
use crate::interaction::command::ChatCommand;
use crate::interaction::{Actor, Attempt, Interaction, Opening, Refusal, RequestKind, UserAction};
use crate::platform::kit::commands;
use crate::platform::kit::refusals::{Refused, engine_failure, paired_notice, stranger_notice};
use crate::platform::locale::{self, Locale, Msg};
use crate::store::ChatKey;

/// What to answer at once, and what to do after the answer is out.
pub struct Handled {
    pub response: CreateInteractionResponse,
    pub work: Option<BoxFuture<'static, ()>>,
}

impl Handled {
    fn now(response: CreateInteractionResponse) -> Self {
        Self { response, work: None }
    }

    fn then(response: CreateInteractionResponse, work: impl std::future::Future<Output = ()> + Send + 'static) -> Self {
        Self { response, work: Some(Box::pin(work)) }
    }
}

/// An ephemeral message as the first response.
fn ephemeral(text: &str) -> CreateInteractionResponse {
    CreateInteractionResponse::Message(CreateInteractionResponseMessage::new().content(truncate(text, limits::CONTENT)).ephemeral(true))
}

/// Decides the response to `interaction`. Also records its application id on the
/// REST client: follow-ups are addressed by it, and a replica that only serves the
/// HTTP endpoint never hears READY, where the gateway would set it.
pub async fn handle(shared: Arc<Shared>, interaction: serenity::all::Interaction) -> Handled {
    use serenity::all::Interaction as I;
    let app = match &interaction {
        I::Component(c) => Some(c.application_id),
        I::Modal(m) => Some(m.application_id),
        I::Command(c) => Some(c.application_id),
        _ => None,
    };
    if let Some(app) = app.filter(|a| shared.http.application_id() != Some(*a)) {
        shared.http.set_application_id(app);
    }
    match interaction {
        I::Ping(_) => Handled::now(CreateInteractionResponse::Pong),
        I::Component(c) => component(shared, c).await,
        I::Modal(m) => modal_submit(shared, m).await,
        I::Command(c) => command(shared, c).await,
        other => {
            tracing::debug!(kind = ?other.kind(), "ignoring an interaction type the bridge does not use");
            Handled::now(ephemeral(locale::text(shared.locale(None), Msg::UnknownButton)))
        }
    }
}

/// The interaction id and code a custom_id names, if its signature verifies.
fn verify(shared: &Shared, custom_id: &str) -> Option<(String, Code)> {
    let verified = shared.signer.verify(custom_id).map_err(|e| tracing::info!(error = %e, "refusing a component whose custom_id does not verify")).ok()?;
    let code = Code::parse(&verified.code)?;
    Some((verified.interaction_id, code))
}

fn act_error(locale: Locale, e: &ActError) -> String {
    match e {
        ActError::Refused(refusal) => locale::refusal(locale, refusal),
        ActError::UnknownInteraction => locale::text(locale, Msg::UnknownButton).into(),
        ActError::StoreFailing(why) => {
            tracing::error!(error = %why, "a Discord click was not saved: the store is failing");
            locale::text(locale, Msg::StoreFailing).into()
        }
        ActError::Internal(why) => {
            tracing::error!(error = %why, "acting on a Discord click failed");
            dtext(locale, DMsg::Internal).into()
        }
    }
}

/// The stored interaction if `actor` may still act on it, for a click that would
/// open something (`attempt`); else the notice to show. One call: the engine checks
/// access, and counts and audits a refusal.
async fn open_interaction(shared: &Shared, id: &str, actor: &Actor, attempt: Attempt, locale: Locale) -> Result<Interaction, String> {
    shared.engine.open(id, actor.clone(), attempt, Box::new(|_| Ok(()))).await.map_err(|e| act_error(locale, &e))
}

/// What a click asks the engine to do.
enum Plan {
    Actions(UserAction, Vec<UserAction>),
    /// Skip every question, then submit: the count is only known once loaded.
    SkipAll,
}

async fn component(shared: Arc<Shared>, c: ComponentInteraction) -> Handled {
    let locale = shared.locale(Some(&c.locale));
    let Some((id, code)) = verify(&shared, &c.data.custom_id) else {
        return Handled::now(ephemeral(locale::text(locale, Msg::UnknownButton)));
    };
    let plan = match code {
        Code::Edit(_) | Code::Respond(_) | Code::Other(_) => {
            // A modal must be the first response, so the interaction is loaded now; a
            // closed one gets its notice instead of a form nobody can submit.
            let clicker = groups::person(&shared, &c.user, c.member.as_ref(), c.guild_id).await;
            let attempt = match code {
                Code::Edit(i) => Attempt::Open { open: Opening::Edit, index: i },
                Code::Respond(i) => Attempt::Open { open: Opening::Comment, index: i },
                // Other… covers a page of questions: the first one names it.
                Code::Other(page) => Attempt::Open { open: Opening::Text, index: page * render::PER_PAGE },
                _ => return Handled::now(ephemeral(locale::text(locale, Msg::UnknownButton))),
            };
            let interaction = match open_interaction(&shared, &id, &clicker, attempt, locale).await {
                Ok(i) => i,
                Err(notice) => return Handled::now(ephemeral(&notice)),
            };
            let form = match code {
                Code::Edit(i) => modal::edit(&interaction, i, locale, &shared.signer),
                Code::Respond(i) => modal::respond(&interaction, i, locale, &shared.signer),
                Code::Other(page) => modal::other(&interaction, page, locale, &shared.signer),
                _ => None,
            };
            return match form {
                Some(form) => Handled::now(CreateInteractionResponse::Modal(form)),
                None => Handled::now(ephemeral(locale::text(locale, Msg::UnknownButton))),
            };
        }
        Code::Page(page) => {
            let clicker = groups::person(&shared, &c.user, c.member.as_ref(), c.guild_id).await;
            let attempt = Attempt::Open { open: Opening::Page, index: page };
            let message = c.message.id.get();
            // One call: the engine checks access and stores the page with the click.
            let turned =
                shared.engine.click(&id, clicker, attempt, move |i: &Interaction| Ok(Click::open(()).keeping(Shared::page_state(i, message, page)))).await;
            let interaction = match turned {
                Ok(Clicked::Opened { interaction, .. }) => interaction,
                // The plan above only opens.
                Ok(Clicked::Acted(_)) => return Handled::now(ephemeral(locale::text(locale, Msg::UnknownButton))),
                Err(e) => return Handled::now(ephemeral(&act_error(locale, &e))),
            };
            let view = shared.view(&interaction, locale, page);
            let update = CreateInteractionResponseMessage::new().embed(view.embed).components(view.components);
            return Handled::now(CreateInteractionResponse::UpdateMessage(update));
        }
        Code::Decide(decide) => Plan::Actions(decide.action(), Vec::new()),
        Code::Skip => Plan::SkipAll,
        Code::Select(question) => {
            let ComponentInteractionDataKind::StringSelect { values } = &c.data.kind else {
                return Handled::now(ephemeral(locale::text(locale, Msg::UnknownButton)));
            };
            let Ok(options) = values.iter().map(|v| v.parse::<usize>()).collect::<Result<Vec<_>, _>>() else {
                tracing::info!(?values, "refusing select values that are not option indexes");
                return Handled::now(ephemeral(locale::text(locale, Msg::UnknownButton)));
            };
            Plan::Actions(UserAction::Select { question, options }, Vec::new())
        }
        Code::EditModal(_) | Code::RespondModal(_) | Code::OtherModal(_) => {
            return Handled::now(ephemeral(locale::text(locale, Msg::UnknownButton)));
        }
    };
    let token = c.token.clone();
    Handled::then(CreateInteractionResponse::Acknowledge, async move {
        // After the acknowledgement: a DM's role lookup may take a moment.
        let actor = groups::person(&shared, &c.user, c.member.as_ref(), c.guild_id).await;
        match plan {
            Plan::Actions(first, then) => run(&shared, &id, actor, first, then, &token, locale).await,
            Plan::SkipAll => {
                // One call: the engine loads the request, and the skips are counted
                // on it as loaded.
                let skip_all = |interaction: &Interaction| {
                    Ok(match &interaction.request.kind {
                        RequestKind::Questions { questions, .. } => Click::<()>::act_in_turn(
                            UserAction::Skip { question: 0 },
                            (1..questions.len()).map(|question| UserAction::Skip { question }).chain([UserAction::Submit]).collect(),
                        ),
                        // Let the core say that approvals are not skipped.
                        RequestKind::Approval { .. } => Click::<()>::act(UserAction::Skip { question: 0 }),
                    })
                };
                let skipped = shared.engine.click(&id, actor, Attempt::Act(UserAction::Skip { question: 0 }), skip_all).await;
                if let Err(e) = skipped {
                    followup(&shared, &token, &act_error(locale, &e)).await;
                }
            }
        }
    })
}

/// Sends `first`, then each of `then`, to the engine in one call; the first refusal
/// stops the rest and is shown to the clicker alone.
async fn run(shared: &Shared, id: &str, actor: Actor, first: UserAction, then: Vec<UserAction>, token: &str, locale: Locale) {
    let attempt = Attempt::Act(first.clone());
    let acted = shared.engine.click(id, actor, attempt, move |_: &Interaction| Ok(Click::<()>::act_in_turn(first, then))).await;
    if let Err(e) = acted {
        followup(shared, token, &act_error(locale, &e)).await;
    }
}

/// An ephemeral follow-up to an acknowledged interaction.
async fn followup(shared: &Shared, token: &str, text: &str) {
    let message = CreateInteractionResponseFollowup::new().content(truncate(text, limits::CONTENT)).ephemeral(true);
    let http = shared.http.clone();
    if let Err(e) = api::retrying(&shared.metrics, "follow-up", || message.clone().execute(&*http, (None, token))).await {
        tracing::error!(error = %e, "cannot send an ephemeral notice");
    }
}

async fn modal_submit(shared: Arc<Shared>, m: ModalInteraction) -> Handled {
    let locale = shared.locale(Some(&m.locale));
    let Some((id, code)) = verify(&shared, &m.data.custom_id) else {
        return Handled::now(ephemeral(locale::text(locale, Msg::UnknownButton)));
    };
    let mut actions = modal::actions(code, &m.data).into_iter();
    let Some(first) = actions.next() else {
        let notice = ephemeral(&locale::refusal(locale, &Refusal::EmptyText));
        // Counted and audited by the engine, as every refusal (after its own check of
        // who may act); the clicker is looked up after the answer is out (a DM's roles
        // may take a moment).
        return Handled::then(notice, async move {
            let actor = groups::person(&shared, &m.user, m.member.as_ref(), m.guild_id).await;
            let attempt = Attempt::Act(UserAction::Submit);
            let _ = shared.engine.open(&id, actor, attempt, Box::new(|_| Err(Refusal::EmptyText))).await;
        });
    };
    let rest = actions.collect();
    let token = m.token.clone();
    Handled::then(CreateInteractionResponse::Acknowledge, async move {
        let actor = groups::person(&shared, &m.user, m.member.as_ref(), m.guild_id).await;
        run(&shared, &id, actor, first, rest, &token, locale).await;
    })
}

/// The chat a slash command was used in: a thread counts as its own chat under its
/// parent channel.
fn command_chat(shared: &Shared, c: &CommandInteraction) -> ChatKey {
    let channel = c.channel_id.get();
    let parent = c
        .channel
        .as_ref()
        .filter(|ch| matches!(ch.kind, ChannelType::PublicThread | ChannelType::PrivateThread | ChannelType::NewsThread))
        .and_then(|ch| ch.parent_id)
        .map(|p| p.get())
        .or_else(|| shared.thread_parent(channel));
    match parent {
        Some(parent) => ChatKey { platform: PLATFORM.into(), chat_id: parent.to_string(), thread_id: Some(channel.to_string()) },
        None => ChatKey { platform: PLATFORM.into(), chat_id: channel.to_string(), thread_id: None },
    }
}

async fn command(shared: Arc<Shared>, c: CommandInteraction) -> Handled {
    let locale = shared.locale(Some(&c.locale));
    let chat = command_chat(&shared, &c);
    let name = c.data.name.clone();
    let token = c.token.clone();
    let guild = c.guild_id;
    let defer = CreateInteractionResponse::Defer(CreateInteractionResponseMessage::new().ephemeral(true));
    Handled::then(defer, async move {
        let actor = groups::person(&shared, &c.user, c.member.as_deref(), guild).await;
        let reply = command_reply(&shared, &c, &name, chat, actor, guild, locale).await;
        let mut edit = EditInteractionResponse::new().content(truncate(&reply, limits::CONTENT));
        if name == "web" {
            // A preview would fetch the sign-in link's page (it does not spend it).
            edit = edit.flags(MessageFlags::SUPPRESS_EMBEDS);
        }
        let http = shared.http.clone();
        if let Err(e) = api::retrying(&shared.metrics, "command reply", || edit.clone().execute(&*http, &token)).await {
            tracing::error!(error = %e, command = %name, "cannot answer a slash command");
        }
    })
}

/// What a slash command answers. `/pair` is for admins (`access.admins`), whoever may
/// talk; `/id` for anyone (a newcomer needs their id to be admitted), `/web` too (it
/// answers in a DM with the bot only); the others steer
/// a session and need admission (a stranger gets the refusal or code). A slash command is always answered, to its user alone, even within a
/// refusal window: Discord shows an error otherwise, and the answer is no channel
/// message.
async fn command_reply(shared: &Shared, c: &CommandInteraction, name: &str, chat: ChatKey, actor: Actor, guild: Option<GuildId>, locale: Locale) -> String {
    if name == "pair" {
        let code = c.data.options.iter().find(|o| o.name == "code").and_then(|o| o.value.as_str()).unwrap_or_default();
        // A DM with the bot has no guild.
        return match shared.engine.pair(chat, actor, code, guild.is_none()).await {
            Ok(paired) => paired_notice(locale, &paired),
            Err(refusal) => refusal.notice(locale).unwrap_or_else(|| dtext(locale, DMsg::Internal).to_owned()),
        };
    }
    if name == "id" {
        return locale::ids(locale, &format!("discord:{}", c.user.id), &format!("discord:{}", chat.chat_id), None);
    }
    if name == "web" {
        // A DM with the bot has no guild; a group DM has none either, but is no
        // place for a personal link.
        let direct = guild.is_none() && c.context != Some(InteractionContext::PrivateChannel);
        return commands::web_reply(&*shared.web, &actor, direct, locale).await.unwrap_or_else(|| dtext(locale, DMsg::Internal).to_owned());
    }
    match shared.engine.admit(chat.clone(), actor.clone(), "command", &format!("/{name}"), locale.code()).await {
        Ok(()) => {}
        Err(EngineError::NotAdmitted(stranger)) => return stranger_notice(&stranger, locale),
        Err(e) => return engine_error(locale, &e),
    }
    // The revoke option is the `/rules revoke ID` of other platforms.
    let args = match c.data.options.iter().find(|o| o.name == "revoke").and_then(|o| o.value.as_str()) {
        Some(id) => format!("revoke {id}"),
        None => String::new(),
    };
    let Some(command) = ChatCommand::parse(name, &args) else { return dtext(locale, DMsg::NotHere).to_owned() };
    let failed = dtext(locale, DMsg::Internal);
    match shared.engine.run_command(chat.clone(), actor, &command).await {
        CommandOutcome::SessionStarted { .. } => {
            // A new session starts its tool lines afresh.
            if let Ok(channel) = super::target(&chat) {
                shared.forget_statuses(channel.get());
            }
            locale::text(locale, Msg::NewSession).to_owned()
        }
        CommandOutcome::Pending(pending) => pending_list(locale, guild, &pending),
        outcome => commands::reply(locale, &outcome, failed).unwrap_or_else(|| failed.to_owned()),
    }
}

fn engine_error(locale: Locale, e: &EngineError) -> String {
    engine_failure(locale, e, "a slash command failed", dtext(locale, DMsg::Internal))
}

/// `/pending`: one line per waiting request, with its deadline and a link to each
/// message that shows it.
pub fn pending_list(locale: Locale, guild: Option<GuildId>, pending: &[(Interaction, Vec<crate::store::MessageRef>)]) -> String {
    if pending.is_empty() {
        return locale::text(locale, Msg::NoPending).to_owned();
    }
    let guild = guild.map_or("@me".to_owned(), |g| g.get().to_string());
    let mut out = format!("**{}**\n", locale::text(locale, Msg::Pending));
    for (interaction, messages) in pending {
        let what = match &interaction.request.kind {
            RequestKind::Approval { actions } => actions.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join(", "),
            RequestKind::Questions { questions, .. } => questions.first().map(|q| q.text.clone()).unwrap_or_default(),
        };
        let mut line = format!("• {} · <t:{}:R>", truncate(&what, 80), interaction.deadline_ms.div_euclid(1000));
        for m in messages {
            let channel = m.chat.thread_id.as_deref().unwrap_or(&m.chat.chat_id);
            line.push_str(&format!(" · [{}](https://discord.com/channels/{guild}/{channel}/{})", dtext(locale, DMsg::OpenMessage), m.message_id));
        }
        out.push_str(&line);
        out += "\n";
    }
    truncate(out.trim_end(), limits::CONTENT)
}
