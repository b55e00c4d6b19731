//! Pure rendering: (Interaction, wizard step, locale, signer) → the HTML text and the
//! inline keyboard of its message. No IO, no clock: the same inputs always give the
//! same payload, which is what the snapshot tests rely on.
//!
//! Limits enforced here (DESIGN.md "Platform limits"): text ≤ 4096 characters (long
//! args are cut, and the caller attaches the full JSON), every callback_data ≤ 64
//! bytes (codes are indexes only; see [`super::codes`]), at most 100 buttons per
//! keyboard and 8 per row: long option lists and many actions are shown a page at a
//! time ([`OPTIONS_PER_PAGE`], [`ACTIONS_PER_PAGE`]) with ◀ ▶ buttons. With the web
//! inbox on, a pending card also links to its request's page ([`render_card`]): a URL
//! button in a row of its own, or a line of text within the same 4096 characters.

use teloxide::types::{InlineKeyboardButton, InlineKeyboardMarkup};

use super::codes::Code;
use super::text::{MAX_TEXT_CHARS, Tg, cut, escape, escape_cut, tg};
use super::wizard::View;
use crate::interaction::answers::encode;
use crate::interaction::{AnswerDraft, Draft, FreeText, Interaction, Question, RememberScope, RequestKind, readable};
use crate::platform::descriptor::BrowserLink;
use crate::platform::kit::codes::Decide;
use crate::platform::kit::reminder::{Recipients, Style};
use crate::platform::kit::token::TokenSigner;
use crate::platform::locale::web::{WebMsg, web_text};
use crate::platform::locale::{self, Locale, Msg, text};
use crate::protocol::{Decision, DecisionType, Reply};

/// Longest label on a button; Telegram shows about this much on a phone anyway.
const MAX_BUTTON_CHARS: usize = 60;
/// Longest single free-text field (description, question, header) in a message.
const MAX_FIELD_CHARS: usize = 1000;
/// People one reminder mentions at most (users and people elsewhere, each).
const MAX_MENTIONS: usize = 25;
/// Telegram's limits on an inline keyboard.
pub const MAX_BUTTONS: usize = 100;
pub const MAX_BUTTONS_PER_ROW: usize = 8;
/// Options shown per page of a question (as many as a Discord select takes): with
/// Other and the navigation row that is at most 31 buttons.
pub const OPTIONS_PER_PAGE: usize = 25;
/// Actions shown per page of an approval: 4 buttons each, plus two short rows.
pub const ACTIONS_PER_PAGE: usize = 10;

/// One message: HTML text and its keyboard (empty once the interaction ended).
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub text: String,
    pub keyboard: InlineKeyboardMarkup,
    /// Set when some action's args were cut: `(file name, full pretty JSON)`.
    pub full_args: Vec<(String, String)>,
}

/// Which wizard step to show: the remembered one if still valid, else the first
/// question not answered yet, else the summary (step == question count). After a
/// restart nothing is remembered and the stored draft decides.
pub fn step_for(interaction: &Interaction, remembered: Option<usize>) -> usize {
    let (RequestKind::Questions { questions, .. }, Draft::Answers { answers }) = (&interaction.request.kind, &interaction.draft) else {
        return 0;
    };
    match remembered {
        Some(step) if step <= questions.len() => step,
        _ => answers.iter().position(|a| !a.is_answered()).unwrap_or(questions.len()),
    }
}

/// How many pages of buttons wizard step `step` has (1 when it needs no paging).
pub fn pages(interaction: &Interaction, step: usize) -> usize {
    let items = match &interaction.request.kind {
        RequestKind::Approval { actions } => actions.len().div_ceil(ACTIONS_PER_PAGE),
        RequestKind::Questions { questions, .. } => questions.get(step).map_or(1, |q| q.options.len().div_ceil(OPTIONS_PER_PAGE)),
    };
    items.max(1)
}

/// The message with the first page of step `step`'s buttons.
pub fn render(interaction: &Interaction, step: usize, locale: Locale, signer: &TokenSigner) -> Rendered {
    render_page(interaction, View { step, page: 0 }, locale, signer)
}

/// The message showing `view` (its page clamped to the pages there are).
pub fn render_page(interaction: &Interaction, view: View, locale: Locale, signer: &TokenSigner) -> Rendered {
    render_card(interaction, view, locale, signer, None)
}

