//! Plain-text rendering of interactions for the terminal. Pure functions of the
//! interaction and the time, so the exact output is easy to test. Hidden characters
//! (an ESC could restyle the terminal itself) are shown as markers
//! ([`readable`](crate::interaction::readable)).

use crate::interaction::{Decider, Delivery, FreeText, Interaction, Question, RememberScope, RequestKind, Status, readable};
use crate::platform::locale::{Locale, policy};
use crate::protocol::{Decision, DecisionType, Reply};

/// `HH:MM:SS UTC` for a unix-ms time.
pub fn clock(ms: i64) -> String {
    let secs = ms.div_euclid(1000).rem_euclid(86_400);
    format!("{:02}:{:02}:{:02} UTC", secs / 3600, secs / 60 % 60, secs % 60)
}

/// The block printed when an interaction arrives.
pub fn interaction(i: &Interaction) -> String {
    let i = &*readable::interaction(i);
    let deadline = format!("answer by {} ({} s)", clock(i.deadline_ms), i.request.timeout_secs);
    let context = i.request.context.as_deref().map(|c| format!("\n│ {c}")).unwrap_or_default();
    match &i.request.kind {
        RequestKind::Approval { actions } => {
            let mut out = format!("┌ approval {} · {} action(s) · {deadline}{context}\n", i.approval_key(), actions.len());
            for (n, action) in actions.iter().enumerate() {
                out.push_str(&format!("│ {}. {}", n + 1, action.name));
                if let Some(d) = &action.description {
                    out.push_str(&format!(" — {d}"));
                }
                out.push_str(&format!("\n│    args: {}\n", action.args));
                let allowed: Vec<&str> = action.allowed.iter().map(|d| d.as_str()).collect();
                out.push_str(&format!("│    allowed: {}\n", allowed.join(", ")));
            }
            if let Some(progress) = i.quorum_progress() {
                out.push_str(&format!("│ {}\n", quorum_line(&progress)));
            }
            out + "└"
        }
        RequestKind::Questions { questions, .. } => {
            format!("┌ question {} · {} question(s) · {deadline}{context}", i.approval_key(), questions.len())
        }
    }
}

/// The prompt for deciding action `index`.
pub fn action_prompt(i: &Interaction, index: usize) -> String {
    let i = &*readable::interaction(i);
    let Some(action) = i.request.actions().get(index) else { return String::new() };
    let offered = i.remember_offered();
    let mut choices = Vec::new();
    for allowed in &action.allowed {
        let ours = match allowed {
            DecisionType::Approve if !offered.is_empty() => "[a]pprove once",
            DecisionType::Approve => "[a]pprove",
            // The policy's own session choice replaces the backend's.
            DecisionType::ApproveForSession if offered.contains(&RememberScope::Session) => continue,
            DecisionType::ApproveForSession => "[s]ession (approve for the session)",
            DecisionType::Reject => "[r]eject [reason]",
            DecisionType::Edit => "[e]dit [json]",
            DecisionType::Respond => "[c]omment <text>",
        };
        // The backend's own word for it, where it has one ("Always Allow").
        choices.push(match action.labels.iter().find(|(d, _)| d == allowed) {
            Some((_, label)) => format!("{ours} “{label}”"),
            None => ours.to_owned(),
        });
    }
    if !action.allowed.contains(&DecisionType::Respond) {
        choices.push("[c]omment <text>".to_owned());
    }
    // Beside "approve once", as on the chat platforms' buttons.
    let at = choices.iter().position(|c| c.starts_with("[a]")).map_or(0, |p| p + 1);
    for (n, scope) in offered.iter().enumerate() {
        let choice = match scope {
            RememberScope::Session => "[as] approve for this session",
            RememberScope::Always => "[aa] always approve",
        };
        choices.insert(at + n, choice.to_owned());
    }
    format!("{}? {} >", action.name, choices.join(" · "))
}

/// "2 of 3 approvals: Lan ✔, Minh ✔", as the chat platforms say it (in English).
pub fn quorum_line(progress: &crate::interaction::policy::QuorumProgress) -> String {
    policy::quorum_line(Locale::En, progress)
}

