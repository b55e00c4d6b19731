//! The chat commands the bridge offers, once for every platform: Telegram registers
//! them with `setMyCommands` at start, Discord as slash commands at READY, each with
//! its description in every language the bridge speaks. What a command means is the
//! core's ([`crate::interaction::command`]), running it the engine's
//! ([`crate::engine::CommandOutcome`]); [`reply`] words the outcome for every platform.

use super::refusals::Refused;
use crate::engine::{CommandOutcome, PendingShown};
use crate::interaction::{Actor, RequestKind};
use crate::platform::descriptor::WebLinks;
use crate::platform::locale::web::{WebMsg, web_text};
use crate::platform::locale::{self, Locale, Msg};

/// One chat command: its name (without the slash) and what it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChatCommand {
    pub name: &'static str,
    pub argument: Option<Argument>,
}

/// The text a command takes after its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Argument {
    /// The option's name where a platform names it (Discord).
    pub name: &'static str,
    pub required: bool,
}

/// Every command, in the order menus show them.
pub const COMMANDS: &[ChatCommand] = &[
    ChatCommand { name: "new", argument: None },
    ChatCommand { name: "cancel", argument: None },
    ChatCommand { name: "pending", argument: None },
    ChatCommand { name: "rules", argument: Some(Argument { name: "revoke", required: false }) },
    ChatCommand { name: "id", argument: None },
    ChatCommand { name: "pair", argument: Some(Argument { name: "code", required: true }) },
    ChatCommand { name: "web", argument: None },
];

impl ChatCommand {
    /// What the command does, as a menu shows it (Telegram: at most 256 characters;
    /// Discord: at most 100).
    pub fn description(&self, locale: Locale) -> &'static str {
        use Locale::*;
        match (self.name, locale) {
            ("new", En) => "Start a new agent session in this chat",
            ("new", Vi) => "Bắt đầu phiên mới với tác tử trong cuộc trò chuyện này",
            ("new", Zh) => "在此聊天中开始新的智能体会话",
            ("cancel", En) => "Cancel the agent's current turn and its pending requests",
            ("cancel", Vi) => "Hủy lượt hiện tại của tác tử và các yêu cầu đang chờ",
            ("cancel", Zh) => "取消智能体当前的回合及其待处理请求",
            ("pending", En) => "List the requests waiting for a decision here",
            ("pending", Vi) => "Liệt kê các yêu cầu đang chờ quyết định ở đây",
            ("pending", Zh) => "列出此处等待决定的请求",
            ("rules", En) => "List what is approved here without asking, or revoke one rule",
            ("rules", Vi) => "Liệt kê những gì được duyệt tự động ở đây, hoặc thu hồi một quy tắc",
            ("rules", Zh) => "列出此处无需询问即批准的规则，或撤销其中一条",
            ("id", En) => "Show your id and this chat's, as the bridge's config writes them",
            ("id", Vi) => "Hiện mã của bạn và của cuộc trò chuyện này, theo cách cấu hình ghi",
            ("id", Zh) => "显示你和此聊天的编号（配置中的写法）",
            ("pair", En) => "Approve a pairing code (admin chats only)",
            ("pair", Vi) => "Duyệt một mã ghép nối (chỉ trong kênh quản trị)",
            ("pair", Zh) => "批准配对码（仅限管理频道）",
            ("web", En) => "Get a one-time sign-in link to the web inbox (direct messages)",
            ("web", Vi) => "Nhận liên kết đăng nhập một lần vào hộp chờ duyệt trên web (tin nhắn riêng)",
            ("web", Zh) => "获取网页待办的一次性登录链接（仅限私聊）",
            (_, _) => "",
        }
    }

    /// What the argument is, for platforms that describe it (Discord's options).
    pub fn argument_description(&self, locale: Locale) -> &'static str {
        use Locale::*;
        match (self.name, locale) {
            ("rules", En) => "The id of the rule to revoke (from /rules)",
            ("rules", Vi) => "Mã của quy tắc cần thu hồi (xem /rules)",
            ("rules", Zh) => "要撤销的规则编号（见 /rules）",
            ("pair", En) => "The code the person was given",
            ("pair", Vi) => "Mã mà người đó nhận được",
            ("pair", Zh) => "对方收到的配对码",
            (_, _) => "",
        }
    }
}