/// [`render_page`] with the request's "Open in browser" while it is pending: `link`
/// when the web inbox is on. An ended card shows neither (its buttons are gone too).
pub fn render_card(interaction: &Interaction, view: View, locale: Locale, signer: &TokenSigner, link: Option<&BrowserLink>) -> Rendered {
    let interaction = &*readable::interaction(interaction);
    let step = view.step;
    let page = view.page.min(pages(interaction, step) - 1);
    let pending = interaction.status.is_pending();
    let link = link.filter(|_| pending);
    // A link in the text is one more line of the tail, so the cutting counts it.
    let link_line = match link {
        Some(BrowserLink::InText(url)) => Some(format!("🌐 {}: {}", escape(web_text(locale, WebMsg::OpenInBrowser)), escape(url))),
        _ => None,
    };
    let extra = link_line.as_deref();
    let mut out = match (&interaction.request.kind, &interaction.draft) {
        (RequestKind::Approval { actions }, Draft::Decisions(draft)) => {
            approval(interaction, actions, &draft.decisions, draft.user_edit_content.as_deref(), page, locale, signer, extra)
        }
        (RequestKind::Questions { questions, .. }, Draft::Answers { answers }) if pending => {
            if step < questions.len() {
                question_step(interaction, questions, answers, step, page, locale, signer, extra)
            } else {
                summary(interaction, questions, answers, locale, signer, extra)
            }
        }
        (RequestKind::Questions { questions, .. }, Draft::Answers { .. }) => ended_questions(interaction, questions, locale),
        // The core builds the draft from the request kind, so this cannot happen; show
        // the outcome rather than panic on stored data.
        _ => Rendered { text: escape(&locale::outcome(locale, interaction)), keyboard: empty(), full_args: Vec::new() },
    };
    if !pending {
        out.keyboard = empty();
    }
    if let Some(BrowserLink::Button(url)) = link {
        // A row of its own: every keyboard leaves room for it (at most 55 of
        // Telegram's 100 buttons, see ACTIONS_PER_PAGE and OPTIONS_PER_PAGE).
        match reqwest::Url::parse(url) {
            Ok(url) => out.keyboard.inline_keyboard.push(vec![InlineKeyboardButton::url(format!("🌐 {}", web_text(locale, WebMsg::OpenInBrowser)), url)]),
            // `web.public_url` is checked at load, so only a bug gets here.
            Err(e) => tracing::error!(error = %e, interaction = %interaction.id, "the request's link is not a URL; no button"),
        }
    }
    out
}

/// An empty inline keyboard: sent on the final edit so the buttons disappear.
pub fn empty() -> InlineKeyboardMarkup {
    InlineKeyboardMarkup::new(Vec::<Vec<InlineKeyboardButton>>::new())
}

fn button(signer: &TokenSigner, interaction: &Interaction, code: Code, label: &str) -> Option<InlineKeyboardButton> {
    match signer.sign(&interaction.id, &code.encode()) {
        Ok(token) => Some(InlineKeyboardButton::callback(cut(label, MAX_BUTTON_CHARS), token)),
        Err(e) => {
            // Only a bug (a code over MAX_CODE_BYTES) gets here: leave the button out
            // rather than send data Telegram would reject.
            tracing::error!(interaction = %interaction.id, code = %code.encode(), error = %e, "cannot sign a button");
            None
        }
    }
}

/// ◀ ▶ buttons to the neighbouring pages of step `step`, when there are several.
fn page_buttons(signer: &TokenSigner, interaction: &Interaction, step: usize, page: usize) -> Vec<InlineKeyboardButton> {
    let total = pages(interaction, step);
    let mut out = Vec::new();
    if page > 0 {
        out.extend(button(signer, interaction, Code::Page { step, page: page - 1 }, &format!("◀ {page}/{total}")));
    }
    if page + 1 < total {
        out.extend(button(signer, interaction, Code::Page { step, page: page + 1 }, &format!("{}/{total} ▶", page + 2)));
    }
    out
}

fn deadline_line(interaction: &Interaction, locale: Locale) -> String {
    format!("⏰ {}: {}", text(locale, Msg::Deadline), locale::clock(interaction.deadline_ms))
}

