//! Mattermost's own strings (beyond the shared [`texts`](crate::texts) table) in
//! English, Vietnamese and Chinese, and Markdown escaping.
//!
//! Mattermost reads Markdown in a post and in an attachment's text: `[x](url)` is a
//! link, `@channel`, `@all`, `@here` and `@name` notify. Every text an agent or a
//! person supplied goes through [`escape`]: Markdown punctuation is backslash-escaped
//! (CommonMark's escapes, which Mattermost's renderer honours) so no link or markup
//! can be injected, and a word joiner (U+2060) follows every `@`, so the server's
//! mention parser (`@` then letters, digits, `.`, `-`, `_`) sees no mention while
//! people read the text unchanged. Arguments go in a code block ([`code_block`]),
//! where Markdown and mentions are not read; only a fence inside them is broken.

use crate::texts::{Locale, cut};

/// Markdown's punctuation that can start markup or a link.
const MARKDOWN: &[char] = &['\\', '`', '*', '_', '~', '[', ']', '(', ')', '<', '>', '#', '|', '!'];
/// Follows every `@`: invisible, and not part of a mention.
const WORD_JOINER: char = '\u{2060}';

/// `text` shown as typed: no markup, no link, no mention.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if MARKDOWN.contains(&c) {
            out.push('\\');
        }
        out.push(c);
        if c == '@' {
            out.push(WORD_JOINER);
        }
    }
    out
}

/// `text` cut to `max` characters (ending in `…` when cut), then escaped.
pub fn escape_cut(text: &str, max: usize) -> String {
    escape(&cut(text, max))
}

/// `text` in a fenced code block, shown verbatim: a run of three backticks inside is
/// broken with zero-width spaces so it cannot close the fence.
pub fn code_block(text: &str) -> String {
    format!("```\n{}\n```", text.replace("```", "`\u{200B}`\u{200B}`"))
}

/// Strings only the Mattermost front end needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MMsg {
    ApprovalTitle,
    QuestionTitle,
    Agent,
    For,
    /// Under arguments cut to fit the post.
    ArgsCut,
    EditTitle,
    RejectTitle,
    CommentTitle,
    AnswerTitle,
    ArgsLabel,
    ReasonLabel,
    CommentLabel,
    ChooseOne,
    /// A click whose post is not the card its code names.
    NotThisCard,
    /// A click the bridge could not handle.
    Internal,
}

pub fn mtext(locale: Locale, msg: MMsg) -> &'static str {
    use Locale::*;
    use MMsg::*;
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
        (For, Zh) => "发起人",
        (ArgsCut, En) => "✂️ The arguments are cut to fit Mattermost; Edit shows them whole.",
        (ArgsCut, Vi) => "✂️ Tham số đã bị cắt cho vừa Mattermost; nút Sửa hiện đầy đủ.",
        (ArgsCut, Zh) => "✂️ 参数已截断以适应 Mattermost；点“编辑”可查看完整内容。",
        (EditTitle, En) => "Edit arguments",
        (EditTitle, Vi) => "Sửa tham số",
        (EditTitle, Zh) => "编辑参数",
        (RejectTitle, En) => "Reject",
        (RejectTitle, Vi) => "Từ chối",
        (RejectTitle, Zh) => "拒绝",
        (CommentTitle, En) => "Comment",
        (CommentTitle, Vi) => "Bình luận",
        (CommentTitle, Zh) => "评论",
        (AnswerTitle, En) => "Your answer",
        (AnswerTitle, Vi) => "Câu trả lời của bạn",
        (AnswerTitle, Zh) => "你的回答",
        (ArgsLabel, En) => "Arguments (JSON)",
        (ArgsLabel, Vi) => "Tham số (JSON)",
        (ArgsLabel, Zh) => "参数（JSON）",
        (ReasonLabel, En) => "Reason (optional)",
        (ReasonLabel, Vi) => "Lý do (tùy chọn)",
        (ReasonLabel, Zh) => "理由（可选）",
        (CommentLabel, En) => "Your comment",
        (CommentLabel, Vi) => "Bình luận",
        (CommentLabel, Zh) => "你的评论",
        (ChooseOne, En) => "Choose an answer",
        (ChooseOne, Vi) => "Chọn một câu trả lời",
        (ChooseOne, Zh) => "选择一个答案",
        (NotThisCard, En) => "This button does not belong to this post; nothing was changed.",
        (NotThisCard, Vi) => "Nút này không thuộc bài đăng này; không có gì thay đổi.",
        (NotThisCard, Zh) => "此按钮不属于这条消息；未做任何更改。",
        (Internal, En) => "Something went wrong inside the bridge; nothing was changed. Try again.",
        (Internal, Vi) => "Đã có lỗi bên trong bridge; không có gì thay đổi. Hãy thử lại.",
        (Internal, Zh) => "桥接服务内部出错；未做任何更改。请重试。",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_mention_and_no_link_survives_escaping() {
        let text = escape("ping @channel @all @here @ana.b see [docs](http://evil) **now** <http://x>");
        for mention in ["@channel", "@all", "@here", "@ana"] {
            assert!(!text.contains(mention), "{text}");
        }
        assert!(text.contains("\\[docs\\]\\(http://evil\\)"), "{text}");
        assert!(text.contains("\\*\\*now\\*\\*") && text.contains("\\<http://x\\>"), "{text}");
        assert_eq!(text.replace(['\\', WORD_JOINER], ""), "ping @channel @all @here @ana.b see [docs](http://evil) **now** <http://x>");
    }

    #[test]
    fn a_fence_inside_code_cannot_close_it() {
        let block = code_block("a```\n@channel");
        assert_eq!(block.matches("```").count(), 2, "{block}");
        assert!(block.starts_with("```\n") && block.ends_with("\n```"));
    }

    #[test]
    fn dialog_titles_fit_mattermosts_24_characters() {
        for locale in [Locale::En, Locale::Vi, Locale::Zh] {
            for msg in [MMsg::EditTitle, MMsg::RejectTitle, MMsg::CommentTitle, MMsg::AnswerTitle, MMsg::ArgsLabel, MMsg::ReasonLabel, MMsg::CommentLabel] {
                assert!(mtext(locale, msg).chars().count() <= super::super::limits::DIALOG_TITLE, "{msg:?} {locale:?}");
            }
        }
    }
}
