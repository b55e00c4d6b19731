//! Pure rendering: an [`Interaction`] and a locale become the events that show it.
//! No IO, no clock.
//!
//! - The card is one `m.room.message` with a plain `body` and an HTML
//!   `formatted_body`: what is asked, by which agent, for whom, until when; each action's
//!   name and its arguments in a code block (cut to fit one event, with a note); and
//!   how to answer (reactions, or a reply with words). Once the interaction has ended
//!   the card is replaced (`m.replace`) by the same text with the outcome line
//!   (`✅ Approved by ana at 14:02 UTC`) in place of the instructions.
//! - Each question is a poll (`org.matrix.msc3381.poll.start`, MSC3381 as Element
//!   sends it), `max_selections` its option count when multi-select, 1 otherwise;
//!   ended with `org.matrix.msc3381.poll.end` once the request has.
//! - What a reaction means is [`reaction_action`]: a pure table of emoji to engine
//!   actions, so a tap is no more than the button it stands for.
//!
//! Every event carries an empty `m.mentions`: the bot mentions nobody.

use serde_json::{Value, json};

use super::text::{XMsg, html, html_cut, plain, xtext};
use crate::interaction::{Action, Draft, Interaction, Origin, RememberScope, RequestKind, UserAction, readable};
use crate::platform::descriptor::BrowserLink;
use crate::platform::locale::web::{WebMsg, web_text};
use crate::protocol::{Decision, DecisionType};
use crate::texts::{self, Locale, Msg, cut, text};

/// The characters of arguments one card shows in all: an event is at most 64 KiB,
/// the card carries them twice (plain and HTML), encryption grows it by a third, and
/// a character may take three bytes.
pub const ARGS_BUDGET: usize = 6_000;
/// Longest context, description or name shown in full.
const FIELD: usize = 1_000;
/// A poll holds 1 to 20 answers (MSC3381).
pub const POLL_ANSWERS: usize = 20;

/// The reactions a card offers.
pub const APPROVE: &str = "✅";
pub const REJECT: &str = "❌";
pub const EDIT: &str = "✏️";
pub const COMMENT: &str = "💬";
pub const FOR_SESSION: &str = "🔓";
pub const REMEMBER_SESSION: &str = "🔁";
pub const REMEMBER_ALWAYS: &str = "♾️";
pub const SUBMIT: &str = "📨";
pub const SKIP: &str = "⏭️";

/// `key` without emoji variation selectors: clients send `✏️` with or without U+FE0F.
pub fn bare(key: &str) -> String {
    key.chars().filter(|c| *c != '\u{FE0F}').collect()
}

/// A poll answer's id: its option's index.
pub fn answer_id(option: usize) -> String {
    format!("o{option}")
}

/// The option index of answer id `id`.
pub fn option_of(id: &str) -> Option<usize> {
    id.strip_prefix('o')?.parse().ok()
}

/// A message's content: plain and HTML, mentioning nobody.
pub fn message(msgtype: &str, body: String, html_body: String) -> Value {
    json!({ "msgtype": msgtype, "body": body, "format": "org.matrix.custom.html", "formatted_body": html_body, "m.mentions": {} })
}

/// Agent or bridge text as an `m.text` message (escaped, mentioning nobody).
pub fn text_message(text: &str) -> Value {
    message("m.text", plain(text), html(text).replace('\n', "<br>"))
}

/// A bridge notice as an `m.notice` message.
pub fn notice(text: &str) -> Value {
    message("m.notice", plain(text), html(text).replace('\n', "<br>"))
}

/// The answer to a command, as an `m.notice` whose ids read exactly as the
/// configuration writes them (no word joiner): the bridge's own words, and the empty
/// `m.mentions` keeps the ids in it from notifying anyone.
pub fn command_answer(text: &str) -> Value {
    message("m.notice", text.to_owned(), super::text::entities(text).replace('\n', "<br>"))
}

/// `content` replacing event `target` (spec § Event replacements): the new content,
/// and a fallback body marked `* ` for clients without edits.
pub fn replacement(target: &str, content: &Value) -> Value {
    let mut out = content.clone();
    out["body"] = json!(format!("* {}", content["body"].as_str().unwrap_or_default()));
    if let Some(formatted) = content["formatted_body"].as_str() {
        out["formatted_body"] = json!(format!("* {formatted}"));
    }
    out["m.new_content"] = content.clone();
    out["m.relates_to"] = json!({ "rel_type": "m.replace", "event_id": target });
    out
}

