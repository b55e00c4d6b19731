//! Teams' own strings (beyond the shared [`texts`](crate::texts) table) and what keeps
//! agent text inert.
//!
//! Teams mentions someone only for an `<at>…</at>` tag backed by a `mention` entity,
//! which the bridge never sends; still, every text an agent or a person supplied goes
//! through [`inert`], which breaks `<at` so no client can read it as a tag. On cards
//! such text is a `TextRun` of a `RichTextBlock`, which Adaptive Cards show as it is
//! (no Markdown), and messages are sent with `textFormat: plain`.

use crate::texts::{Locale, cut};

/// `text` with every `<at` broken by a zero-width joiner, cut to `max` characters.
pub fn inert(text: &str, max: usize) -> String {
    let cut = cut(text, max);
    let mut out = String::with_capacity(cut.len());
    let mut rest = cut.as_str();
    while let Some(at) = rest.find('<') {
        out.push_str(&rest[..=at]);
        rest = &rest[at + 1..];
        if rest.get(..2).is_some_and(|s| s.eq_ignore_ascii_case("at")) || rest.get(..3).is_some_and(|s| s.eq_ignore_ascii_case("/at")) {
            out.push('\u{200D}');
        }
    }
    out.push_str(rest);
    out
}

/// Strings only the Teams front end needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TMsg {
    ApprovalTitle,
    QuestionTitle,
    Agent,
    For,
    ArgsCut,
    ReasonLabel,
    CommentLabel,
    Internal,
}

pub fn ttext(locale: Locale, msg: TMsg) -> &'static str {
    use Locale::*;
    use TMsg::*;
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
        (For, Zh) => "为",
        (ArgsCut, En) => "(arguments cut to fit a Teams message)",
        (ArgsCut, Vi) => "(tham số bị cắt cho vừa tin nhắn Teams)",
        (ArgsCut, Zh) => "（参数已截断以适应 Teams 消息）",
        (ReasonLabel, En) => "Reason (optional)",
        (ReasonLabel, Vi) => "Lý do (không bắt buộc)",
        (ReasonLabel, Zh) => "原因（可选）",
        (CommentLabel, En) => "Your comment",
        (CommentLabel, Vi) => "Bình luận của bạn",
        (CommentLabel, Zh) => "你的评论",
        (Internal, En) => "Something went wrong; please try again.",
        (Internal, Vi) => "Đã xảy ra lỗi; vui lòng thử lại.",
        (Internal, Zh) => "出了点问题，请重试。",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_tags_are_broken_and_the_rest_is_kept() {
        assert_eq!(inert("<at>Everyone</at> x < y <b>", 100), "<\u{200D}at>Everyone<\u{200D}/at> x < y <b>");
        assert_eq!(inert("<AT>", 100), "<\u{200D}AT>");
        assert!(!inert("hi <at>Ana</at>", 100).contains("<at"));
    }
}
