//! Pure rendering: an [`Interaction`] and a locale become the embed, components and
//! optional attachment of its Discord message (DESIGN.md "Rendering rules").
//!
//! Nothing here does IO. Every string is cut to Discord's limits by characters, every
//! `custom_id` is a signed token naming an index (never a label), and the row and
//! option counts stay within what Discord accepts, paginating where they would not.
//! When the interaction has ended, the outcome is shown and the components removed.
//! With the web inbox on, a pending card links to its request's page ([`card`]): a
//! link button where the five rows leave room, else a field of the embed.
//! Escalation reminders are rendered here too ([`reminder`]), with their mentions.

use serde_json::Value;
use serenity::all::{
    ButtonStyle, Colour, CreateActionRow, CreateAllowedMentions, CreateButton, CreateEmbed, CreateEmbedFooter, CreateMessage, CreateSelectMenu,
    CreateSelectMenuKind, CreateSelectMenuOption, RoleId, UserId,
};

use super::codes::{Code, GRAMMAR};
use super::limits;
use super::text::{DMsg, dtext, truncate};
use crate::interaction::policy::{FallbackDecision, PolicySettlement};
use crate::interaction::{Action, Draft, FreeText, Interaction, Question, RememberScope, RequestKind, Status, answers, readable};
use crate::platform::descriptor::BrowserLink;
use crate::platform::kit::codes::Decide;
use crate::platform::kit::reminder::Recipients;
use crate::platform::kit::token::TokenSigner;
use crate::platform::locale::policy::Addressed;
use crate::platform::locale::web::{WebMsg, web_text};
use crate::platform::locale::{self, Locale, Msg};
use crate::protocol::{Decision, DecisionType};

/// Actions or questions shown per page: the fifth row holds the shared buttons.
pub const PER_PAGE: usize = 4;
/// Name of the attachment holding the full args when the embed had to cut them.
pub const ARGS_FILE: &str = "args.json";
/// Longest answer summary shown per question while pending.
const ANSWER_FIELD: usize = 300;

const BLURPLE: u32 = 0x5865F2;
const GREEN: u32 = 0x57F287;
const RED: u32 = 0xED4245;
const GREY: u32 = 0x95A5A6;

/// A rendered message.
#[derive(Debug, Clone)]
pub struct View {
    pub embed: CreateEmbed,
    pub components: Vec<CreateActionRow>,
    /// `(file name, bytes)`: the full args when the embed shows them cut.
    pub attachment: Option<(String, Vec<u8>)>,
}

/// How many pages the interaction's controls span.
pub fn pages(interaction: &Interaction) -> usize {
    let items = match &interaction.request.kind {
        RequestKind::Approval { actions } if actions.len() == 1 => 1,
        RequestKind::Approval { actions } => actions.len(),
        RequestKind::Questions { questions, .. } => questions.len(),
    };
    items.div_ceil(PER_PAGE).max(1)
}

/// The message for `interaction`, its controls showing page `page` (clamped).
pub fn view(interaction: &Interaction, locale: Locale, signer: &TokenSigner, page: usize) -> View {
    card(interaction, locale, signer, page, None)
}

