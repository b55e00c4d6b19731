//! Every string the bridge writes itself (buttons, notices, outcomes), in English,
//! Vietnamese and Chinese. Agent text and question text are never translated.
//! Texts about decision policies (quorum, remembered approvals, fallbacks,
//! reminders) are in [`policy`].

pub mod entities;
pub mod policy;
pub mod rules;
pub mod web;

/// `text` whole when it has at most `max` characters, else its first `max - 1` and
/// `…` (counted in `max`; nothing at all when `max` is 0). The one truncator of
/// plain text: every platform's limits and every listing cut through it (cut before
/// escaping, so an entity or tag is never split).
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    if max == 0 {
        return String::new();
    }
    let mut out: String = text.chars().take(max - 1).collect();
    out.push('…');
    out
}

use crate::interaction::updates::Notice;
use crate::interaction::{Decider, Delivery, Interaction, Refusal, Status};
use crate::protocol::{Decision, Reply};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Locale {
    #[default]
    En,
    Vi,
    Zh,
}

impl Locale {
    /// From a configured value or a platform's language code (`vi`, `zh-hans`, `en-US`…).
    pub fn from_code(code: &str) -> Option<Locale> {
        let lang = code.split(['-', '_']).next()?.to_ascii_lowercase();
        match lang.as_str() {
            "en" => Some(Locale::En),
            "vi" => Some(Locale::Vi),
            "zh" => Some(Locale::Zh),
            _ => None,
        }
    }

    /// The code stored and configured for this locale.
    pub fn code(self) -> &'static str {
        match self {
            Locale::En => "en",
            Locale::Vi => "vi",
            Locale::Zh => "zh",
        }
    }

    /// The first of `candidates` that names a known locale, else English.
    pub fn pick<'a>(candidates: impl IntoIterator<Item = Option<&'a str>>) -> Locale {
        candidates.into_iter().flatten().find_map(Locale::from_code).unwrap_or_default()
    }
}

/// A fixed string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Msg {
    Approve,
    /// Kimi CLI's "approve for this session".
    ApproveForSession,
    Reject,
    Edit,
    Respond,
    ApproveAll,
    RejectAll,
    Submit,
    Skip,
    Other,
    Done,
    Change,
    Arguments,
    Deadline,
    Summary,
    Skipped,
    NotAnswered,
    EditPrompt,
    RespondPrompt,
    TextPrompt,
    Saved,
    Sent,
    /// The toast for a final click: stored durably; delivery follows.
    DecisionSaved,
    UnknownButton,
    /// A click or message the store could not keep (a full disk, a lost database):
    /// nothing changed, and trying again once the store recovers works.
    StoreFailing,
    /// An update the store could not keep yet, which the platform delivers again:
    /// it is handled once the store recovers, so nobody needs to send it again.
    StoreDelayed,
    ArgsAttached,
    NewSession,
    NoSession,
    Cancelled,
    Pending,
    NoPending,
    ChooseOptions,
    /// The approve button when "remember" choices sit beside it.
    ApproveOnce,
    /// "Approve for this session", remembered by the bridge (policy `remember`).
    RememberSession,
    /// "Always approve" (policy `remember`).
    RememberAlways,
    /// Heading of a quorum's progress (Discord field name).
    Approvals,
}

