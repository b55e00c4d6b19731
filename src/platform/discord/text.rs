//! Discord's own strings (beyond the shared [`locale`](crate::platform::locale) table)
//! in English, Vietnamese and Chinese, and the length helpers every renderer uses:
//! Discord counts characters, so cutting is by `char`, never by byte, and a UTF-8
//! sequence is never split.

use crate::platform::locale::Locale;

/// Strings only the Discord front end needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DMsg {
    /// The Other… button and the title of its modal.
    OtherEllipsis,
    /// Title prefix of the edit modal.
    EditTitle,
    /// Title of the comment modal.
    CommentTitle,
    /// Label of the comment input.
    CommentLabel,
    /// Title of an approval embed.
    ApprovalTitle,
    /// Title of a question embed.
    QuestionTitle,
    /// Shown on a page button.
    Previous,
    Next,
    /// Field name for one action's current decision.
    Decision,
    /// Notice when the bridge could not reach its engine.
    Internal,
    /// `/pending`: link text.
    OpenMessage,
    /// Notice when a slash command is used where no chat can be resolved.
    NotHere,
}

pub fn dtext(locale: Locale, msg: DMsg) -> &'static str {
    use DMsg::*;
    use Locale::*;
    match (msg, locale) {
        (OtherEllipsis, En) => "Other…",
        (OtherEllipsis, Vi) => "Khác…",
        (OtherEllipsis, Zh) => "其他…",
        (EditTitle, En) => "Edit",
        (EditTitle, Vi) => "Sửa",
        (EditTitle, Zh) => "编辑",
        (CommentTitle, En) => "Comment",
        (CommentTitle, Vi) => "Bình luận",
        (CommentTitle, Zh) => "评论",
        (CommentLabel, En) => "Your comment",
        (CommentLabel, Vi) => "Bình luận của bạn",
        (CommentLabel, Zh) => "你的评论",
        (ApprovalTitle, En) => "Approval needed",
        (ApprovalTitle, Vi) => "Cần phê duyệt",
        (ApprovalTitle, Zh) => "需要批准",
        (QuestionTitle, En) => "The agent asks",
        (QuestionTitle, Vi) => "Tác tử hỏi",
        (QuestionTitle, Zh) => "智能体提问",
        (Previous, En) => "◀ Previous",
        (Previous, Vi) => "◀ Trước",
        (Previous, Zh) => "◀ 上一页",
        (Next, En) => "Next ▶",
        (Next, Vi) => "Sau ▶",
        (Next, Zh) => "下一页 ▶",
        (Decision, En) => "Decision",
        (Decision, Vi) => "Quyết định",
        (Decision, Zh) => "决定",
        (Internal, En) => "Something went wrong on the bridge; nothing was sent. Try again.",
        (Internal, Vi) => "Cầu nối gặp lỗi; chưa có gì được gửi. Hãy thử lại.",
        (Internal, Zh) => "桥接服务出错，未发送任何内容。请重试。",
        (OpenMessage, En) => "open",
        (OpenMessage, Vi) => "mở",
        (OpenMessage, Zh) => "打开",
        (NotHere, En) => "This command does not work here.",
        (NotHere, Vi) => "Lệnh này không dùng được ở đây.",
        (NotHere, Zh) => "此命令不能在这里使用。",
    }
}

pub use crate::texts::cut as truncate;

/// Splits `text` into pieces of at most `max` characters, preferring to break after a
/// newline, then after a space, so that long agent replies stay readable.
pub fn split(text: &str, max: usize) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut rest: &str = text;
    while rest.chars().count() > max {
        // Byte offset just past the `max`-th char: always a char boundary.
        let hard = rest.char_indices().nth(max).map_or(rest.len(), |(i, _)| i);
        let window = &rest[..hard];
        let cut = window.rfind('\n').or_else(|| window.rfind(' ')).map(|i| i + 1).filter(|&i| i > hard / 2).unwrap_or(hard);
        pieces.push(rest[..cut].to_owned());
        rest = &rest[cut..];
    }
    if !rest.is_empty() || pieces.is_empty() {
        pieces.push(rest.to_owned());
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncate_counts_chars_not_bytes() {
        assert_eq!(truncate("Thảo", 4), "Thảo");
        assert_eq!(truncate("Thảo muốn", 5), "Thảo…");
        assert_eq!(truncate("数据数据", 3), "数据…");
    }

    #[test]
    fn split_respects_the_limit_and_char_boundaries() {
        let text = "ả".repeat(4500);
        let parts = split(&text, 2000);
        assert_eq!(parts.iter().map(|p| p.chars().count()).collect::<Vec<_>>(), vec![2000, 2000, 500]);
        assert_eq!(parts.concat(), text);
        let words = "một hai ba ".repeat(300);
        let parts = split(&words, 2000);
        assert!(parts.iter().all(|p| p.chars().count() <= 2000 && p.ends_with(' ')));
        assert_eq!(parts.concat(), words);
        assert_eq!(split("", 2000), vec![String::new()]);
    }
}