/// The reply to a command's outcome, for the outcomes every platform words the same;
/// `failed` is the platform's own "something went wrong". `None` for what a platform
/// shows its own way: the pending list, and the `/id`, `/pair` and `/web` it answers
/// itself.
/// The answer to `/web`, the same on every platform: a one-time sign-in link to the web
/// inbox, in a direct chat only (the link signs in whoever opens it first). `None` when
/// no link could be made (logged): the platform says its own "try again".
pub async fn web_reply(web: &dyn WebLinks, actor: &Actor, direct: bool, locale: Locale) -> Option<String> {
    if !direct {
        return Some(web_text(locale, WebMsg::DirectOnly).to_owned());
    }
    match web.sign_in_link(actor).await {
        Ok(Some(link)) => Some(locale::web::sign_in_reply(locale, &link)),
        Ok(None) => Some(web_text(locale, WebMsg::InboxOff).to_owned()),
        Err(e) => {
            tracing::error!(error = %e, "cannot make a sign-in link");
            None
        }
    }
}

pub fn reply(locale: Locale, outcome: &CommandOutcome, failed: &str) -> Option<String> {
    Some(match outcome {
        CommandOutcome::SessionStarted { .. } => locale::text(locale, Msg::NewSession).to_owned(),
        CommandOutcome::Cancelled => locale::text(locale, Msg::Cancelled).to_owned(),
        CommandOutcome::NoSession => locale::text(locale, Msg::NoSession).to_owned(),
        CommandOutcome::Rules(rules) => locale::rules::listing(locale, rules),
        CommandOutcome::Revoked(rule) => locale::rules::revoked(locale, rule),
        CommandOutcome::RevokeRefused(refusal) => refusal.notice(locale).unwrap_or_else(|| failed.to_owned()),
        CommandOutcome::RulesUsage => locale::rules::revoke_usage(locale).to_owned(),
        CommandOutcome::Failed(e) => {
            tracing::error!(error = %e, "a chat command failed");
            failed.to_owned()
        }
        CommandOutcome::Pending(_) | CommandOutcome::ForThePlatform => return None,
    })
}

/// Every command, one line each (`{bullet} {prefix} pair CODE: what it does`): the
/// answer to a command a platform does not know.
pub fn usage(locale: Locale, bullet: &str, prefix: &str) -> String {
    let lines: Vec<String> = COMMANDS
        .iter()
        .map(|c| {
            let argument = match c.name {
                "pair" => " CODE",
                "rules" => " [revoke ID]",
                _ => "",
            };
            format!("{bullet} {prefix} {}{argument}: {}", c.name, c.description(locale))
        })
        .collect();
    lines.join("\n")
}

/// Requests `pending` lists at most.
pub const MAX_PENDING_LISTED: usize = 10;

/// `pending` as plain text: one line per request waiting here, with its deadline (a
/// platform escapes it as its markup needs).
pub fn pending_list(locale: Locale, waiting: &PendingShown) -> String {
    if waiting.is_empty() {
        return locale::text(locale, Msg::NoPending).to_owned();
    }
    let lines: Vec<String> = waiting
        .iter()
        .take(MAX_PENDING_LISTED)
        .map(|(interaction, _)| {
            let what = match &interaction.request.kind {
                RequestKind::Approval { actions } => actions.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join(", "),
                RequestKind::Questions { questions, .. } => questions.first().map(|q| q.text.clone()).unwrap_or_default(),
            };
            format!("⏳ {}: {} · ⏰ {}", locale::text(locale, Msg::Pending), crate::texts::cut(&what, 200), locale::clock(interaction.deadline_ms))
        })
        .collect();
    lines.join("\n")
}

/// The languages a menu is registered in, with each platform's code for them.
pub const LANGUAGES: &[(Locale, &str, &str)] = &[(Locale::En, "en", "en-US"), (Locale::Vi, "vi", "vi"), (Locale::Zh, "zh", "zh-CN")];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_is_described_in_every_language_within_discords_limit() {
        for command in COMMANDS {
            for (locale, _, _) in LANGUAGES {
                let description = command.description(*locale);
                assert!(!description.is_empty() && description.chars().count() <= 100, "/{} in {locale:?}: {description:?}", command.name);
                if command.argument.is_some() {
                    assert!(!command.argument_description(*locale).is_empty(), "/{} argument in {locale:?}", command.name);
                }
            }
            // Telegram: 1-32 characters, lowercase letters, digits and underscores.
            assert!(command.name.len() <= 32 && command.name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'));
        }
    }
}