pub fn text(locale: Locale, msg: Msg) -> &'static str {
    use Locale::*;
    use Msg::*;
    match (msg, locale) {
        (Approve, En) => "Approve",
        (Approve, Vi) => "Duyệt",
        (Approve, Zh) => "批准",
        (ApproveForSession, En) => "Approve for session",
        (ApproveForSession, Vi) => "Duyệt cả phiên",
        (ApproveForSession, Zh) => "本会话内批准",
        (Reject, En) => "Reject",
        (Reject, Vi) => "Từ chối",
        (Reject, Zh) => "拒绝",
        (Edit, En) => "Edit",
        (Edit, Vi) => "Sửa",
        (Edit, Zh) => "编辑",
        (Respond, En) => "Comment",
        (Respond, Vi) => "Bình luận",
        (Respond, Zh) => "评论",
        (ApproveAll, En) => "Approve all",
        (ApproveAll, Vi) => "Duyệt tất cả",
        (ApproveAll, Zh) => "全部批准",
        (RejectAll, En) => "Reject all",
        (RejectAll, Vi) => "Từ chối tất cả",
        (RejectAll, Zh) => "全部拒绝",
        (Submit, En) => "Submit",
        (Submit, Vi) => "Gửi",
        (Submit, Zh) => "提交",
        (Skip, En) => "Skip",
        (Skip, Vi) => "Bỏ qua",
        (Skip, Zh) => "跳过",
        (Other, En) => "Other",
        (Other, Vi) => "Khác",
        (Other, Zh) => "其他",
        (Done, En) => "Done",
        (Done, Vi) => "Xong",
        (Done, Zh) => "完成",
        (Change, En) => "Change",
        (Change, Vi) => "Thay đổi",
        (Change, Zh) => "修改",
        (Arguments, En) => "Arguments",
        (Arguments, Vi) => "Tham số",
        (Arguments, Zh) => "参数",
        (Deadline, En) => "Answer by",
        (Deadline, Vi) => "Hạn trả lời",
        (Deadline, Zh) => "截止时间",
        (Summary, En) => "Your answers",
        (Summary, Vi) => "Câu trả lời của bạn",
        (Summary, Zh) => "你的回答",
        (Skipped, En) => "[No preference]",
        (Skipped, Vi) => "[Không chọn]",
        (Skipped, Zh) => "[无偏好]",
        (NotAnswered, En) => "not answered yet",
        (NotAnswered, Vi) => "chưa trả lời",
        (NotAnswered, Zh) => "尚未回答",
        (EditPrompt, En) => "Reply with the new arguments as a JSON object.",
        (EditPrompt, Vi) => "Trả lời bằng tham số mới dạng đối tượng JSON.",
        (EditPrompt, Zh) => "请用 JSON 对象回复新的参数。",
        (RespondPrompt, En) => "Reply with your comment.",
        (RespondPrompt, Vi) => "Trả lời bằng bình luận của bạn.",
        (RespondPrompt, Zh) => "请回复你的评论。",
        (TextPrompt, En) => "Reply with your answer.",
        (TextPrompt, Vi) => "Trả lời bằng câu trả lời của bạn.",
        (TextPrompt, Zh) => "请回复你的答案。",
        (Saved, En) => "Saved",
        (Saved, Vi) => "Đã lưu",
        (Saved, Zh) => "已保存",
        (DecisionSaved, En) => "Decision saved",
        (DecisionSaved, Vi) => "Đã lưu quyết định",
        (DecisionSaved, Zh) => "决定已保存",
        (Sent, En) => "Sent",
        (Sent, Vi) => "Đã gửi",
        (Sent, Zh) => "已发送",
        (UnknownButton, En) => "This button is not valid (unknown, outdated or forged).",
        (UnknownButton, Vi) => "Nút này không hợp lệ (không rõ, đã cũ hoặc giả mạo).",
        (UnknownButton, Zh) => "此按钮无效（未知、过期或伪造）。",
        (StoreFailing, En) => "Not saved: the bridge's storage is failing. Try again in a moment.",
        (StoreFailing, Vi) => "Chưa lưu được: bộ lưu trữ của cầu nối đang gặp lỗi. Hãy thử lại sau giây lát.",
        (StoreFailing, Zh) => "未能保存：桥接服务的存储出现故障。请稍后重试。",
        (StoreDelayed, En) => "Not saved yet: the bridge's storage is failing. It is handled as soon as the storage is back; no need to send it again.",
        (StoreDelayed, Vi) => "Chưa lưu được: bộ lưu trữ của cầu nối đang gặp lỗi. Nó sẽ được xử lý ngay khi bộ lưu trữ hoạt động lại; không cần gửi lại.",
        (StoreDelayed, Zh) => "尚未保存：桥接服务的存储出现故障。存储恢复后会立即处理，无需重新发送。",
        (ArgsAttached, En) => "The arguments were too long to show; the full JSON is attached.",
        (ArgsAttached, Vi) => "Tham số quá dài để hiển thị; JSON đầy đủ được đính kèm.",
        (ArgsAttached, Zh) => "参数过长无法显示；完整 JSON 已作为附件发送。",
        (NewSession, En) => "Started a new session.",
        (NewSession, Vi) => "Đã bắt đầu phiên mới.",
        (NewSession, Zh) => "已开始新会话。",
        (NoSession, En) => "There is no session in this chat yet.",
        (NoSession, Vi) => "Cuộc trò chuyện này chưa có phiên nào.",
        (NoSession, Zh) => "此聊天还没有会话。",
        (Cancelled, En) => "Cancelled.",
        (Cancelled, Vi) => "Đã hủy.",
        (Cancelled, Zh) => "已取消。",
        (Pending, En) => "Waiting for a decision",
        (Pending, Vi) => "Đang chờ quyết định",
        (Pending, Zh) => "等待决定",
        (NoPending, En) => "Nothing is waiting for a decision here.",
        (NoPending, Vi) => "Không có gì đang chờ quyết định ở đây.",
        (NoPending, Zh) => "这里没有等待决定的请求。",
        (ChooseOptions, En) => "Choose…",
        (ChooseOptions, Vi) => "Chọn…",
        (ChooseOptions, Zh) => "请选择…",
        (ApproveOnce, En) => "Approve once",
        (ApproveOnce, Vi) => "Duyệt một lần",
        (ApproveOnce, Zh) => "仅批准本次",
        (RememberSession, En) => "Approve for this session",
        (RememberSession, Vi) => "Duyệt cho phiên này",
        (RememberSession, Zh) => "本会话内始终批准",
        (RememberAlways, En) => "Always approve",
        (RememberAlways, Vi) => "Luôn duyệt",
        (RememberAlways, Zh) => "始终批准",
        (Approvals, En) => "Approvals",
        (Approvals, Vi) => "Lượt duyệt",
        (Approvals, Zh) => "审批进度",
    }
}

