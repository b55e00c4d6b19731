//! `/rules` as people read it, in English, Vietnamese and Chinese: the listing of the
//! remembered approvals that apply in a chat, the confirmation of a revoke, and why a
//! revoke changed nothing. Shared by every platform; pure.

use super::cut;
use super::{Locale, clock};
use crate::interaction::{RememberScope, RememberedRule};

/// A chat lists at most this many rules (newest last); the CLI lists all of them.
/// Ten lines stay well inside Discord's 2000 characters and Telegram's 4096.
const MAX_LISTED: usize = 10;

/// Args longer than this (as compact JSON) are cut in a chat listing.
const MAX_ARGS_CHARS: usize = 60;

/// `/rules revoke ID` when no active rule has that id.
pub fn unknown_rule(locale: Locale, id: &str) -> String {
    match locale {
        Locale::En => format!("No active rule has id {id}. /rules lists them."),
        Locale::Vi => format!("Không có quy tắc nào đang hiệu lực với mã {id}. Gõ /rules để xem danh sách."),
        Locale::Zh => format!("没有编号为 {id} 的有效规则。/rules 可查看列表。"),
    }
}

/// `/rules revoke ID` by someone who is neither an approver nor the rule's author.
pub fn revoke_not_allowed(locale: Locale) -> &'static str {
    match locale {
        Locale::En => "Only an approver or the person who set a rule may revoke it.",
        Locale::Vi => "Chỉ người duyệt hoặc người đặt quy tắc mới được thu hồi nó.",
        Locale::Zh => "只有审批人或设置该规则的人可以撤销它。",
    }
}

/// `/rules revoke` without an id.
pub fn revoke_usage(locale: Locale) -> &'static str {
    match locale {
        Locale::En => "Usage: /rules revoke ID (the ids are in /rules).",
        Locale::Vi => "Cách dùng: /rules revoke MÃ (mã có trong /rules).",
        Locale::Zh => "用法：/rules revoke 编号（编号见 /rules）。",
    }
}

/// The confirmation after a revoke.
pub fn revoked(locale: Locale, rule: &RememberedRule) -> String {
    match locale {
        Locale::En => format!("Rule {} revoked: {} will be asked again.", rule.id, rule.tool),
        Locale::Vi => format!("Đã thu hồi quy tắc {}: {} sẽ lại được hỏi duyệt.", rule.id, rule.tool),
        Locale::Zh => format!("已撤销规则 {}：{} 将重新请求审批。", rule.id, rule.tool),
    }
}

/// The `/rules` listing: one line per rule with its id (what `/rules revoke` takes),
/// tool, args, scope, who set it and when; or a line saying there are none.
pub fn listing(locale: Locale, rules: &[RememberedRule]) -> String {
    if rules.is_empty() {
        return match locale {
            Locale::En => "No remembered approvals apply here.",
            Locale::Vi => "Không có phê duyệt đã ghi nhớ nào áp dụng ở đây.",
            Locale::Zh => "此处没有适用的已记住的批准。",
        }
        .to_owned();
    }
    let title = match locale {
        Locale::En => "Approved without asking here:",
        Locale::Vi => "Được duyệt tự động ở đây:",
        Locale::Zh => "此处无需询问即批准：",
    };
    let mut lines = vec![title.to_owned()];
    for rule in rules.iter().take(MAX_LISTED) {
        lines.push(rule_line(locale, rule));
    }
    if rules.len() > MAX_LISTED {
        let more = rules.len() - MAX_LISTED;
        lines.push(match locale {
            Locale::En => format!("…and {more} more (hitl-bridge rules lists them all)."),
            Locale::Vi => format!("…và {more} quy tắc khác (hitl-bridge rules liệt kê tất cả)."),
            Locale::Zh => format!("……还有 {more} 条（hitl-bridge rules 可列出全部）。"),
        });
    }
    lines.push(
        match locale {
            Locale::En => "Revoke one with /rules revoke ID.",
            Locale::Vi => "Thu hồi bằng /rules revoke MÃ.",
            Locale::Zh => "用 /rules revoke 编号 撤销。",
        }
        .to_owned(),
    );
    lines.join("\n")
}