/// The last lines: the deadline while pending, the outcome after.
fn status_line(interaction: &Interaction, locale: Locale) -> String {
    if interaction.status.is_pending() { deadline_line(interaction, locale) } else { format!("<b>{}</b>", escape(&locale::outcome(locale, interaction))) }
}

/// Joins `head`, as many `body` segments as fit, and `tail` within Telegram's limit;
/// a `…` line marks dropped segments. Each segment is already escaped HTML with its
/// tags closed, so dropping whole segments never breaks the markup.
fn fit(head: &[String], body: &[String], tail: &[String]) -> String {
    let len = |parts: &[String]| parts.iter().map(|p| p.chars().count() + 1).sum::<usize>();
    let budget = MAX_TEXT_CHARS.saturating_sub(len(head) + len(tail) + 2);
    let mut used = 0;
    let mut kept: Vec<String> = Vec::new();
    for (i, segment) in body.iter().enumerate() {
        let n = segment.chars().count() + 1;
        if used + n > budget {
            tracing::debug!(dropped = body.len() - i, "message too long: dropping segments");
            kept.push("…".into());
            break;
        }
        used += n;
        kept.push(segment.clone());
    }
    head.iter().chain(&kept).chain(tail).cloned().collect::<Vec<_>>().join("\n")
}

/// Pretty JSON escaped for `<pre>`, at most `max` characters after escaping; true
/// when it had to be cut.
fn args_block(args: &serde_json::Value, max: usize) -> (String, bool) {
    let pretty = serde_json::to_string_pretty(args).unwrap_or_else(|_| args.to_string());
    let was_cut = escape(&pretty).chars().count() > max;
    (escape_cut(&pretty, max), was_cut)
}

fn decision_word(locale: Locale, decision: &Decision) -> String {
    match decision {
        Decision::Approve => format!("✅ {}", text(locale, Msg::Approve)),
        Decision::ApproveForSession => format!("🔓 {}", text(locale, Msg::ApproveForSession)),
        Decision::Reject { message: None } => format!("❌ {}", text(locale, Msg::Reject)),
        Decision::Reject { message: Some(m) } => format!("❌ {}: {}", text(locale, Msg::Reject), cut(m, 200)),
        Decision::Edit { .. } => format!("✏️ {}", text(locale, Msg::Edit)),
        Decision::Respond { message } => format!("💬 {}: {}", text(locale, Msg::Respond), cut(message, 200)),
    }
}