/// `HH:MM UTC` for a unix-ms time (platforms with native timestamps use those).
pub fn clock(ms: i64) -> String {
    let secs = ms.div_euclid(1000).rem_euclid(86_400);
    format!("{:02}:{:02} UTC", secs / 3600, secs / 60 % 60)
}

/// A refusal as a short notice (fits Telegram's 200-char callback answer).
pub fn refusal(locale: Locale, refusal: &Refusal) -> String {
    use Locale::*;
    match (refusal, locale) {
        (Refusal::NotAllowed, En) => "You are not allowed to answer this request.".into(),
        (Refusal::NotAllowed, Vi) => "Bạn không được phép trả lời yêu cầu này.".into(),
        (Refusal::NotAllowed, Zh) => "你无权回答此请求。".into(),
        (Refusal::SelfApproval, En) => "You started this turn: another approver must decide its tool calls (four eyes).".into(),
        (Refusal::SelfApproval, Vi) => "Bạn đã khởi tạo lượt này: một người duyệt khác phải quyết định các lệnh công cụ của nó (bốn mắt).".into(),
        (Refusal::SelfApproval, Zh) => "此轮由你发起：须由另一位审批人决定其工具调用（四眼原则）。".into(),
        (Refusal::AlreadyDecided { by, at_ms }, En) => format!("Already decided by {by} at {}.", clock(*at_ms)),
        (Refusal::AlreadyDecided { by, at_ms }, Vi) => format!("Đã được {by} quyết định lúc {}.", clock(*at_ms)),
        (Refusal::AlreadyDecided { by, at_ms }, Zh) => format!("已由 {by} 于 {} 决定。", clock(*at_ms)),
        (Refusal::Expired, En) => "This request has expired.".into(),
        (Refusal::Expired, Vi) => "Yêu cầu này đã hết hạn.".into(),
        (Refusal::Expired, Zh) => "此请求已过期。".into(),
        (Refusal::Cancelled, En) => "This request was cancelled.".into(),
        (Refusal::Cancelled, Vi) => "Yêu cầu này đã bị hủy.".into(),
        (Refusal::Cancelled, Zh) => "此请求已取消。".into(),
        (Refusal::InvalidEdit(e), En) => format!("Not accepted: {e}. Send a JSON object."),
        (Refusal::InvalidEdit(e), Vi) => format!("Không hợp lệ: {e}. Hãy gửi một đối tượng JSON."),
        (Refusal::InvalidEdit(e), Zh) => format!("无效：{e}。请发送一个 JSON 对象。"),
        (Refusal::Incomplete { missing }, En) => format!("Decide every action first (missing: {}).", numbers(missing)),
        (Refusal::Incomplete { missing }, Vi) => format!("Hãy quyết định mọi thao tác trước (còn thiếu: {}).", numbers(missing)),
        (Refusal::Incomplete { missing }, Zh) => format!("请先对每个操作做出决定（缺少：{}）。", numbers(missing)),
        (Refusal::AlreadyVoted { at_ms }, En) => format!("You already voted at {}; each person votes once.", clock(*at_ms)),
        (Refusal::AlreadyVoted { at_ms }, Vi) => format!("Bạn đã bỏ phiếu lúc {}; mỗi người chỉ bỏ phiếu một lần.", clock(*at_ms)),
        (Refusal::AlreadyVoted { at_ms }, Zh) => format!("你已于 {} 投票；每人只能投一次。", clock(*at_ms)),
        (Refusal::RememberNotOffered { scope }, En) => format!("“{}” is not offered for this request.", policy::remember_button(locale, *scope)),
        (Refusal::RememberNotOffered { scope }, Vi) => format!("Yêu cầu này không có lựa chọn “{}”.", policy::remember_button(locale, *scope)),
        (Refusal::RememberNotOffered { scope }, Zh) => format!("此请求不提供“{}”。", policy::remember_button(locale, *scope)),
        // The rest come from a bug or a forged input; English detail is enough.
        (other, _) => other.to_string(),
    }
}