/// [`view`] with the request's "Open in browser" while it is pending: `link` when the
/// web inbox is on. An ended card shows none (its buttons are gone too).
pub fn card(interaction: &Interaction, locale: Locale, signer: &TokenSigner, page: usize, link: Option<&BrowserLink>) -> View {
    let interaction = &*readable::interaction(interaction);
    let page = page.min(pages(interaction) - 1);
    let ended = !interaction.status.is_pending();
    let mut fields: Vec<(String, String)> = Vec::new();
    if let Some(context) = &interaction.request.context {
        // The pushing agent's context, first, so it reads as the request's headline.
        fields.push(("📝".into(), truncate(context, limits::FIELD_VALUE)));
    }
    if ended {
        fields.push((dtext(locale, DMsg::Decision).into(), locale::outcome(locale, interaction)));
        // What was answered stays readable once the selects are gone.
        if let Some(crate::protocol::Reply::Answers { answers }) = &interaction.reply {
            for (n, (question, answer)) in answers.0.iter().enumerate().take(limits::FIELDS - 1) {
                fields.push((format!("{}. {question}", n + 1), truncate(answer, ANSWER_FIELD)));
            }
        }
    } else {
        fields.push((locale::text(locale, Msg::Deadline).into(), format!("<t:{}:R>", interaction.deadline_ms.div_euclid(1000))));
        if let Some(progress) = interaction.quorum_progress() {
            fields.push((locale::text(locale, Msg::Approvals).into(), locale::policy::quorum_line(locale, &progress)));
        }
    }
    let link = link.filter(|_| !ended);
    let (title, body, attachment, components) = match &interaction.request.kind {
        RequestKind::Approval { actions } => {
            // Several actions: what is decided so far, for the actions on this page.
            if let (Draft::Decisions(draft), true) = (&interaction.draft, actions.len() > 1 && !ended) {
                for (i, (action, decision)) in actions.iter().zip(&draft.decisions).enumerate().skip(page * PER_PAGE).take(PER_PAGE) {
                    let name = format!("{}. {}", i + 1, action.name);
                    let value = decision.as_ref().map_or(locale::text(locale, Msg::NotAnswered).to_owned(), |d| decision_word(locale, d));
                    fields.push((name, value));
                }
            }
            let mut components = if ended { Vec::new() } else { approval_rows(interaction, actions, locale, signer, page) };
            place_link(link, locale, &mut components, &mut fields);
            let (body, cut) = approval_body(actions, budget(&fields));
            let attachment = cut.then(|| full_args(actions));
            (dtext(locale, DMsg::ApprovalTitle), body, attachment, components)
        }
        RequestKind::Questions { questions, .. } => {
            if let (Draft::Answers { answers: drafts }, false) = (&interaction.draft, ended) {
                for (i, (q, d)) in questions.iter().zip(drafts).enumerate().skip(page * PER_PAGE).take(PER_PAGE) {
                    let value = if d.is_answered() { answers::encode(q, d) } else { locale::text(locale, Msg::NotAnswered).into() };
                    fields.push((format!("{}. {}", i + 1, q.header.as_deref().unwrap_or(&q.text)), truncate(&value, ANSWER_FIELD)));
                }
            }
            let mut components = if ended { Vec::new() } else { question_rows(interaction, questions, locale, signer, page) };
            place_link(link, locale, &mut components, &mut fields);
            let body = question_body(questions, budget(&fields));
            (dtext(locale, DMsg::QuestionTitle), body, None, components)
        }
    };
    let mut embed = CreateEmbed::new().title(truncate(title, limits::EMBED_TITLE)).description(body).colour(Colour::new(colour(interaction)));
    for (name, value) in fields {
        embed = embed.field(truncate(&name, limits::FIELD_NAME), truncate(&value, limits::FIELD_VALUE), false);
    }
    if attachment.is_some() {
        embed = embed.footer(CreateEmbedFooter::new(locale::text(locale, Msg::ArgsAttached)));
    }
    View { embed, components, attachment }
}

/// Puts the "Open in browser" link where it fits: a link button (https only) in a row
/// of its own while there are fewer than five rows, else at the end of the last row
/// of buttons when it has room; otherwise, and for a plain-http link, a field of the
/// embed (added before the description's budget is counted).
fn place_link(link: Option<&BrowserLink>, locale: Locale, rows: &mut Vec<CreateActionRow>, fields: &mut Vec<(String, String)>) {
    let label = format!("🌐 {}", web_text(locale, WebMsg::OpenInBrowser));
    let url = match link {
        None => return,
        Some(BrowserLink::Button(url)) if url.chars().count() <= limits::BUTTON_URL => {
            let button = CreateButton::new_link(url).label(truncate(&label, limits::BUTTON_LABEL));
            if rows.len() < limits::ROWS {
                rows.push(CreateActionRow::Buttons(vec![button]));
                return;
            }
            if let Some(CreateActionRow::Buttons(last)) =
                rows.last_mut().filter(|r| matches!(r, CreateActionRow::Buttons(b) if b.len() < limits::BUTTONS_PER_ROW))
            {
                last.push(button);
                return;
            }
            url
        }
        Some(BrowserLink::Button(url) | BrowserLink::InText(url)) => url,
    };
    fields.push((label, url.clone()));
}