/// `content` placed in thread `root` (spec § Threading), if any.
pub fn in_thread(mut content: Value, root: Option<&str>) -> Value {
    if let Some(root) = root {
        content["m.relates_to"] = json!({ "rel_type": "m.thread", "event_id": root, "is_falling_back": true, "m.in_reply_to": { "event_id": root } });
    }
    content
}

/// A reaction to `target` (spec § Reactions).
pub fn reaction(target: &str, key: &str) -> Value {
    json!({ "m.relates_to": { "rel_type": "m.annotation", "event_id": target, "key": key } })
}

/// The card of `interaction` now: its instructions while pending, its outcome after.
pub fn card(interaction: &Interaction, locale: Locale, link: Option<&BrowserLink>) -> Value {
    let interaction = &*readable::interaction(interaction);
    let pending = interaction.status.is_pending();
    let mut plain_lines: Vec<String> = Vec::new();
    let mut html_parts: Vec<String> = Vec::new();
    let title = match &interaction.request.kind {
        RequestKind::Approval { .. } => xtext(locale, XMsg::ApprovalTitle),
        RequestKind::Questions { .. } => xtext(locale, XMsg::QuestionTitle),
    };
    plain_lines.push(title.to_owned());
    html_parts.push(format!("<h4>{}</h4>", html(title)));
    if let Some(context) = &interaction.request.context {
        plain_lines.push(plain(&cut(context, FIELD)));
        html_parts.push(format!("<p>{}</p>", html_cut(context, FIELD)));
    }
    let (meta_plain, meta_html) = meta(interaction, locale);
    plain_lines.push(meta_plain);
    html_parts.push(format!("<p>{meta_html}</p>"));
    match &interaction.request.kind {
        RequestKind::Approval { actions } => approval(interaction, actions, locale, &mut plain_lines, &mut html_parts),
        RequestKind::Questions { questions, .. } => {
            for (i, q) in questions.iter().enumerate() {
                let line = format!("{}. {}", i + 1, cut(&q.text, FIELD));
                plain_lines.push(plain(&line));
                html_parts.push(format!("<p><b>{}</b></p>", html(&line)));
            }
        }
    }
    if pending {
        if let Some(BrowserLink::Button(url) | BrowserLink::InText(url)) = link {
            let open = web_text(locale, WebMsg::OpenInBrowser);
            plain_lines.push(format!("🌐 {open}: {url}"));
            html_parts.push(format!("<p>🌐 <a href=\"{}\">{}</a></p>", html(url), html(open)));
        }
        let how = match &interaction.request.kind {
            RequestKind::Approval { .. } => xtext(locale, XMsg::HowToApprove),
            RequestKind::Questions { .. } => xtext(locale, XMsg::HowToAnswer),
        };
        plain_lines.push(how.to_owned());
        html_parts.push(format!("<p><i>{}</i></p>", html(how)));
    } else {
        let outcome = texts::outcome(locale, interaction);
        plain_lines.push(plain(&outcome));
        html_parts.push(format!("<p><b>{}</b></p>", html_cut(&outcome, FIELD)));
    }
    message("m.text", plain_lines.join("\n"), html_parts.join(""))
}

/// Who asked, for whom, and until when (or the quorum's progress while pending).
fn meta(interaction: &Interaction, locale: Locale) -> (String, String) {
    let mut plain_out = Vec::new();
    let mut html_out = Vec::new();
    if let Origin::Pushed { agent, .. } = &interaction.origin {
        plain_out.push(format!("{}: {}", xtext(locale, XMsg::Agent), plain(&cut(agent, 200))));
        html_out.push(format!("<b>{}:</b> {}", xtext(locale, XMsg::Agent), html_cut(agent, 200)));
    }
    if let Some(requester) = &interaction.requester {
        plain_out.push(format!("{}: {}", xtext(locale, XMsg::For), plain(&cut(&requester.name, 200))));
        html_out.push(format!("<b>{}:</b> {}", xtext(locale, XMsg::For), html_cut(&requester.name, 200)));
    }
    if interaction.status.is_pending() {
        let deadline = format!("⏰ {}: {}", text(locale, Msg::Deadline), texts::clock(interaction.deadline_ms));
        html_out.push(html(&deadline));
        plain_out.push(deadline);
        if let Some(progress) = interaction.quorum_progress() {
            let line = format!("👥 {}", texts::policy::quorum_line(locale, &progress));
            html_out.push(html(&line));
            plain_out.push(plain(&line));
        }
    }
    (plain_out.join(" · "), html_out.join(" · "))
}