/// `• a1b2c3d4e5f6 · execute_trade {"symbol":"VNM"} · this session · Thảo, 08:30 UTC`.
fn rule_line(locale: Locale, rule: &RememberedRule) -> String {
    let args = match &rule.args {
        Some(args) => cut(&args.to_string(), MAX_ARGS_CHARS),
        None => match locale {
            Locale::En => "(any args)",
            Locale::Vi => "(mọi tham số)",
            Locale::Zh => "（任意参数）",
        }
        .to_owned(),
    };
    let scope = match (rule.scope, locale) {
        (RememberScope::Session, Locale::En) => "this session",
        (RememberScope::Session, Locale::Vi) => "phiên này",
        (RememberScope::Session, Locale::Zh) => "本会话",
        (RememberScope::Always, Locale::En) => "always",
        (RememberScope::Always, Locale::Vi) => "luôn luôn",
        (RememberScope::Always, Locale::Zh) => "始终",
    };
    format!("• {} · {} {args} · {scope} · {}, {}", rule.id, rule.tool, rule.set_by.name, clock(rule.set_at_ms))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::interaction::Actor;

    /// 2025-06-01T08:30:00Z.
    const T0: i64 = 1_748_766_600_000;

    fn thao() -> Actor {
        Actor::new("telegram", "1", "Thảo")
    }

    fn lan() -> Actor {
        Actor::new("telegram", "2", "Lan")
    }

    fn rule(id: &str, scope: RememberScope, session: Option<&str>, backend: &str, set_by: Actor, at: i64) -> RememberedRule {
        RememberedRule {
            id: id.into(),
            scope,
            tool: "execute_trade".into(),
            args: Some(json!({"symbol": "VNM"})),
            session_id: session.map(str::to_owned),
            backend: backend.into(),
            set_by,
            set_at_ms: at,
            policy: "trades".into(),
        }
    }

    #[test]
    fn the_listing_and_the_notices_read_well() {
        let rules = [
            rule("a1b2c3d4e5f6", RememberScope::Session, Some("s0"), "stream", thao(), T0),
            RememberedRule { args: None, tool: "read_file".into(), ..rule("0f9e8d7c6b5a", RememberScope::Always, None, "stream", lan(), T0 + 90_000) },
        ];
        assert_eq!(
            listing(Locale::En, &rules),
            "Approved without asking here:\n\
             • a1b2c3d4e5f6 · execute_trade {\"symbol\":\"VNM\"} · this session · Thảo, 08:30 UTC\n\
             • 0f9e8d7c6b5a · read_file (any args) · always · Lan, 08:31 UTC\n\
             Revoke one with /rules revoke ID."
        );
        assert_eq!(listing(Locale::Vi, &[]), "Không có phê duyệt đã ghi nhớ nào áp dụng ở đây.");
        let many: Vec<RememberedRule> = (0..12).map(|n| rule(&format!("r{n}"), RememberScope::Always, None, "stream", lan(), T0)).collect();
        let listed = listing(Locale::En, &many);
        assert_eq!(listed.lines().count(), 1 + MAX_LISTED + 2);
        assert!(listed.contains("…and 2 more (hitl-bridge rules lists them all)."), "{listed}");
        assert_eq!(revoked(Locale::En, &rules[0]), "Rule a1b2c3d4e5f6 revoked: execute_trade will be asked again.");
        assert_eq!(revoke_not_allowed(Locale::En), "Only an approver or the person who set a rule may revoke it.");
        assert_eq!(unknown_rule(Locale::En, "x"), "No active rule has id x. /rules lists them.");
        assert_eq!(cut(&"x".repeat(61), MAX_ARGS_CHARS).chars().count(), MAX_ARGS_CHARS);
    }
}