/// The description budget left once the fields (as they will be cut), the title and
/// a footer are counted, so the embed stays within its 6000-character total.
fn budget(fields: &[(String, String)]) -> usize {
    let used: usize = fields.iter().map(|(n, v)| n.chars().count().min(limits::FIELD_NAME) + v.chars().count().min(limits::FIELD_VALUE)).sum();
    // Title and footer are at most this long in every locale.
    let reserved = used + 40 + 100;
    limits::EMBED_DESCRIPTION.min(limits::EMBED_TOTAL.saturating_sub(reserved))
}

fn colour(interaction: &Interaction) -> u32 {
    // A fallback that approved or rejected reads like a person's decision would.
    if let Some(PolicySettlement::Fallback { decision, .. }) = &interaction.settled_by_policy {
        return match decision {
            FallbackDecision::Approve => GREEN,
            FallbackDecision::Reject => RED,
            FallbackDecision::Leave => GREY,
        };
    }
    match (&interaction.status, &interaction.reply) {
        (Status::Pending, _) => BLURPLE,
        (Status::Resolved { .. }, Some(crate::protocol::Reply::Decisions { decisions, .. }))
            if decisions.iter().all(|d| matches!(d, Decision::Reject { .. })) =>
        {
            RED
        }
        (Status::Resolved { .. }, _) => GREEN,
        _ => GREY,
    }
}

fn decision_word(locale: Locale, d: &Decision) -> String {
    match d {
        Decision::Approve => format!("✅ {}", locale::text(locale, Msg::Approve)),
        Decision::ApproveForSession => format!("🔓 {}", locale::text(locale, Msg::ApproveForSession)),
        Decision::Reject { .. } => format!("❌ {}", locale::text(locale, Msg::Reject)),
        Decision::Edit { .. } => format!("✏️ {}", locale::text(locale, Msg::Edit)),
        Decision::Respond { .. } => format!("💬 {}", locale::text(locale, Msg::Respond)),
    }
}

/// The allowed decisions of `action` in a fixed order, so buttons never move about.
fn ordered(action: &Action) -> impl Iterator<Item = DecisionType> + '_ {
    [DecisionType::Approve, DecisionType::ApproveForSession, DecisionType::Reject, DecisionType::Edit, DecisionType::Respond]
        .into_iter()
        .filter(|d| action.allowed.contains(d))
}

/// Tool, description and args as a JSON code block per action, within `budget`
/// characters; true when some args had to be cut.
fn approval_body(actions: &[Action], budget: usize) -> (String, bool) {
    // Each action gets an equal share; the fence and heading overhead is counted.
    let share = budget / actions.len().max(1);
    let mut out = String::new();
    let mut cut = false;
    for (i, action) in actions.iter().enumerate() {
        let mut head = if actions.len() > 1 { format!("**{}. {}**", i + 1, action.name) } else { format!("**{}**", action.name) };
        if let Some(d) = &action.description {
            head += "\n";
            head.push_str(d);
        }
        let head = truncate(&head, share / 3);
        let args = serde_json::to_string_pretty(&action.args).unwrap_or_else(|_| action.args.to_string());
        let room = share.saturating_sub(head.chars().count() + "\n```json\n\n```\n".len());
        if args.chars().count() > room {
            cut = true;
        }
        out.push_str(&format!("{head}\n```json\n{}\n```\n", truncate(&args, room)));
    }
    (truncate(out.trim_end(), budget), cut)
}