/// What the bridge says about who may talk to the agent, and about pairing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccessMsg<'a> {
    /// A stranger, pairing off.
    /// A stranger, pairing off: their id (`platform:user_id`), so an admin can add it.
    NotAllowed {
        id: &'a str,
    },
    /// A stranger, pairing on: their code and until when it is valid.
    PairingCode {
        code: &'a str,
        expires_at_ms: i64,
    },
    /// To the newly paired user.
    YouArePaired,
    /// To the admin who paired someone: their name and `platform:user_id`.
    Paired {
        name: &'a str,
        who: &'a str,
    },
    /// `/pair` from someone not in `access.admins`.
    PairNotAdmin,
    /// `/pair` from an admin outside the admin chats and their direct chat.
    PairNotAdminChat,
    /// `/pair` with the sender's own code.
    PairOwnCode {
        code: &'a str,
    },
    PairUsage,
    PairUnknown {
        code: &'a str,
    },
    PairExpired {
        code: &'a str,
    },
}

/// The answer to `/id`: the ids of the person, the chat and its topic or thread, in the
/// form the config's access lists and routing take (`telegram:123456`,
/// `telegram:-1001234567890`, `telegram:-1001234567890/7`).
pub fn ids(locale: Locale, you: &str, chat: &str, topic: Option<&str>) -> String {
    use Locale::*;
    let (you_are, this_chat, this_topic, users, chats) = match locale {
        En => ("You", "This chat", "This topic or thread", "access.users, access.approvers, access.admins", "access.chats, routing.channels"),
        Vi => ("Bạn", "Cuộc trò chuyện này", "Chủ đề hoặc luồng này", "access.users, access.approvers, access.admins", "access.chats, routing.channels"),
        Zh => ("你", "此聊天", "此话题或子区", "access.users, access.approvers, access.admins", "access.chats, routing.channels"),
    };
    let mut text = format!("🆔 {you_are}: {you}  ({users})\n{this_chat}: {chat}  ({chats})");
    if let Some(topic) = topic {
        text.push_str(&format!("\n{this_topic}: {topic}  ({chats})"));
    }
    text
}

/// A notice the bridge sends on its own account, as people read it. The agent's
/// troubles are worded in English, as the agent's own words around them are.
pub fn notice(notice: &Notice) -> String {
    match notice {
        Notice::UnshowableRequest { approval_key, reason } => format!("The agent sent a request the bridge cannot show ({approval_key}): {reason}"),
        Notice::AgentError { message } => format!("The agent reported an error: {message}"),
        Notice::YouArePaired { locale } => access_text(Locale::from_code(locale).unwrap_or_default(), &AccessMsg::YouArePaired),
    }
}