/// The prompt for question `index`: header, text, numbered options.
pub fn question_prompt(i: &Interaction, index: usize) -> String {
    let i = &*readable::interaction(i);
    let RequestKind::Questions { questions, .. } = &i.request.kind else { return String::new() };
    let Some(q) = questions.get(index) else { return String::new() };
    let mut out = format!("[{}/{}]", index + 1, questions.len());
    if let Some(h) = &q.header {
        out.push_str(&format!(" {h}"));
    }
    out.push_str(&format!("\n{}\n", q.text));
    for (n, option) in q.options.iter().enumerate() {
        out.push_str(&format!("  {}) {}", n + 1, option.label));
        if let Some(d) = &option.description {
            out.push_str(&format!(" — {d}"));
        }
        if option.input {
            out += " (type your answer)";
        }
        out += "\n";
    }
    if q.free_text == FreeText::Other {
        out.push_str(&format!("  {}) Other (type your answer)\n", q.options.len() + 1));
    }
    let how = if q.multi_select { "numbers separated by commas" } else { "a number" };
    let text = match (q.free_text, q.free_text_label()) {
        (FreeText::Disabled, _) => String::new(),
        (_, Some(label)) => format!(", or type text for {label}"),
        _ => ", or type your own answer".into(),
    };
    out + format!("answer with {how}{text}, s to skip >").as_str()
}

/// The prompt when free text is expected next.
pub fn text_prompt(q: &Question) -> String {
    format!("{}: type your answer >", readable::text(q.free_text_label().unwrap_or("Other")))
}

/// The line printed when an interaction ends, and again when its reply reaches the
/// agent after a delay (the first line said it was not delivered yet).
pub fn outcome(i: &Interaction) -> String {
    let i = &*readable::interaction(i);
    let status = status(i);
    match i.delivery {
        Delivery::Queued => format!("{status} (saved, not yet delivered to the agent)"),
        Delivery::TooLate { .. } => format!("{status} (the agent timed out before this reached it)"),
        Delivery::NotWaiting { .. } => format!("{status} (not delivered: the agent stopped waiting for this; its current request, if any, follows)"),
        Delivery::None | Delivery::Delivered { .. } => status,
    }
}

fn status(i: &Interaction) -> String {
    let key = i.approval_key();
    // A remembered rule or a fallback settled it: say so, not who clicked.
    if let Some(settled) = policy::settlement(Locale::En, i) {
        return format!("{settled} · {key}");
    }
    match &i.status {
        Status::Pending => format!("… {key} pending"),
        Status::Resolved { by: Decider::Elsewhere, at_ms } => {
            format!("✔ {key} resolved elsewhere at {}{}", clock(*at_ms), reply_suffix(i.reply.as_ref()))
        }
        Status::Resolved { by, at_ms } => {
            // Under a quorum, everyone whose vote counted.
            let who = policy::counted_voters(i).map_or_else(|| by.name().to_owned(), |v| v.join(", "));
            let remembered = policy::remembered_suffix(Locale::En, i);
            format!("✔ {key} decided by {who} at {}{}{remembered}", clock(*at_ms), reply_suffix(i.reply.as_ref()))
        }
        Status::Expired { at_ms, by_backend } => {
            let who = if *by_backend { "the agent timed it out" } else { "no decision in time" };
            let sent = if i.reply.is_some() { "; rejected automatically" } else { "" };
            format!("⌛ {key} expired at {} ({who}){sent}", clock(*at_ms))
        }
        Status::Cancelled { at_ms, reason } => format!("✖ {key} {reason} at {}", clock(*at_ms)),
    }
}

fn reply_suffix(reply: Option<&Reply>) -> String {
    match reply {
        None => String::new(),
        Some(Reply::Answers { answers }) => {
            let parts: Vec<String> = answers.0.iter().map(|(q, a)| format!("{q} → {a}")).collect();
            format!(": {}", parts.join("; "))
        }
        Some(Reply::Decisions { decisions, user_edit_content }) => {
            let mut parts: Vec<String> = decisions.iter().map(decision_text).collect();
            if let Some(note) = user_edit_content {
                parts.push(format!("note: {note}"));
            }
            format!(": {}", parts.join("; "))
        }
    }
}