/// Each action: its name, description and arguments, and its decision so far.
fn approval(interaction: &Interaction, actions: &[Action], locale: Locale, plain_lines: &mut Vec<String>, html_parts: &mut Vec<String>) {
    let many = actions.len() > 1;
    let budget = ARGS_BUDGET / actions.len().max(1);
    if let Draft::Decisions(d) = &interaction.draft
        && let Some(note) = &d.user_edit_content
    {
        plain_lines.push(format!("💬 {}", plain(&cut(note, FIELD))));
        html_parts.push(format!("<p>💬 {}</p>", html_cut(note, FIELD)));
    }
    for (i, action) in actions.iter().enumerate() {
        let name = if many { format!("{}. {}", i + 1, cut(&action.name, 200)) } else { cut(&action.name, 200) };
        plain_lines.push(plain(&name));
        let mut head = format!("<p><b>{}</b>", html(&name));
        if let Some(description) = &action.description {
            plain_lines.push(plain(&cut(description, FIELD)));
            head.push_str(&format!("<br>{}", html_cut(description, FIELD)));
        }
        html_parts.push(head + "</p>");
        let pretty = serde_json::to_string_pretty(&action.args).unwrap_or_else(|_| action.args.to_string());
        let shown = if pretty.chars().count() <= budget { pretty } else { format!("{}…", pretty.chars().take(budget).collect::<String>()) };
        plain_lines.push(plain(&shown));
        html_parts.push(format!("<pre><code class=\"language-json\">{}</code></pre>", html(&shown)));
        if shown.ends_with('…') {
            plain_lines.push(xtext(locale, XMsg::ArgsCut).to_owned());
            html_parts.push(format!("<p><i>{}</i></p>", html(xtext(locale, XMsg::ArgsCut))));
        }
        if many
            && let Draft::Decisions(d) = &interaction.draft
            && let Some(Some(decision)) = d.decisions.get(i)
        {
            let line = format!("→ {}", decision_word(locale, decision));
            html_parts.push(format!("<p>{}</p>", html(&line)));
            plain_lines.push(line);
        }
    }
}

fn decision_word(locale: Locale, d: &Decision) -> String {
    match d {
        Decision::Approve => format!("✅ {}", text(locale, Msg::Approve)),
        Decision::ApproveForSession => format!("🔓 {}", text(locale, Msg::ApproveForSession)),
        Decision::Reject { .. } => format!("❌ {}", text(locale, Msg::Reject)),
        Decision::Edit { .. } => format!("✏️ {}", text(locale, Msg::Edit)),
        Decision::Respond { .. } => format!("💬 {}", text(locale, Msg::Respond)),
    }
}

/// The reactions a pending card is seeded with, one per answer it allows, in order.
pub fn seeded_reactions(interaction: &Interaction) -> Vec<&'static str> {
    let RequestKind::Approval { actions } = &interaction.request.kind else { return vec![APPROVE] };
    let all = |d: DecisionType| !actions.is_empty() && actions.iter().all(|a| a.allowed.contains(&d));
    let mut keys = Vec::new();
    if all(DecisionType::Approve) {
        keys.push(APPROVE);
    }
    if all(DecisionType::Reject) {
        keys.push(REJECT);
    }
    if actions.len() == 1 {
        if all(DecisionType::ApproveForSession) && !interaction.remember_offered().contains(&RememberScope::Session) {
            keys.push(FOR_SESSION);
        }
        if all(DecisionType::Edit) {
            keys.push(EDIT);
        }
    }
    for scope in interaction.remember_offered() {
        keys.push(if scope == RememberScope::Session { REMEMBER_SESSION } else { REMEMBER_ALWAYS });
    }
    keys.push(COMMENT);
    if actions.len() > 1 {
        keys.push(SUBMIT);
    }
    keys
}

/// What a reaction on a card asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Reacted {
    /// An engine action.
    Act(UserAction),
    /// Instructions for an answer a tap cannot carry (new arguments, a comment).
    Explain(XMsg),
    /// Not one of the card's reactions.
    Unknown,
}