pub fn access_text(locale: Locale, msg: &AccessMsg<'_>) -> String {
    use AccessMsg::*;
    use Locale::*;
    match (msg, locale) {
        (NotAllowed { id }, En) => format!("⛔ You are not allowed to talk to this agent. Ask an admin to add you: your id is {id}."),
        (NotAllowed { id }, Vi) => format!("⛔ Bạn không được phép trò chuyện với tác tử này. Hãy nhờ quản trị viên thêm bạn: mã của bạn là {id}."),
        (NotAllowed { id }, Zh) => format!("⛔ 你无权与此智能体对话。请联系管理员添加你：你的编号是 {id}。"),
        (PairingCode { code, expires_at_ms }, En) => format!(
            "⛔ You are not allowed to talk to this agent yet. Your pairing code is {code} (valid until {}). Ask an admin to approve it: `hitl-bridge pair {code}`, or /pair {code} in the admin chat.",
            clock(*expires_at_ms)
        ),
        (PairingCode { code, expires_at_ms }, Vi) => format!(
            "⛔ Bạn chưa được phép trò chuyện với tác tử này. Mã ghép nối của bạn là {code} (hiệu lực đến {}). Hãy nhờ quản trị viên duyệt: `hitl-bridge pair {code}`, hoặc /pair {code} trong nhóm quản trị.",
            clock(*expires_at_ms)
        ),
        (PairingCode { code, expires_at_ms }, Zh) => format!(
            "⛔ 你暂时无权与此智能体对话。你的配对码是 {code}（有效期至 {}）。请管理员批准：`hitl-bridge pair {code}`，或在管理聊天中发送 /pair {code}。",
            clock(*expires_at_ms)
        ),
        (YouArePaired, En) => "✅ An admin approved your pairing code: you may now talk to the agent.".into(),
        (YouArePaired, Vi) => "✅ Quản trị viên đã duyệt mã ghép nối: giờ bạn có thể trò chuyện với tác tử.".into(),
        (YouArePaired, Zh) => "✅ 管理员已批准你的配对码：你现在可以与智能体对话了。".into(),
        (Paired { name, who }, En) => format!("✅ Paired {name} ({who}): they may now talk to the agent."),
        (Paired { name, who }, Vi) => format!("✅ Đã ghép nối {name} ({who}): giờ họ có thể trò chuyện với tác tử."),
        (Paired { name, who }, Zh) => format!("✅ 已配对 {name}（{who}）：对方现在可以与智能体对话。"),
        (PairNotAdmin, En) => "⛔ Only an admin (access.admins) may approve pairing codes.".into(),
        (PairNotAdmin, Vi) => "⛔ Chỉ quản trị viên (access.admins) mới được duyệt mã ghép nối.".into(),
        (PairNotAdmin, Zh) => "⛔ 只有管理员（access.admins）才能批准配对码。".into(),
        (PairNotAdminChat, En) => "⛔ /pair only works in an admin chat (access.admin_chats) or in your direct chat with the bot.".into(),
        (PairNotAdminChat, Vi) => "⛔ /pair chỉ dùng được trong nhóm quản trị (access.admin_chats) hoặc khi nhắn riêng với bot.".into(),
        (PairNotAdminChat, Zh) => "⛔ /pair 只能在管理聊天（access.admin_chats）或与机器人的私聊中使用。".into(),
        (PairOwnCode { code }, En) => format!("⛔ Pairing code {code} is your own: another admin must approve it."),
        (PairOwnCode { code }, Vi) => format!("⛔ Mã ghép nối {code} là của chính bạn: một quản trị viên khác phải duyệt nó."),
        (PairOwnCode { code }, Zh) => format!("⛔ 配对码 {code} 是你自己的：必须由另一位管理员批准。"),
        (PairUsage, En) => "Usage: /pair CODE".into(),
        (PairUsage, Vi) => "Cách dùng: /pair MÃ".into(),
        (PairUsage, Zh) => "用法：/pair 配对码".into(),
        (PairUnknown { code }, En) => format!("No pairing code {code} is waiting. Check it, or ask the person to send a message again."),
        (PairUnknown { code }, Vi) => format!("Không có mã ghép nối {code} nào đang chờ. Hãy kiểm tra lại, hoặc nhờ người đó nhắn lại."),
        (PairUnknown { code }, Zh) => format!("没有等待中的配对码 {code}。请检查，或让对方重新发送消息。"),
        (PairExpired { code }, En) => format!("Pairing code {code} has expired; ask the person to send a message for a new one."),
        (PairExpired { code }, Vi) => format!("Mã ghép nối {code} đã hết hạn; hãy nhờ người đó nhắn lại để nhận mã mới."),
        (PairExpired { code }, Zh) => format!("配对码 {code} 已过期；请让对方重新发送消息以获取新码。"),
    }
}