fn decision_text(d: &Decision) -> String {
    match d {
        Decision::Approve => "approve".into(),
        Decision::ApproveForSession => "approve for session".into(),
        Decision::Reject { message: None } => "reject".into(),
        Decision::Reject { message: Some(m) } => format!("reject ({m})"),
        Decision::Edit { edited_action } => format!("edit {}", serde_json::Value::Object(edited_action.args.clone())),
        Decision::Respond { message } => format!("respond ({message})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::policy::{Fallback, FallbackDecision, Policy};
    use crate::interaction::{AccessPolicy, Actor, RequestBuilder, TimeoutDefaults, UserAction};
    use crate::protocol::{ActionRequest, ReviewConfig};

    fn kimi_call(policy: Policy) -> Interaction {
        let action = ActionRequest { name: "Shell".into(), args: serde_json::json!({"cmd": "ls"}), description: None, tool_use_id: None };
        let config = ReviewConfig { allowed_decisions: Some(vec!["approve".into(), "approve_for_session".into(), "reject".into()]), ..ReviewConfig::default() };
        let request = RequestBuilder::start("k_1", vec![action], vec![config], Some(600)).finish(TimeoutDefaults::default()).expect("request");
        Interaction::new("i".into(), "s".into(), request, None, 0).with_policy(Some(policy))
    }

    fn policy() -> Policy {
        Policy {
            name: "p".into(),
            approvers: vec![("console".into(), "me".into()), ("console".into(), "you".into())],
            approver_roles: vec![],
            quorum: 1,
            remember: vec![],
            remember_args: Default::default(),
            escalation: vec![],
            fallback: None,
        }
    }

    #[test]
    fn hidden_characters_reach_the_terminal_as_markers() {
        let action = ActionRequest {
            name: "rm\u{0}".into(),
            args: serde_json::json!({"path": "/\u{202e}gpj.txt", "c": "\u{1b}[2J"}),
            description: None,
            tool_use_id: None,
        };
        let request = RequestBuilder::start("k_1", vec![action], vec![ReviewConfig::default()], Some(600)).finish(TimeoutDefaults::default()).expect("request");
        let i = Interaction::new("i".into(), "s".into(), request, None, 0);
        let card = interaction(&i);
        assert!(card.contains("│ 1. rm[U+0000]\n│    args: {\"path\":\"/[U+202E]gpj.txt\",\"c\":\"[U+001B][2J\"}"), "{card}");
        assert!(!card.contains(['\u{0}', '\u{1b}', '\u{202e}']), "{card}");
        assert!(action_prompt(&i, 0).starts_with("rm[U+0000]? "));
    }

    #[test]
    fn remembered_choices_sit_beside_approve_once() {
        let i = kimi_call(Policy { remember: vec![RememberScope::Session, RememberScope::Always], ..policy() });
        assert_eq!(
            action_prompt(&i, 0),
            "Shell? [a]pprove once · [as] approve for this session · [aa] always approve · [r]eject [reason] · [c]omment <text> >"
        );
        let i = kimi_call(policy());
        assert_eq!(action_prompt(&i, 0), "Shell? [a]pprove · [s]ession (approve for the session) · [r]eject [reason] · [c]omment <text> >");
    }

    #[test]
    fn quorum_and_policy_outcomes() {
        let mut i = kimi_call(Policy { quorum: 2, ..policy() });
        let nobody = AccessPolicy::default();
        let (me, you) = (Actor::new("console", "me", "Lan"), Actor::new("console", "you", "Minh"));
        i.apply(&me, UserAction::Decide { action: 0, decision: Decision::Approve }, &nobody, 1000).expect("counted");
        assert!(interaction(&i).contains("\n│ 1 of 2 approvals: Lan ✔\n"), "{}", interaction(&i));
        i.apply(&you, UserAction::Decide { action: 0, decision: Decision::Approve }, &nobody, 61_000).expect("final");
        assert_eq!(outcome(&i), "✔ k_1 decided by Lan, Minh at 00:01:01 UTC: approve");

        let mut i = kimi_call(Policy { fallback: Some(Fallback { after_secs: 90, decision: FallbackDecision::Reject }), ..policy() });
        assert!(i.apply_fallback(90_000));
        assert_eq!(outcome(&i), "❌ Rejected by policy: no decision within 1 min 30 s · k_1");
    }

    #[test]
    fn clock_is_utc_time_of_day() {
        assert_eq!(clock(0), "00:00:00 UTC");
        assert_eq!(clock(((13 * 3600 + 5 * 60 + 9) * 1000) + 86_400_000 * 3), "13:05:09 UTC");
    }
}