// Each is a separate part of the card; bundling them would only rename them.
#[allow(clippy::too_many_arguments)]
fn approval(
    interaction: &Interaction,
    actions: &[crate::interaction::Action],
    decided: &[Option<Decision>],
    note: Option<&str>,
    page: usize,
    locale: Locale,
    signer: &TokenSigner,
    link_line: Option<&str>,
) -> Rendered {
    let many = actions.len() > 1;
    let mut head = vec![format!("🔐 <b>{}</b>", escape(tg(locale, Tg::ApprovalNeeded)))];
    head.extend(context_line(interaction));
    let mut tail = Vec::new();
    if let Some(note) = note {
        tail.push(format!("💬 {}", escape_cut(note, MAX_FIELD_CHARS)));
    }
    if let Some(progress) = interaction.quorum_progress().filter(|_| interaction.status.is_pending()) {
        tail.push(format!("👥 {}", escape(&locale::policy::quorum_line(locale, &progress))));
    }
    tail.push(status_line(interaction, locale));
    tail.extend(link_line.map(str::to_owned));

    // Everything but the args first, so the args get whatever room is left.
    let mut fixed: Vec<Vec<String>> = Vec::new();
    for (n, action) in actions.iter().enumerate() {
        let mut lines =
            vec![if many { format!("\n<b>{}. {}</b>", n + 1, escape_cut(&action.name, 200)) } else { format!("\n<b>{}</b>", escape_cut(&action.name, 200)) }];
        if let Some(d) = &action.description {
            lines.push(escape_cut(d, MAX_FIELD_CHARS));
        }
        lines.push(format!("{}:", escape(text(locale, Msg::Arguments))));
        fixed.push(lines);
    }
    let fixed_len: usize = head.iter().chain(fixed.iter().flatten()).chain(&tail).map(|l| l.chars().count() + 1).sum();
    // Per action: the decision line (≤ ~220) and the <pre></pre> tags.
    let reserve = actions.len() * 240 + 16;
    let per_action = MAX_TEXT_CHARS.saturating_sub(fixed_len + reserve) / actions.len().max(1);

    let mut body = Vec::new();
    let mut full_args = Vec::new();
    for (n, (action, mut lines)) in actions.iter().zip(fixed).enumerate() {
        let (args, was_cut) = args_block(&action.args, per_action);
        lines.push(format!("<pre>{args}</pre>"));
        if was_cut {
            let pretty = serde_json::to_string_pretty(&action.args).unwrap_or_else(|_| action.args.to_string());
            full_args.push((format!("{}.json", file_stem(&action.name)), pretty));
        }
        if let (true, Some(Some(d))) = (many, decided.get(n)) {
            lines.push(format!("→ {}", escape(&decision_word(locale, d))));
        }
        body.push(lines.join("\n"));
    }
    if !full_args.is_empty() {
        body.push(format!("<i>{}</i>", escape(text(locale, Msg::ArgsAttached))));
    }

    // "Approve once" plus the remembered choices the policy offers (one action only).
    let offered = interaction.remember_offered();
    let approve = if offered.is_empty() { Msg::Approve } else { Msg::ApproveOnce };
    let mut rows: Vec<Vec<InlineKeyboardButton>> = Vec::new();
    for (n, action) in actions.iter().enumerate().skip(page * ACTIONS_PER_PAGE).take(ACTIONS_PER_PAGE) {
        let chosen = decided.get(n).and_then(Option::as_ref).map(Decision::decision_type);
        let suffix = if many { format!(" #{}", n + 1) } else { String::new() };
        let mark = |d: DecisionType| if chosen == Some(d) { "• " } else { "" };
        let mut row = Vec::new();
        for (decision, emoji, msg, code) in [
            (DecisionType::Approve, "✅", approve, Code::Decide(Decide::Approve(n))),
            (DecisionType::ApproveForSession, "🔓", Msg::ApproveForSession, Code::Decide(Decide::ApproveForSession(n))),
            (DecisionType::Reject, "❌", Msg::Reject, Code::Decide(Decide::Reject(n))),
            (DecisionType::Edit, "✏️", Msg::Edit, Code::Edit { action: n }),
        ] {
            // The policy's own "for this session" replaces Kimi's: the core sends Kimi's
            // native decision itself when the two mean the same.
            let replaced = decision == DecisionType::ApproveForSession && offered.contains(&RememberScope::Session);
            if action.allowed.contains(&decision) && !replaced {
                row.extend(button(signer, interaction, code, &format!("{}{emoji} {}{suffix}", mark(decision), action.label_or(decision, text(locale, msg)))));
            }
        }
        // A comment is always possible: a `respond` decision where allowed, else a note
        // for the whole request (`user_edit_content`, seed 002).
        row.extend(button(
            signer,
            interaction,
            Code::Comment { action: n },
            &format!("{}💬 {}{suffix}", mark(DecisionType::Respond), text(locale, Msg::Respond)),
        ));
        rows.push(row);
    }
    if !offered.is_empty() {
        let remember: Vec<InlineKeyboardButton> = offered
            .iter()
            .filter_map(|&scope| {
                button(
                    signer,
                    interaction,
                    Code::Decide(Decide::Remember(scope)),
                    &format!("{} {}", remember_emoji(scope), locale::policy::remember_button(locale, scope)),
                )
            })
            .collect();
        rows.push(remember);
    }
    if many {
        let mut row = Vec::new();
        if actions.iter().all(|a| a.allowed.contains(&DecisionType::Approve)) {
            row.extend(button(signer, interaction, Code::Decide(Decide::ApproveAll), &format!("✅ {}", text(locale, Msg::ApproveAll))));
        }
        if actions.iter().all(|a| a.allowed.contains(&DecisionType::Reject)) {
            row.extend(button(signer, interaction, Code::Decide(Decide::RejectAll), &format!("❌ {}", text(locale, Msg::RejectAll))));
        }
        row.extend(button(signer, interaction, Code::Decide(Decide::Submit), &format!("📨 {}", text(locale, Msg::Submit))));
        rows.push(row);
    }
    let nav = page_buttons(signer, interaction, 0, page);
    if !nav.is_empty() {
        rows.push(nav);
    }
    Rendered { text: fit(&head, &body, &tail), keyboard: InlineKeyboardMarkup::new(rows), full_args }
}