/// Every action's full args, pretty JSON: one object, or an array for several.
fn full_args(actions: &[Action]) -> (String, Vec<u8>) {
    let value = match actions {
        [one] => one.args.clone(),
        many => Value::Array(many.iter().map(|a| a.args.clone()).collect()),
    };
    let bytes = serde_json::to_vec_pretty(&value).unwrap_or_default();
    (ARGS_FILE.to_owned(), bytes)
}

/// Each question with its header and options (descriptions included: a select menu
/// shows them only when opened).
fn question_body(questions: &[Question], budget: usize) -> String {
    let share = budget / questions.len().max(1);
    let mut out = String::new();
    for (i, q) in questions.iter().enumerate() {
        let mut part = match &q.header {
            Some(h) => format!("**{}. {h}** · {}\n", i + 1, q.text),
            None => format!("**{}.** {}\n", i + 1, q.text),
        };
        for (n, option) in q.options.iter().enumerate() {
            part.push_str(&format!("{}. {}", n + 1, option.label));
            if let Some(d) = &option.description {
                part.push_str(&format!(" — {d}"));
            }
            part += "\n";
        }
        out.push_str(&truncate(&part, share));
        out += "\n";
    }
    truncate(out.trim_end(), budget)
}

fn sign(signer: &TokenSigner, interaction: &Interaction, code: Code) -> Option<String> {
    match signer.sign(&interaction.id, &code.encode()) {
        Ok(token) if GRAMMAR.limit.fits(&token) => Some(token),
        Ok(_) | Err(_) => {
            // Only an interaction id far longer than the engine's makes this happen.
            tracing::error!(interaction = %interaction.id, ?code, "cannot make a custom_id; control left out");
            None
        }
    }
}

fn button(signer: &TokenSigner, interaction: &Interaction, code: Code, label: &str, style: ButtonStyle) -> Option<CreateButton> {
    Some(CreateButton::new(sign(signer, interaction, code)?).label(truncate(label, limits::BUTTON_LABEL)).style(style))
}

/// Previous/next buttons when there is more than one page.
fn page_buttons(interaction: &Interaction, locale: Locale, signer: &TokenSigner, page: usize) -> Vec<CreateButton> {
    let total = pages(interaction);
    let mut out = Vec::new();
    if page > 0 {
        out.extend(button(signer, interaction, Code::Page(page - 1), dtext(locale, DMsg::Previous), ButtonStyle::Secondary));
    }
    if page + 1 < total {
        out.extend(button(signer, interaction, Code::Page(page + 1), dtext(locale, DMsg::Next), ButtonStyle::Secondary));
    }
    out
}

fn decision_button(
    signer: &TokenSigner,
    interaction: &Interaction,
    locale: Locale,
    i: usize,
    d: DecisionType,
    prefix: &str,
    chosen: Option<&Decision>,
) -> Option<CreateButton> {
    let (code, msg, style) = match d {
        // Beside the remembered choices, the plain approve says it is for this call only.
        DecisionType::Approve if !interaction.remember_offered().is_empty() => (Code::Decide(Decide::Approve(i)), Msg::ApproveOnce, ButtonStyle::Success),
        DecisionType::Approve => (Code::Decide(Decide::Approve(i)), Msg::Approve, ButtonStyle::Success),
        DecisionType::ApproveForSession => (Code::Decide(Decide::ApproveForSession(i)), Msg::ApproveForSession, ButtonStyle::Success),
        DecisionType::Reject => (Code::Decide(Decide::Reject(i)), Msg::Reject, ButtonStyle::Danger),
        DecisionType::Edit => (Code::Edit(i), Msg::Edit, ButtonStyle::Primary),
        DecisionType::Respond => (Code::Respond(i), Msg::Respond, ButtonStyle::Secondary),
    };
    let mark = if chosen.is_some_and(|c| c.decision_type() == d) { "✓ " } else { "" };
    let ours = locale::text(locale, msg);
    let label = interaction.request.actions().get(i).map_or(ours, |action| action.label_or(d, ours));
    button(signer, interaction, code, &format!("{mark}{prefix}{label}"), style)
}