fn numbers(indexes: &[usize]) -> String {
    indexes.iter().map(|i| (i + 1).to_string()).collect::<Vec<_>>().join(", ")
}

/// The outcome line shown when an interaction ends: what, who, when.
/// The status line of an interaction, with where its reply is when it is not with
/// the agent yet.
pub fn outcome(locale: Locale, interaction: &Interaction) -> String {
    let status = status(locale, interaction);
    match delivery(locale, interaction.delivery) {
        Some(delivery) => format!("{status} · {delivery}"),
        None => status,
    }
}

/// Said only while the reply is not known to be with the agent: the message is edited
/// again once it is.
fn delivery(locale: Locale, delivery: Delivery) -> Option<String> {
    use Locale::*;
    Some(match (delivery, locale) {
        (Delivery::None | Delivery::Delivered { .. }, _) => return None,
        (Delivery::Queued, En) => "⏳ saved, not yet delivered to the agent".into(),
        (Delivery::Queued, Vi) => "⏳ đã lưu, chưa gửi tới agent".into(),
        (Delivery::Queued, Zh) => "⏳ 已保存，尚未送达智能体".into(),
        (Delivery::TooLate { .. }, En) => "⚠️ the agent timed out before this reached it".into(),
        (Delivery::TooLate { .. }, Vi) => "⚠️ agent đã hết thời gian chờ trước khi nhận được".into(),
        (Delivery::TooLate { .. }, Zh) => "⚠️ 送达前智能体已超时".into(),
        (Delivery::NotWaiting { .. }, En) => "⚠️ not delivered: the agent stopped waiting for this (its current request, if any, is shown below)".into(),
        (Delivery::NotWaiting { .. }, Vi) => "⚠️ chưa gửi được: agent đã thôi chờ yêu cầu này (yêu cầu hiện tại của nó, nếu có, hiện bên dưới)".into(),
        (Delivery::NotWaiting { .. }, Zh) => "⚠️ 未送达：智能体已不再等待此请求（如有新的请求，见下方）".into(),
    })
}

fn status(locale: Locale, interaction: &Interaction) -> String {
    use Locale::*;
    // A remembered rule or a fallback settled it: say so, not who clicked.
    if let Some(settled) = policy::settlement(locale, interaction) {
        return settled;
    }
    match (&interaction.status, locale) {
        (Status::Pending, _) => text(locale, Msg::Pending).into(),
        (Status::Resolved { by, at_ms }, _) => {
            let what = reply_word(locale, interaction.reply.as_ref()) + policy::remembered_suffix(locale, interaction).as_str();
            // Under a quorum everyone whose vote counted decided.
            let voters = policy::counted_voters(interaction).map(|v| v.join(", "));
            let who = match by {
                Decider::Person(actor) => voters.unwrap_or_else(|| actor.name.clone()),
                Decider::Elsewhere => match locale {
                    En => "another client".into(),
                    Vi => "một ứng dụng khác".into(),
                    Zh => "其他客户端".into(),
                },
            };
            match locale {
                En => format!("{what} by {who} at {}", clock(*at_ms)),
                Vi => format!("{what} bởi {who} lúc {}", clock(*at_ms)),
                Zh => format!("{what}（{who}，{}）", clock(*at_ms)),
            }
        }
        (Status::Expired { at_ms, .. }, En) => format!("⌛ Expired at {} with no decision", clock(*at_ms)),
        (Status::Expired { at_ms, .. }, Vi) => format!("⌛ Hết hạn lúc {} mà không có quyết định", clock(*at_ms)),
        (Status::Expired { at_ms, .. }, Zh) => format!("⌛ 已于 {} 过期，无人决定", clock(*at_ms)),
        (Status::Cancelled { at_ms, reason }, En) => format!("✖ Cancelled at {} ({reason})", clock(*at_ms)),
        (Status::Cancelled { at_ms, reason }, Vi) => format!("✖ Đã hủy lúc {} ({reason})", clock(*at_ms)),
        (Status::Cancelled { at_ms, reason }, Zh) => format!("✖ 已于 {} 取消（{reason}）", clock(*at_ms)),
    }
}