/// What reaction `key` on the card of `interaction` asks for.
pub fn reaction_action(interaction: &Interaction, key: &str) -> Reacted {
    let key = bare(key);
    let is = |k: &str| key == bare(k);
    match &interaction.request.kind {
        RequestKind::Questions { .. } if is(APPROVE) || is(SUBMIT) => Reacted::Act(UserAction::Submit),
        RequestKind::Questions { .. } => Reacted::Unknown,
        RequestKind::Approval { actions } => {
            let single = actions.len() == 1;
            if is(APPROVE) {
                Reacted::Act(if single {
                    UserAction::Decide { action: 0, decision: Decision::Approve }
                } else {
                    UserAction::DecideAll { decision: DecisionType::Approve }
                })
            } else if is(REJECT) {
                Reacted::Act(if single {
                    UserAction::Decide { action: 0, decision: Decision::Reject { message: None } }
                } else {
                    UserAction::DecideAll { decision: DecisionType::Reject }
                })
            } else if is(FOR_SESSION) && single {
                Reacted::Act(UserAction::Decide { action: 0, decision: Decision::ApproveForSession })
            } else if is(REMEMBER_SESSION) {
                Reacted::Act(UserAction::Remember { scope: RememberScope::Session })
            } else if is(REMEMBER_ALWAYS) {
                Reacted::Act(UserAction::Remember { scope: RememberScope::Always })
            } else if is(SUBMIT) {
                Reacted::Act(UserAction::Submit)
            } else if is(EDIT) {
                Reacted::Explain(XMsg::HowToEdit)
            } else if is(COMMENT) {
                Reacted::Explain(XMsg::HowToComment)
            } else {
                Reacted::Unknown
            }
        }
    }
}

/// Question `index`'s poll (MSC3381 as Element sends it): its answers are the first
/// [`POLL_ANSWERS`] options, each with the id [`answer_id`].
pub fn poll(interaction: &Interaction, index: usize, locale: Locale) -> Option<Value> {
    let RequestKind::Questions { questions, .. } = &interaction.request.kind else { return None };
    let question = questions.get(index)?;
    let many = questions.len() > 1;
    let title = if many { format!("{}. {}", index + 1, cut(&question.text, FIELD)) } else { cut(&question.text, FIELD) };
    let answers: Vec<Value> = question
        .options
        .iter()
        .take(POLL_ANSWERS)
        .enumerate()
        .map(|(i, option)| {
            let label = match &option.description {
                Some(d) => format!("{} — {}", cut(&option.label, 200), cut(d, 200)),
                None => cut(&option.label, 200),
            };
            json!({ "id": answer_id(i), "org.matrix.msc1767.text": plain(&label) })
        })
        .collect();
    if answers.is_empty() {
        return None;
    }
    let max = if question.multi_select { answers.len() } else { 1 };
    let fallback: Vec<String> = std::iter::once(plain(&title))
        .chain(answers.iter().enumerate().map(|(i, a)| format!("{}. {}", i + 1, a["org.matrix.msc1767.text"].as_str().unwrap_or_default())))
        .collect();
    let _ = locale;
    Some(json!({
        "org.matrix.msc3381.poll.start": {
            "question": { "org.matrix.msc1767.text": plain(&title) },
            "kind": "org.matrix.msc3381.poll.disclosed",
            "max_selections": max,
            "answers": answers,
        },
        "org.matrix.msc1767.text": fallback.join("\n"),
        "m.mentions": {},
    }))
}

/// The event ending poll `poll`, with the outcome as its text.
pub fn poll_end(poll: &str, outcome: &str) -> Value {
    json!({
        "m.relates_to": { "rel_type": "m.reference", "event_id": poll },
        "org.matrix.msc3381.poll.end": {},
        "org.matrix.msc1767.text": plain(outcome),
        "m.mentions": {},
    })
}

/// A vote's answer ids as option indexes (unknown ids dropped).
pub fn options_of(answers: &[String]) -> Vec<usize> {
    answers.iter().filter_map(|a| option_of(a)).collect()
}

/// The word a skipped question shows.
pub fn skipped(locale: Locale) -> &'static str {
    xtext(locale, XMsg::Skipped)
}

#[cfg(test)]
mod tests;