fn remember_emoji(scope: RememberScope) -> &'static str {
    match scope {
        RememberScope::Session => "🔁",
        RememberScope::Always => "♾️",
    }
}

/// An escalation reminder as HTML: people on Telegram mentioned by a `tg://user` link
/// (which notifies them), others named. Telegram has no roles: a role's reminder
/// mentions nobody and says whose decision it waits for.
pub fn reminder(interaction: &Interaction, people: &Recipients, locale: Locale) -> String {
    // At most MAX_MENTIONS people (~50 characters each) and a cut subject keep the
    // text within Telegram's limit without cutting through a tag.
    const TELEGRAM: Style = Style {
        user: |id| (!id.is_empty() && id.bytes().all(|b| b.is_ascii_digit())).then(|| format!("<a href=\"tg://user?id={id}\">{id}</a>")),
        group: |_| None,
        text: escape_cut,
        deadline: locale::clock,
        subject_max: MAX_FIELD_CHARS,
        most_named: MAX_MENTIONS,
    };
    crate::platform::kit::reminder::text(locale, interaction, people, &TELEGRAM)
}

/// A file name from a tool name: letters, digits, `-` and `_` only.
fn file_stem(name: &str) -> String {
    let stem: String = name.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_').take(60).collect();
    if stem.is_empty() { "args".into() } else { stem }
}

fn question_title(q: &Question, step: usize, count: usize) -> String {
    let header = q.header.as_deref().map(|h| format!(" {}", escape_cut(h, 100))).unwrap_or_default();
    format!("❓ <b>[{}/{count}]{header}</b>", step + 1)
}

/// The label of the free-text slot: the input option's own label, else "Other".
fn free_text_label(q: &Question, locale: Locale) -> String {
    q.free_text_label().map(str::to_owned).unwrap_or_else(|| text(locale, Msg::Other).to_owned())
}

/// The pushing agent's context (`text`), in italics, when it gave one.
fn context_line(interaction: &Interaction) -> Option<String> {
    interaction.request.context.as_deref().map(|c| format!("<i>{}</i>", escape_cut(c, MAX_FIELD_CHARS)))
}

#[allow(clippy::too_many_arguments)] // as for `approval`
fn question_step(
    interaction: &Interaction,
    questions: &[Question],
    answers: &[AnswerDraft],
    step: usize,
    page: usize,
    locale: Locale,
    signer: &TokenSigner,
    link_line: Option<&str>,
) -> Rendered {
    let Some(q) = questions.get(step) else { return summary(interaction, questions, answers, locale, signer, link_line) };
    let draft = answers.get(step).cloned().unwrap_or_default();
    let mut head: Vec<String> = context_line(interaction).into_iter().collect();
    head.extend([question_title(q, step, questions.len()), format!("<b>{}</b>", escape_cut(&q.text, MAX_FIELD_CHARS))]);
    if q.multi_select {
        head.push(format!("<i>{}</i>", escape(tg(locale, Tg::ChooseMany))));
    }
    let total = pages(interaction, step);
    if total > 1 {
        head.push(format!("<i>{}/{total}</i>", page + 1));
    }
    head.push(String::new());
    // Only this page's options: their lines are what its buttons answer.
    let on_page = || q.options.iter().enumerate().skip(page * OPTIONS_PER_PAGE).take(OPTIONS_PER_PAGE);
    let body: Vec<String> = on_page()
        .map(|(n, o)| {
            let mut line = format!("{}. {}", n + 1, escape_cut(&o.label, 300));
            if let Some(d) = &o.description {
                line.push_str(&format!(" — <i>{}</i>", escape_cut(d, 300)));
            }
            line
        })
        .collect();
    let mut tail = vec![String::new()];
    if draft.is_answered() {
        tail.push(format!("→ {}", escape_cut(&answer_text(q, &draft, locale), MAX_FIELD_CHARS)));
    }
    tail.push(status_line(interaction, locale));
    tail.extend(link_line.map(str::to_owned));

    let mut rows: Vec<Vec<InlineKeyboardButton>> = Vec::new();
    for (n, o) in on_page() {
        let selected = draft.selected.contains(&n);
        let mark = match (q.multi_select, selected) {
            (true, true) => "☑ ",
            (true, false) => "☐ ",
            (false, true) => "✓ ",
            (false, false) => "",
        };
        let pen = if o.input { " ✏️" } else { "" };
        rows.extend(button(signer, interaction, Code::Option { question: step, option: n }, &format!("{mark}{}{pen}", o.label)).map(|b| vec![b]));
    }
    if q.free_text == FreeText::Other {
        let mark = if draft.text.is_some() { if q.multi_select { "☑ " } else { "✓ " } } else { "" };
        rows.extend(button(signer, interaction, Code::Other { question: step }, &format!("{mark}{} ✏️", free_text_label(q, locale))).map(|b| vec![b]));
    }
    let mut last = Vec::new();
    if step > 0 {
        last.extend(button(signer, interaction, Code::Goto { step: step - 1 }, "‹"));
    }
    last.extend(page_buttons(signer, interaction, step, page));
    last.extend(button(signer, interaction, Code::Skip { question: step }, &format!("⏭ {}", text(locale, Msg::Skip))));
    if q.multi_select {
        last.extend(button(signer, interaction, Code::Done { question: step }, &format!("✔ {}", text(locale, Msg::Done))));
    }
    rows.push(last);
    Rendered { text: fit(&head, &body, &tail), keyboard: InlineKeyboardMarkup::new(rows), full_args: Vec::new() }
}

