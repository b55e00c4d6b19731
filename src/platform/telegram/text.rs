//! Telegram-only strings (en/vi/zh) that `platform::locale` does not have, and the
//! HTML helpers every message goes through: escaping and cutting to Telegram's
//! 4096-character limit. No IO here.

use crate::platform::locale::Locale;

/// Telegram's message text limit, in characters (after entity parsing; we count the
/// escaped HTML, which is never shorter, so a cut text always fits).
pub const MAX_TEXT_CHARS: usize = 4096;
/// answerCallbackQuery text limit.
pub const MAX_ALERT_CHARS: usize = 200;
/// ForceReply input_field_placeholder limit.
pub const MAX_PLACEHOLDER_CHARS: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tg {
    ApprovalNeeded,
    QuestionNeeded,
    ChooseMany,
    InvalidPrompt,
    Help,
    /// [`Tg::Help`] with the web inbox off: no `/web`.
    HelpNoInbox,
    CommandFailed,
}

pub fn tg(locale: Locale, msg: Tg) -> &'static str {
    use Locale::*;
    use Tg::*;
    match (msg, locale) {
        (ApprovalNeeded, En) => "Approval needed",
        (ApprovalNeeded, Vi) => "Cần phê duyệt",
        (ApprovalNeeded, Zh) => "需要审批",
        (QuestionNeeded, En) => "Question",
        (QuestionNeeded, Vi) => "Câu hỏi",
        (QuestionNeeded, Zh) => "问题",
        (ChooseMany, En) => "Choose one or more, then press Done.",
        (ChooseMany, Vi) => "Chọn một hoặc nhiều mục, rồi bấm Xong.",
        (ChooseMany, Zh) => "可多选，选好后点“完成”。",
        (InvalidPrompt, En) => "This prompt is no longer waiting for an answer.",
        (InvalidPrompt, Vi) => "Lời nhắc này không còn chờ câu trả lời.",
        (InvalidPrompt, Zh) => "此提示已不再等待回答。",
        (Help, En) => {
            "Send a message to talk to the agent. /new starts a fresh session, /cancel stops the current turn, /pending shows what waits for a decision, /rules lists what is approved without asking (/rules revoke ID takes one back), /web (here, in private) sends a sign-in link to the web inbox."
        }
        (Help, Vi) => {
            "Gửi tin nhắn để trò chuyện với agent. /new bắt đầu phiên mới, /cancel dừng lượt hiện tại, /pending cho biết những gì đang chờ quyết định, /rules liệt kê những gì được duyệt tự động (/rules revoke MÃ để thu hồi), /web (nhắn riêng tại đây) gửi liên kết đăng nhập hộp chờ duyệt trên web."
        }
        (Help, Zh) => {
            "发送消息即可与智能体对话。/new 开始新会话，/cancel 停止当前回合，/pending 查看等待决定的请求，/rules 列出无需询问即批准的规则（/rules revoke 编号 可撤销），/web（在此私聊中）发送网页待办的登录链接。"
        }
        (HelpNoInbox, En) => {
            "Send a message to talk to the agent. /new starts a fresh session, /cancel stops the current turn, /pending shows what waits for a decision, /rules lists what is approved without asking (/rules revoke ID takes one back)."
        }
        (HelpNoInbox, Vi) => {
            "Gửi tin nhắn để trò chuyện với agent. /new bắt đầu phiên mới, /cancel dừng lượt hiện tại, /pending cho biết những gì đang chờ quyết định, /rules liệt kê những gì được duyệt tự động (/rules revoke MÃ để thu hồi)."
        }
        (HelpNoInbox, Zh) => {
            "发送消息即可与智能体对话。/new 开始新会话，/cancel 停止当前回合，/pending 查看等待决定的请求，/rules 列出无需询问即批准的规则（/rules revoke 编号 可撤销）。"
        }
        (CommandFailed, En) => "The bridge could not do that right now; try again.",
        (CommandFailed, Vi) => "Hiện không thể thực hiện; hãy thử lại.",
        (CommandFailed, Zh) => "暂时无法执行，请重试。",
    }
}

pub use crate::texts::cut;
/// Telegram's HTML parse mode: only `&`, `<` and `>` are special.
pub use crate::texts::entities::{escape, escape_cut};

/// Splits agent text into escaped HTML chunks of at most [`MAX_TEXT_CHARS`]
/// characters each, preferring to break after a newline. Empty text gives no chunk
/// (Telegram rejects empty messages).
pub fn split_escaped(text: &str, max: usize) -> Vec<String> {
    let mut chunks = Vec::new();
    let mut current = String::new();
    let mut current_len = 0;
    // Where the last newline ended inside `current`, to break there instead of mid-line.
    let mut last_break: Option<(usize, usize)> = None;
    for c in text.chars() {
        let piece = escape(c.encode_utf8(&mut [0; 4]));
        let piece_len = piece.chars().count();
        if current_len + piece_len > max {
            match last_break.take() {
                Some((byte, chars)) if chars > 0 => {
                    let rest = current.split_off(byte);
                    chunks.push(std::mem::replace(&mut current, rest));
                    current_len -= chars;
                }
                _ => {
                    chunks.push(std::mem::take(&mut current));
                    current_len = 0;
                }
            }
        }
        current.push_str(&piece);
        current_len += piece_len;
        if c == '\n' {
            last_break = Some((current.len(), current_len));
        }
    }
    if !current.trim().is_empty() {
        chunks.push(current);
    }
    chunks.retain(|c| !c.trim().is_empty());
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_the_three_html_specials() {
        assert_eq!(escape("a<b> & \"c\""), "a&lt;b&gt; &amp; \"c\"");
    }

    #[test]
    fn split_respects_the_limit_after_escaping_and_prefers_newlines() {
        // 3000 + 1 + 200 × 4 escaped characters fit in one message.
        let text = format!("{}\n{}", "x".repeat(3000), "<".repeat(200));
        assert_eq!(split_escaped(&text, MAX_TEXT_CHARS).len(), 1);
        let text = format!("{}\n{}", "x".repeat(3000), "<".repeat(500));
        let chunks = split_escaped(&text, MAX_TEXT_CHARS);
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[0], format!("{}\n", "x".repeat(3000)));
        assert_eq!(chunks[1], "&lt;".repeat(500));
        assert!(split_escaped("", MAX_TEXT_CHARS).is_empty());
        let long = "é".repeat(9000);
        let chunks = split_escaped(&long, MAX_TEXT_CHARS);
        assert_eq!(chunks.iter().map(|c| c.chars().count()).collect::<Vec<_>>(), [4096, 4096, 808]);
    }

    #[test]
    fn escape_cut_counts_the_escaped_text() {
        assert_eq!(escape_cut("a&b", 5), "a…", "an entity is never split");
        assert_eq!(escape_cut("a&b", 7), "a&amp;b");
        assert_eq!(escape_cut(&"&".repeat(1000), 100).chars().count(), 96, "19 whole entities and the mark");
    }

    #[test]
    fn cut_marks_the_cut() {
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("abc", 4), "abc");
    }
}