fn approval_rows(interaction: &Interaction, actions: &[Action], locale: Locale, signer: &TokenSigner, page: usize) -> Vec<CreateActionRow> {
    let chosen = |i: usize| match &interaction.draft {
        Draft::Decisions(d) => d.decisions.get(i).and_then(Option::as_ref),
        Draft::Answers { .. } => None,
    };
    if let [action] = actions {
        let offered = interaction.remember_offered();
        // The policy's own "for this session" replaces Kimi's: the core sends Kimi's
        // native decision itself when the two mean the same.
        let buttons: Vec<CreateButton> = ordered(action)
            .filter(|&d| !(d == DecisionType::ApproveForSession && offered.contains(&RememberScope::Session)))
            .filter_map(|d| decision_button(signer, interaction, locale, 0, d, "", None))
            .collect();
        let remember: Vec<CreateButton> = offered
            .iter()
            .filter_map(|&scope| {
                button(signer, interaction, Code::Decide(Decide::Remember(scope)), locale::policy::remember_button(locale, scope), ButtonStyle::Success)
            })
            .collect();
        return [buttons, remember].into_iter().filter(|b| !b.is_empty()).map(CreateActionRow::Buttons).collect();
    }
    let mut rows = Vec::new();
    for (i, action) in actions.iter().enumerate().skip(page * PER_PAGE).take(PER_PAGE) {
        let prefix = format!("{}. ", i + 1);
        let buttons: Vec<CreateButton> = ordered(action).filter_map(|d| decision_button(signer, interaction, locale, i, d, &prefix, chosen(i))).collect();
        if !buttons.is_empty() {
            rows.push(CreateActionRow::Buttons(buttons));
        }
    }
    let mut last = Vec::new();
    if actions.iter().all(|a| a.allowed.contains(&DecisionType::Approve)) {
        last.extend(button(signer, interaction, Code::Decide(Decide::ApproveAll), locale::text(locale, Msg::ApproveAll), ButtonStyle::Success));
    }
    if actions.iter().all(|a| a.allowed.contains(&DecisionType::Reject)) {
        last.extend(button(signer, interaction, Code::Decide(Decide::RejectAll), locale::text(locale, Msg::RejectAll), ButtonStyle::Danger));
    }
    last.extend(button(signer, interaction, Code::Decide(Decide::Submit), locale::text(locale, Msg::Submit), ButtonStyle::Primary));
    last.extend(page_buttons(interaction, locale, signer, page));
    rows.push(CreateActionRow::Buttons(last));
    rows
}

fn question_rows(interaction: &Interaction, questions: &[Question], locale: Locale, signer: &TokenSigner, page: usize) -> Vec<CreateActionRow> {
    let selected = |i: usize| match &interaction.draft {
        Draft::Answers { answers } => answers.get(i).map(|a| a.selected.clone()).unwrap_or_default(),
        Draft::Decisions(_) => Vec::new(),
    };
    let mut rows = Vec::new();
    let mut any_free_text = false;
    for (i, q) in questions.iter().enumerate().skip(page * PER_PAGE).take(PER_PAGE) {
        any_free_text |= q.allows_free_text();
        let chosen = selected(i);
        // Discord takes at most 25 options; the rest stay readable in the embed.
        let options: Vec<CreateSelectMenuOption> = q
            .options
            .iter()
            .enumerate()
            .take(limits::SELECT_OPTIONS)
            .map(|(n, o)| {
                let mut option = CreateSelectMenuOption::new(truncate(&o.label, limits::OPTION_TEXT), n.to_string()).default_selection(chosen.contains(&n));
                if let Some(d) = o.description.as_deref().filter(|d| !d.is_empty()) {
                    option = option.description(truncate(d, limits::OPTION_TEXT));
                }
                option
            })
            .collect();
        let Some(custom_id) = sign(signer, interaction, Code::Select(i)) else { continue };
        if options.is_empty() {
            continue; // A select needs at least one option; free text still works via Other….
        }
        let count = options.len() as u8;
        let placeholder = format!("{}. {}", i + 1, q.header.as_deref().unwrap_or(&q.text));
        let mut select = CreateSelectMenu::new(custom_id, CreateSelectMenuKind::String { options }).placeholder(truncate(&placeholder, limits::PLACEHOLDER));
        if q.multi_select {
            select = select.min_values(1).max_values(count);
        }
        rows.push(CreateActionRow::SelectMenu(select));
    }
    let mut last = Vec::new();
    last.extend(button(signer, interaction, Code::Decide(Decide::Submit), locale::text(locale, Msg::Submit), ButtonStyle::Success));
    if any_free_text {
        last.extend(button(signer, interaction, Code::Other(page), dtext(locale, DMsg::OtherEllipsis), ButtonStyle::Primary));
    }
    last.extend(button(signer, interaction, Code::Skip, locale::text(locale, Msg::Skip), ButtonStyle::Secondary));
    last.extend(page_buttons(interaction, locale, signer, page));
    rows.push(CreateActionRow::Buttons(last));
    rows
}

