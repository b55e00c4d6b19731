//! Texts about decision policies (issue #10), in English, Vietnamese and Chinese:
//! quorum progress, outcomes settled by a remembered rule or a fallback, who a
//! quorum's outcome names, and escalation reminders. Shared by every platform.
//!
//! Pure: each function takes what it shows and returns plain text. Platforms escape
//! or format around it (Telegram's HTML, Discord's mentions); a piece a caller passes
//! in already formatted (a mention list, a deadline) is inserted as it is.

use super::{Locale, Msg, clock, text};
use crate::interaction::policy::{FallbackDecision, PolicySettlement, QuorumProgress, RememberScope, Tally};
use crate::interaction::{Draft, Interaction, RequestKind, Status};
use crate::protocol::Reply;

/// The button label for remembering an approval with `scope`.
pub fn remember_button(locale: Locale, scope: RememberScope) -> &'static str {
    match scope {
        RememberScope::Session => text(locale, Msg::RememberSession),
        RememberScope::Always => text(locale, Msg::RememberAlways),
    }
}

/// "for this session" / "always", as said after an approval or a rule.
pub fn scope_words(locale: Locale, scope: RememberScope) -> &'static str {
    use Locale::*;
    match (scope, locale) {
        (RememberScope::Session, En) => "for this session",
        (RememberScope::Session, Vi) => "cho phiên này",
        (RememberScope::Session, Zh) => "本会话内",
        (RememberScope::Always, En) => "always",
        (RememberScope::Always, Vi) => "luôn luôn",
        (RememberScope::Always, Zh) => "始终",
    }
}

/// A policy duration in words: `90 s`, `30 min`, `1 h 30 min`, `1 d`. Zero parts are
/// left out, so the usual round values read naturally.
pub fn duration(locale: Locale, secs: u64) -> String {
    use Locale::*;
    let units: [(u64, [&str; 3]); 4] = [(86_400, ["d", "ngày", "天"]), (3600, ["h", "giờ", "小时"]), (60, ["min", "phút", "分钟"]), (1, ["s", "giây", "秒"])];
    let column = match locale {
        En => 0,
        Vi => 1,
        Zh => 2,
    };
    let mut rest = secs;
    let mut parts = Vec::new();
    for (size, names) in units {
        if rest >= size {
            parts.push(format!("{} {}", rest / size, names[column]));
            rest %= size;
        }
    }
    if parts.is_empty() {
        parts.push(format!("0 {}", units[3].1[column]));
    }
    parts.join(" ")
}

/// "2 of 3 approvals": the most votes one decision set has, of the number needed.
pub fn approvals_count(locale: Locale, have: usize, needed: u32) -> String {
    match locale {
        Locale::En => format!("{have} of {needed} approvals"),
        Locale::Vi => format!("{have}/{needed} lượt duyệt"),
        Locale::Zh => format!("已批准 {have}/{needed}"),
    }
}

/// The quorum line while votes arrive: "2 of 3 approvals: Lan ✔, Minh ✔". When people
/// voted different decision sets, each set is shown apart ("Lan ✔ · Minh ✏️ (edited)"),
/// several edited sets numbered, so it is clear which votes count together.
pub fn quorum_line(locale: Locale, progress: &QuorumProgress) -> String {
    let count = approvals_count(locale, progress.leading(), progress.needed);
    if progress.tallies.is_empty() {
        return count;
    }
    let edited = progress.tallies.iter().filter(|t| !t.is_plain_approval()).count();
    let mut n = 0;
    let tallies: Vec<String> = progress
        .tallies
        .iter()
        .map(|t| {
            if t.is_plain_approval() {
                return names_marked(t, "✔");
            }
            n += 1;
            format!("{} ({})", names_marked(t, "✏️"), edited_words(locale, (edited > 1).then_some(n)))
        })
        .collect();
    let colon = if locale == Locale::Zh { "：" } else { ": " };
    format!("{count}{colon}{}", tallies.join(" · "))
}

fn names_marked(tally: &Tally, mark: &str) -> String {
    tally.voters.iter().map(|v| format!("{} {mark}", v.name)).collect::<Vec<_>>().join(", ")
}

fn edited_words(locale: Locale, number: Option<usize>) -> String {
    match (locale, number) {
        (Locale::En, None) => "edited".into(),
        (Locale::En, Some(n)) => format!("edit {n}"),
        (Locale::Vi, None) => "đã sửa".into(),
        (Locale::Vi, Some(n)) => format!("bản sửa {n}"),
        (Locale::Zh, None) => "已编辑".into(),
        (Locale::Zh, Some(n)) => format!("编辑 {n}"),
    }
}