/// What a draft will send, in words: skipped is shown localized, the rest as encoded.
fn answer_text(q: &Question, draft: &AnswerDraft, locale: Locale) -> String {
    if draft.skipped {
        return text(locale, Msg::Skipped).to_owned();
    }
    if !draft.is_answered() {
        return text(locale, Msg::NotAnswered).to_owned();
    }
    encode(q, draft)
}

fn summary(
    interaction: &Interaction,
    questions: &[Question],
    answers: &[AnswerDraft],
    locale: Locale,
    signer: &TokenSigner,
    link_line: Option<&str>,
) -> Rendered {
    let head = vec![format!("📝 <b>{}</b>", escape(text(locale, Msg::Summary)))];
    let body: Vec<String> = questions
        .iter()
        .zip(answers)
        .map(|(q, a)| format!("\n<b>{}</b>\n→ {}", escape_cut(&q.text, 500), escape_cut(&answer_text(q, a, locale), 500)))
        .collect();
    let mut tail = vec![String::new(), status_line(interaction, locale)];
    tail.extend(link_line.map(str::to_owned));
    let row: Vec<InlineKeyboardButton> = [
        button(signer, interaction, Code::Decide(Decide::Submit), &format!("📨 {}", text(locale, Msg::Submit))),
        button(signer, interaction, Code::Goto { step: 0 }, &format!("✏️ {}", text(locale, Msg::Change))),
    ]
    .into_iter()
    .flatten()
    .collect();
    Rendered { text: fit(&head, &body, &tail), keyboard: InlineKeyboardMarkup::new(vec![row]), full_args: Vec::new() }
}

fn ended_questions(interaction: &Interaction, questions: &[Question], locale: Locale) -> Rendered {
    let mut head = vec![format!("❓ <b>{}</b>", escape(tg(locale, Tg::QuestionNeeded)))];
    head.extend(context_line(interaction));
    // Only what was actually sent (or received from elsewhere) is shown: after an
    // expiry or a cancel the local draft was never an answer.
    let body: Vec<String> = match &interaction.reply {
        Some(Reply::Answers { answers }) => questions
            .iter()
            .filter_map(|q| answers.get(&q.text).map(|a| (q, a)))
            .map(|(q, a)| format!("\n<b>{}</b>\n→ {}", escape_cut(&q.text, 500), escape_cut(a, 500)))
            .collect(),
        _ => Vec::new(),
    };
    let tail = vec![String::new(), status_line(interaction, locale)];
    Rendered { text: fit(&head, &body, &tail), keyboard: empty(), full_args: Vec::new() }
}
