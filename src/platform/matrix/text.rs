//! Matrix's own strings (beyond the shared [`texts`](crate::texts) table) in English,
//! Vietnamese and Chinese, and the escaping of what agents and people wrote.
//!
//! A message carries a plain `body` and an HTML `formatted_body`
//! (`org.matrix.custom.html`). Every text an agent or a person supplied goes through
//! [`html`] for the HTML (`<`, `>`, `&` and quotes as entities, so no tag, link or pill
//! can be injected) and through [`plain`] for both: a word joiner (U+2060) follows
//! every `@`, so neither `@room` nor a user id reads as a mention. Each message the
//! bot sends also carries an empty `m.mentions` (intentional mentions, spec § User
//! and room mentions), which turns the legacy body-matching push rules off: the bot
//! notifies only whom it names on purpose.

use crate::texts::{Locale, cut};

/// Follows every `@`: invisible, and not part of a mention.
const WORD_JOINER: char = '\u{2060}';

/// `text` with no mention in it.
pub fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 4);
    for c in text.chars() {
        out.push(c);
        if c == '@' {
            out.push(WORD_JOINER);
        }
    }
    out
}

/// `text` as HTML text: no tag, no entity, no mention.
pub fn html(text: &str) -> String {
    entities(&plain(text))
}

/// `text` as HTML text, its `@`s kept as they are: for the bridge's own words that a
/// person copies (an id to paste into the configuration), never for agent text.
pub fn entities(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `text` cut to `max` characters (ending in `…` when cut), then made HTML text.
pub fn html_cut(text: &str, max: usize) -> String {
    html(&cut(text, max))
}

/// Strings only the Matrix front end needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XMsg {
    ApprovalTitle,
    QuestionTitle,
    Agent,
    For,
    ArgsCut,
    /// How to answer an approval, under its card.
    HowToApprove,
    /// How to answer questions, under their card.
    HowToAnswer,
    /// The reply to ✏️: how to send new arguments.
    HowToEdit,
    /// The reply to 💬.
    HowToComment,
    /// A reply to a card that is no command.
    UnknownReply,
    /// A reaction or vote on something that is not a live card.
    NotACard,
    /// A message the bot could not decrypt.
    Undecryptable,
    Internal,
    Skipped,
}

/// The Matrix string `msg` in `locale`.
pub fn xtext(locale: Locale, msg: XMsg) -> &'static str {
    use Locale::*;
    use XMsg::*;
    match (msg, locale) {
        (ApprovalTitle, En) => "🔐 Approval needed",
        (ApprovalTitle, Vi) => "🔐 Cần phê duyệt",
        (ApprovalTitle, Zh) => "🔐 需要批准",
        (QuestionTitle, En) => "❓ The agent asks",
        (QuestionTitle, Vi) => "❓ Tác tử hỏi",
        (QuestionTitle, Zh) => "❓ 智能体提问",
        (Agent, En) => "Agent",
        (Agent, Vi) => "Tác tử",
        (Agent, Zh) => "智能体",
        (For, En) => "For",
        (For, Vi) => "Cho",
        (For, Zh) => "代表",
        (ArgsCut, En) => "The arguments are cut to fit one message; the full ones are in the web inbox or the agent's log.",
        (ArgsCut, Vi) => "Tham số đã bị cắt cho vừa một tin nhắn; bản đầy đủ có trong hộp chờ web hoặc nhật ký của tác tử.",
        (ArgsCut, Zh) => "参数已截断以容纳于一条消息；完整内容见网页待办或智能体日志。",
        (HowToApprove, En) => {
            "React ✅ to approve or ❌ to reject, or reply: approve · reject REASON · edit {JSON} · comment TEXT (with several actions, put its number first: reject 2 REASON)."
        }
        (HowToApprove, Vi) => {
            "Thả ✅ để duyệt hoặc ❌ để từ chối, hoặc trả lời: approve · reject LÝ_DO · edit {JSON} · comment NỘI_DUNG (nhiều hành động: ghi số trước, reject 2 LÝ_DO)."
        }
        (HowToApprove, Zh) => "回应 ✅ 批准或 ❌ 拒绝，或回复：approve · reject 原因 · edit {JSON} · comment 内容（多个操作时先写编号：reject 2 原因）。",
        (HowToAnswer, En) => "Vote in each poll, then react ✅ here to send. Reply to a poll with your own answer; react ⏭️ on a poll to skip it.",
        (HowToAnswer, Vi) => "Bình chọn ở từng cuộc thăm dò rồi thả ✅ vào đây để gửi. Trả lời một cuộc thăm dò để nhập câu trả lời riêng; thả ⏭️ để bỏ qua.",
        (HowToAnswer, Zh) => "在每个投票中作答，然后在此回应 ✅ 提交。回复某个投票可填写自己的答案；回应 ⏭️ 跳过该题。",
        (HowToEdit, En) => "Reply to the card with: edit {new arguments as JSON}. The current ones:",
        (HowToEdit, Vi) => "Trả lời thẻ với: edit {tham số mới dạng JSON}. Tham số hiện tại:",
        (HowToEdit, Zh) => "回复卡片：edit {新的 JSON 参数}。当前参数：",
        (HowToComment, En) => "Reply to the card with: comment YOUR TEXT",
        (HowToComment, Vi) => "Trả lời thẻ với: comment NỘI_DUNG",
        (HowToComment, Zh) => "回复卡片：comment 你的内容",
        (UnknownReply, En) => "I did not understand that reply. Write approve, reject REASON, edit {JSON} or comment TEXT.",
        (UnknownReply, Vi) => "Tôi không hiểu câu trả lời đó. Hãy viết approve, reject LÝ_DO, edit {JSON} hoặc comment NỘI_DUNG.",
        (UnknownReply, Zh) => "无法理解该回复。请写 approve、reject 原因、edit {JSON} 或 comment 内容。",
        (NotACard, En) => "That request is no longer waiting for an answer.",
        (NotACard, Vi) => "Yêu cầu đó không còn chờ trả lời.",
        (NotACard, Zh) => "该请求已不再等待回答。",
        (Undecryptable, En) => "🔒 I could not decrypt your message. Verify my session (or share room keys with it) and send it again.",
        (Undecryptable, Vi) => "🔒 Tôi không giải mã được tin nhắn của bạn. Hãy xác minh phiên của tôi (hoặc chia sẻ khóa phòng) rồi gửi lại.",
        (Undecryptable, Zh) => "🔒 我无法解密你的消息。请验证我的会话（或与其共享房间密钥）后重新发送。",
        (Internal, En) => "Something went wrong; please try again.",
        (Internal, Vi) => "Đã có lỗi; vui lòng thử lại.",
        (Internal, Zh) => "出错了，请重试。",
        (Skipped, En) => "skipped",
        (Skipped, Vi) => "bỏ qua",
        (Skipped, Zh) => "已跳过",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_text_cannot_mention_or_inject_markup() {
        assert_eq!(html("<a href=x>@room</a> & 'q'"), "&lt;a href=x&gt;@\u{2060}room&lt;/a&gt; &amp; &#39;q&#39;");
        assert_eq!(plain("ping @room and @ana:x"), "ping @\u{2060}room and @\u{2060}ana:x");
        assert!(!html("@room").contains("@room"));
    }
}