/// Who decided a request resolved under a quorum: everyone whose vote counted (voted
/// the decisions that were sent), in vote order. `None` without a quorum, or when no
/// vote matches (a vote that stopped a multi-action request: its voter alone decided,
/// as the status says).
pub fn counted_voters(interaction: &Interaction) -> Option<Vec<String>> {
    interaction.quorum_progress()?;
    let (Draft::Decisions(draft), Some(Reply::Decisions { decisions, .. })) = (&interaction.draft, &interaction.reply) else { return None };
    let names: Vec<String> = draft.votes.iter().filter(|v| &v.decisions == decisions).map(|v| v.voter.name.clone()).collect();
    (!names.is_empty()).then_some(names)
}

/// The outcome when the policy, not a person's click, settled the request: approved by
/// a remembered rule, or ended by the fallback. `None` otherwise.
pub fn settlement(locale: Locale, interaction: &Interaction) -> Option<String> {
    use Locale::*;
    if interaction.status.is_pending() {
        return None;
    }
    Some(match interaction.settled_by_policy.as_ref()? {
        PolicySettlement::Rule { scope, set_by, set_at_ms, .. } => {
            let (who, at, scope) = (&set_by.name, clock(*set_at_ms), scope_words(locale, *scope));
            match locale {
                En => format!("✅ Approved by rule set by {who} at {at} ({scope})"),
                Vi => format!("✅ Được duyệt theo quy tắc do {who} đặt lúc {at} ({scope})"),
                Zh => format!("✅ 已按 {who} 于 {at} 设置的规则批准（{scope}）"),
            }
        }
        PolicySettlement::Fallback { decision, after_secs } => {
            let within = duration(locale, *after_secs);
            match (decision, locale) {
                (FallbackDecision::Approve, En) => format!("✅ Approved by policy: no decision within {within}"),
                (FallbackDecision::Approve, Vi) => format!("✅ Được duyệt theo chính sách: không có quyết định trong {within}"),
                (FallbackDecision::Approve, Zh) => format!("✅ 按策略批准：{within}内无人决定"),
                (FallbackDecision::Reject, En) => format!("❌ Rejected by policy: no decision within {within}"),
                (FallbackDecision::Reject, Vi) => format!("❌ Bị từ chối theo chính sách: không có quyết định trong {within}"),
                (FallbackDecision::Reject, Zh) => format!("❌ 按策略拒绝：{within}内无人决定"),
                (FallbackDecision::Leave, En) => format!("⌛ Ended by policy: no decision within {within}"),
                (FallbackDecision::Leave, Vi) => format!("⌛ Kết thúc theo chính sách: không có quyết định trong {within}"),
                (FallbackDecision::Leave, Zh) => format!("⌛ 按策略结束：{within}内无人决定"),
            }
        }
    })
}

/// How a person's approval was remembered, for the outcome: " (for this session)".
/// Empty when it was not, or when the backend remembers it itself (its own decision,
/// "Approve for session", already says so).
pub fn remembered_suffix(locale: Locale, interaction: &Interaction) -> String {
    match (&interaction.status, interaction.remembered) {
        (Status::Resolved { .. }, Some(choice)) if !choice.native => {
            let words = scope_words(locale, choice.scope);
            if locale == Locale::Zh { format!("（{words}）") } else { format!(" ({words})") }
        }
        _ => String::new(),
    }
}

/// What a reminder is about: the action names of an approval, or the first question.
pub fn subject(interaction: &Interaction) -> String {
    match &interaction.request.kind {
        RequestKind::Approval { actions } => actions.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join(", "),
        RequestKind::Questions { questions, .. } => questions.first().map(|q| q.text.clone()).unwrap_or_default(),
    }
}