fn reply_word(locale: Locale, reply: Option<&Reply>) -> String {
    let decision = |d: &Decision| decided(locale, d);
    match reply {
        Some(Reply::Decisions { decisions, .. }) => decisions.iter().map(decision).collect::<Vec<_>>().join(" · "),
        Some(Reply::Answers { .. }) => format!("✅ {}", text(locale, Msg::Sent)),
        None => "✅".into(),
    }
}

/// What was decided, as the outcome line says it ("✅ Approved by Thảo at 14:02 UTC"):
/// in the past tense, unlike the buttons.
fn decided(locale: Locale, decision: &Decision) -> String {
    use Locale::*;
    let (emoji, word) = match (decision, locale) {
        (Decision::Approve, En) => ("✅", "Approved"),
        (Decision::Approve, Vi) => ("✅", "Đã duyệt"),
        (Decision::Approve, Zh) => ("✅", "已批准"),
        (Decision::ApproveForSession, En) => ("🔓", "Approved for the session"),
        (Decision::ApproveForSession, Vi) => ("🔓", "Đã duyệt cả phiên"),
        (Decision::ApproveForSession, Zh) => ("🔓", "已在本会话内批准"),
        (Decision::Reject { .. }, En) => ("❌", "Rejected"),
        (Decision::Reject { .. }, Vi) => ("❌", "Đã từ chối"),
        (Decision::Reject { .. }, Zh) => ("❌", "已拒绝"),
        (Decision::Edit { .. }, En) => ("✏️", "Edited"),
        (Decision::Edit { .. }, Vi) => ("✏️", "Đã sửa"),
        (Decision::Edit { .. }, Zh) => ("✏️", "已编辑"),
        (Decision::Respond { .. }, En) => ("💬", "Commented"),
        (Decision::Respond { .. }, Vi) => ("💬", "Đã bình luận"),
        (Decision::Respond { .. }, Zh) => ("💬", "已评论"),
    };
    format!("{emoji} {word}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locale_falls_back_in_order() {
        assert_eq!(Locale::pick([None, Some("vi-VN")]), Locale::Vi);
        assert_eq!(Locale::pick([Some("zh-hans"), Some("vi")]), Locale::Zh);
        assert_eq!(Locale::pick([Some("fr"), None]), Locale::En);
    }

    #[test]
    fn refusals_name_who_decided() {
        let r = Refusal::AlreadyDecided { by: "Thảo".into(), at_ms: (9 * 3600 + 5 * 60) * 1000 };
        assert_eq!(refusal(Locale::En, &r), "Already decided by Thảo at 09:05 UTC.");
        assert_eq!(refusal(Locale::Vi, &r), "Đã được Thảo quyết định lúc 09:05 UTC.");
    }

    #[test]
    fn policy_refusals_are_localized() {
        let voted = Refusal::AlreadyVoted { at_ms: (14 * 3600 + 5 * 60) * 1000 };
        assert_eq!(refusal(Locale::En, &voted), "You already voted at 14:05 UTC; each person votes once.");
        assert_eq!(refusal(Locale::Zh, &voted), "你已于 14:05 UTC 投票；每人只能投一次。");
        let always = Refusal::RememberNotOffered { scope: crate::interaction::RememberScope::Always };
        assert_eq!(refusal(Locale::En, &always), "“Always approve” is not offered for this request.");
        assert_eq!(refusal(Locale::Vi, &always), "Yêu cầu này không có lựa chọn “Luôn duyệt”.");
    }

    /// The first reply a stranger reads under pairing: one sentence after another,
    /// no run of spaces in between, in every language.
    #[test]
    fn the_pairing_code_reply_reads_as_one_paragraph() {
        let msg = AccessMsg::PairingCode { code: "K7Q2", expires_at_ms: 120_000 };
        assert_eq!(
            access_text(Locale::En, &msg),
            "⛔ You are not allowed to talk to this agent yet. Your pairing code is K7Q2 (valid until 00:02 UTC). \
             Ask an admin to approve it: `hitl-bridge pair K7Q2`, or /pair K7Q2 in the admin chat."
        );
        for locale in [Locale::Vi, Locale::Zh] {
            let text = access_text(locale, &msg);
            assert!(!text.contains("  ") && text.contains("K7Q2") && text.contains("00:02 UTC"), "{text}");
        }
    }
}