/// People one reminder mentions at most: Discord takes 100 ids per kind in
/// `allowed_mentions`, and a long list would push the text itself out of the message.
const MAX_MENTIONS: usize = 50;

/// An escalation reminder: `<@user>` and `<@&role>` mentions, with `allowed_mentions`
/// naming exactly those, so they are notified and nothing else is (no @everyone, no
/// role or user someone typed into a tool name). A person on another platform is
/// named as text. The deadline is a Discord timestamp, shown in each reader's time.
pub fn reminder(interaction: &Interaction, people: &Recipients, locale: Locale) -> CreateMessage {
    let interaction = &*readable::interaction(interaction);
    let id = |s: &String| s.parse::<u64>().ok().filter(|&n| n != 0);
    let users: Vec<u64> = people.users.iter().filter_map(id).take(MAX_MENTIONS).collect();
    let roles: Vec<u64> = people.roles.iter().filter_map(id).take(MAX_MENTIONS).collect();
    let mut named: Vec<String> = users.iter().map(|u| format!("<@{u}>")).collect();
    named.extend(roles.iter().map(|r| format!("<@&{r}>")));
    // Ids that are not snowflakes cannot be mentioned; say them rather than drop them.
    named.extend(people.users.iter().chain(&people.roles).filter(|s| id(s).is_none()).map(|s| truncate(s, 40)));
    named.extend(people.others.iter().take(MAX_MENTIONS).map(|o| truncate(o, 60)));
    let named = named.join(" ");
    let to = if named.is_empty() { Addressed::Nobody } else { Addressed::To(&named) };
    let progress = crate::platform::kit::reminder::progress(locale, interaction);
    let subject = truncate(&locale::policy::subject(interaction), 300);
    let deadline = format!("<t:{}:R>", interaction.deadline_ms.div_euclid(1000));
    let content = locale::policy::reminder(locale, to, &subject, progress.as_deref(), &deadline);
    let allowed = CreateAllowedMentions::new().users(users.into_iter().map(UserId::new)).roles(roles.into_iter().map(RoleId::new));
    CreateMessage::new().content(truncate(&content, limits::CONTENT)).allowed_mentions(allowed)
}

/// The label of question `q`'s free-text input in the Other… modal: the input
/// option's own label when the backend named one, else the localized "Other".
pub fn free_text_label(q: &Question, index: usize, locale: Locale) -> String {
    let slot = match q.free_text {
        FreeText::InputOption(_) => q.free_text_label().unwrap_or(locale::text(locale, Msg::Other)).to_owned(),
        _ => locale::text(locale, Msg::Other).to_owned(),
    };
    // The slot's own name first, so a long question cannot push it out of the label.
    let about = q.header.as_deref().unwrap_or(&q.text);
    truncate(&format!("{slot} · {}. {about}", index + 1), limits::INPUT_LABEL)
}

#[cfg(test)]
mod tests;