/// Whom a reminder addresses, already formatted for the platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Addressed<'a> {
    /// Mentions (or names), e.g. `<@1> <@&2>`.
    To(&'a str),
    /// The approvers of a role the platform cannot mention (Telegram has no roles).
    Role(&'a str),
    /// Nobody in particular (no approver is known).
    Nobody,
}

/// An escalation reminder: "⏰ Reminder: @A @B — run_migration still waits for a
/// decision (2 of 3 approvals so far) · deadline 14:35". `subject`, `progress` (the
/// [`approvals_count`]) and `deadline` are inserted as given.
pub fn reminder(locale: Locale, to: Addressed<'_>, subject: &str, progress: Option<&str>, deadline: &str) -> String {
    use Locale::*;
    let lead = match (to, locale) {
        (Addressed::To(who), En) => format!("⏰ Reminder: {who} — "),
        (Addressed::To(who), Vi) => format!("⏰ Nhắc nhở: {who} — "),
        (Addressed::To(who), Zh) => format!("⏰ 提醒：{who} — "),
        (Addressed::Role(role), En) => format!("⏰ Reminder for the approvers of role {role}: "),
        (Addressed::Role(role), Vi) => format!("⏰ Nhắc những người duyệt thuộc vai trò {role}: "),
        (Addressed::Role(role), Zh) => format!("⏰ 提醒角色 {role} 的审批人："),
        (Addressed::Nobody, En) => "⏰ Reminder: ".into(),
        (Addressed::Nobody, Vi) => "⏰ Nhắc nhở: ".into(),
        (Addressed::Nobody, Zh) => "⏰ 提醒：".into(),
    };
    let progress = match (progress, locale) {
        (None, _) => String::new(),
        (Some(p), En) => format!(" ({p} so far)"),
        (Some(p), Vi) => format!(" (đến giờ {p})"),
        (Some(p), Zh) => format!("（目前{p}）"),
    };
    match locale {
        En => format!("{lead}{subject} still waits for a decision{progress} · deadline {deadline}"),
        Vi => format!("{lead}{subject} vẫn đang chờ quyết định{progress} · hạn {deadline}"),
        Zh => format!("{lead}{subject} 仍在等待决定{progress} · 截止 {deadline}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::Actor;
    use crate::protocol::{Decision, EditedAction};

    fn tally(decisions: Vec<Decision>, names: &[&str]) -> Tally {
        Tally { decisions, voters: names.iter().map(|n| Actor::new("telegram", n, n)).collect() }
    }

    fn edit(n: i64) -> Decision {
        let mut args = serde_json::Map::new();
        args.insert("n".into(), n.into());
        Decision::Edit { edited_action: EditedAction { name: "t".into(), args } }
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(Locale::En, 1800), "30 min");
        assert_eq!(duration(Locale::En, 5400), "1 h 30 min");
        assert_eq!(duration(Locale::En, 90), "1 min 30 s");
        assert_eq!(duration(Locale::Vi, 86_400), "1 ngày");
        assert_eq!(duration(Locale::Zh, 1800), "30 分钟");
        assert_eq!(duration(Locale::En, 0), "0 s");
    }

    #[test]
    fn quorum_lines() {
        let p = QuorumProgress { needed: 3, tallies: vec![tally(vec![Decision::Approve], &["Lan", "Minh"])] };
        assert_eq!(quorum_line(Locale::En, &p), "2 of 3 approvals: Lan ✔, Minh ✔");
        assert_eq!(quorum_line(Locale::Vi, &p), "2/3 lượt duyệt: Lan ✔, Minh ✔");
        assert_eq!(quorum_line(Locale::Zh, &p), "已批准 2/3：Lan ✔, Minh ✔");
        let mixed = QuorumProgress { needed: 2, tallies: vec![tally(vec![Decision::Approve], &["Lan"]), tally(vec![edit(1)], &["Minh"])] };
        assert_eq!(quorum_line(Locale::En, &mixed), "1 of 2 approvals: Lan ✔ · Minh ✏️ (edited)");
        let two_edits = QuorumProgress { needed: 3, tallies: vec![tally(vec![edit(1)], &["Lan"]), tally(vec![edit(2)], &["Minh", "Hoa"])] };
        assert_eq!(quorum_line(Locale::En, &two_edits), "2 of 3 approvals: Lan ✏️ (edit 1) · Minh ✏️, Hoa ✏️ (edit 2)");
        assert_eq!(quorum_line(Locale::En, &QuorumProgress { needed: 2, tallies: vec![] }), "0 of 2 approvals");
    }

    #[test]
    fn reminders() {
        assert_eq!(
            reminder(Locale::En, Addressed::To("@A @B"), "run_migration", Some("2 of 3 approvals"), "14:35 UTC"),
            "⏰ Reminder: @A @B — run_migration still waits for a decision (2 of 3 approvals so far) · deadline 14:35 UTC"
        );
        assert_eq!(
            reminder(Locale::En, Addressed::Role("900"), "run_migration", None, "14:35 UTC"),
            "⏰ Reminder for the approvers of role 900: run_migration still waits for a decision · deadline 14:35 UTC"
        );
        assert_eq!(reminder(Locale::Zh, Addressed::Nobody, "t", Some("已批准 1/2"), "x"), "⏰ 提醒：t 仍在等待决定（目前已批准 1/2） · 截止 x");
        assert_eq!(reminder(Locale::Vi, Addressed::To("@A"), "t", None, "x"), "⏰ Nhắc nhở: @A — t vẫn đang chờ quyết định · hạn x");
    }
}
