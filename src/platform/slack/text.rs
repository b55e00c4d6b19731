//! Slack's own strings (beyond the shared [`texts`](crate::texts) table) in English,
//! Vietnamese and Chinese, and mrkdwn escaping.
//!
//! Slack reads `<…>` in mrkdwn as a mention (`<@U…>`, `<!channel>`, `<!here>`) or a
//! link (`<http://x|y>`), and `&` starts an entity. Every text an agent or a person
//! supplied goes through [`escape`] or [`escape_cut`] (which never splits an entity),
//! so it can neither notify anyone nor link anywhere; plain_text fields
//! are shown literally by Slack and are only cut.

use crate::texts::Locale;
pub use crate::texts::entities::{escape, escape_cut};

/// Strings only the Slack front end needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SMsg {
    /// The card's header.
    ApprovalTitle,
    /// A question card's header.
    QuestionTitle,
    /// Who pushed the request (`Agent: ci`).
    Agent,
    /// Whose turn it is (`For: Ana`).
    For,
    /// Under args cut to fit a section.
    ArgsCut,
    /// Under actions left out to fit Slack's 50 blocks.
    MoreActions,
    /// The placeholder of a question's select menus.
    ChooseOne,
    ChooseMany,
    /// Under a select menu cut to Slack's 100 options.
    OptionsCut,
    /// Under questions left out to fit Slack's 50 blocks.
    MoreQuestions,
    /// The three notes above with the web inbox off: they send nobody to it.
    MoreActionsNoInbox,
    OptionsCutNoInbox,
    MoreQuestionsNoInbox,
    /// The free-text modal's title.
    AnswerTitle,
    /// The confirm dialog of Reject.
    RejectConfirmTitle,
    RejectConfirmText,
    RejectAllConfirmText,
    Cancel,
    /// Modal titles (24 characters at most).
    EditTitle,
    RejectTitle,
    CommentTitle,
    /// Modal inputs.
    ArgsLabel,
    ReasonLabel,
    CommentLabel,
    /// A click the bridge could not handle.
    Internal,
}

/// A note that sends people to the web inbox for what Slack cannot hold, or its
/// version without the inbox when the inbox is off (`inbox` false).
pub fn note(locale: Locale, msg: SMsg, inbox: bool) -> &'static str {
    let msg = match (msg, inbox) {
        (SMsg::MoreActions, false) => SMsg::MoreActionsNoInbox,
        (SMsg::OptionsCut, false) => SMsg::OptionsCutNoInbox,
        (SMsg::MoreQuestions, false) => SMsg::MoreQuestionsNoInbox,
        (msg, _) => msg,
    };
    stext(locale, msg)
}

pub fn stext(locale: Locale, msg: SMsg) -> &'static str {
    use Locale::*;
    use SMsg::*;
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
        (ArgsCut, En) => "✂️ The arguments are cut to fit Slack; Edit shows them whole.",
        (ArgsCut, Vi) => "✂️ Tham số đã bị cắt cho vừa Slack; nút Sửa hiện đầy đủ.",
        (ArgsCut, Zh) => "✂️ 参数已截断以适应 Slack；点“编辑”可查看完整内容。",
        (MoreActions, En) => "More actions than one Slack message holds: use Approve all / Reject all, or the web inbox.",
        (MoreActions, Vi) => "Nhiều thao tác hơn một tin nhắn Slack chứa được: dùng Duyệt tất cả / Từ chối tất cả, hoặc hộp thư web.",
        (MoreActions, Zh) => "操作多于一条 Slack 消息可容纳的数量：请用“全部批准/全部拒绝”或网页收件箱。",
        (ChooseOne, En) => "Choose an answer",
        (ChooseOne, Vi) => "Chọn một câu trả lời",
        (ChooseOne, Zh) => "选择一个答案",
        (ChooseMany, En) => "Choose one or more",
        (ChooseMany, Vi) => "Chọn một hoặc nhiều",
        (ChooseMany, Zh) => "选择一项或多项",
        (OptionsCut, En) => "✂️ Only the first 100 options fit in Slack; the web inbox lists them all.",
        (OptionsCut, Vi) => "✂️ Slack chỉ chứa được 100 lựa chọn đầu; hộp thư web liệt kê đủ.",
        (OptionsCut, Zh) => "✂️ Slack 只能显示前 100 个选项；网页收件箱列出全部选项。",
        (MoreQuestions, En) => "More questions than one Slack message holds: answer the rest in the web inbox.",
        (MoreQuestions, Vi) => "Nhiều câu hỏi hơn một tin nhắn Slack chứa được: trả lời phần còn lại trong hộp thư web.",
        (MoreQuestions, Zh) => "问题多于一条 Slack 消息可容纳的数量：其余问题请在网页收件箱回答。",
        (MoreActionsNoInbox, En) => "More actions than one Slack message holds: use Approve all / Reject all.",
        (MoreActionsNoInbox, Vi) => "Nhiều thao tác hơn một tin nhắn Slack chứa được: dùng Duyệt tất cả / Từ chối tất cả.",
        (MoreActionsNoInbox, Zh) => "操作多于一条 Slack 消息可容纳的数量：请用“全部批准/全部拒绝”。",
        (OptionsCutNoInbox, En) => "✂️ Only the first 100 options fit in Slack.",
        (OptionsCutNoInbox, Vi) => "✂️ Slack chỉ chứa được 100 lựa chọn đầu.",
        (OptionsCutNoInbox, Zh) => "✂️ Slack 只能显示前 100 个选项。",
        (MoreQuestionsNoInbox, En) => "More questions than one Slack message holds: only those shown can be answered here.",
        (MoreQuestionsNoInbox, Vi) => "Nhiều câu hỏi hơn một tin nhắn Slack chứa được: ở đây chỉ trả lời được các câu đang hiện.",
        (MoreQuestionsNoInbox, Zh) => "问题多于一条 Slack 消息可容纳的数量：此处只能回答显示出的问题。",
        (AnswerTitle, En) => "Your answer",
        (AnswerTitle, Vi) => "Câu trả lời của bạn",
        (AnswerTitle, Zh) => "你的回答",
        (RejectConfirmTitle, En) => "Reject?",
        (RejectConfirmTitle, Vi) => "Từ chối?",
        (RejectConfirmTitle, Zh) => "拒绝？",
        (RejectConfirmText, En) => "The agent will not run this action. You can give a reason next.",
        (RejectConfirmText, Vi) => "Tác tử sẽ không chạy thao tác này. Bạn có thể nêu lý do ở bước sau.",
        (RejectConfirmText, Zh) => "智能体将不会执行此操作。下一步可填写理由。",
        (RejectAllConfirmText, En) => "The agent will run none of these actions.",
        (RejectAllConfirmText, Vi) => "Tác tử sẽ không chạy thao tác nào trong số này.",
        (RejectAllConfirmText, Zh) => "智能体将不会执行其中任何操作。",
        (Cancel, En) => "Cancel",
        (Cancel, Vi) => "Hủy",
        (Cancel, Zh) => "取消",
        (EditTitle, En) => "Edit arguments",
        (EditTitle, Vi) => "Sửa tham số",
        (EditTitle, Zh) => "编辑参数",
        (RejectTitle, En) => "Reject",
        (RejectTitle, Vi) => "Từ chối",
        (RejectTitle, Zh) => "拒绝",
        (CommentTitle, En) => "Comment",
        (CommentTitle, Vi) => "Bình luận",
        (CommentTitle, Zh) => "评论",
        (ArgsLabel, En) => "Arguments (a JSON object)",
        (ArgsLabel, Vi) => "Tham số (một đối tượng JSON)",
        (ArgsLabel, Zh) => "参数（JSON 对象）",
        (ReasonLabel, En) => "Reason (optional)",
        (ReasonLabel, Vi) => "Lý do (không bắt buộc)",
        (ReasonLabel, Zh) => "理由（可选）",
        (CommentLabel, En) => "Your comment",
        (CommentLabel, Vi) => "Bình luận của bạn",
        (CommentLabel, Zh) => "你的评论",
        (Internal, En) => "Something went wrong inside the bridge; nothing was changed. Try again.",
        (Internal, Vi) => "Đã có lỗi bên trong bridge; không có gì thay đổi. Hãy thử lại.",
        (Internal, Zh) => "桥接服务内部出错；未做任何更改。请重试。",
    }
}

/// `text` for inside a ``` code block: escaped, and a ``` in it cannot close the block.
pub fn code(text: &str) -> String {
    escape(text).replace("```", "`\u{200b}`\u{200b}`")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_and_links_are_shown_as_typed() {
        assert_eq!(escape("<!channel> & <@U1> <http://x|y>"), "&lt;!channel&gt; &amp; &lt;@U1&gt; &lt;http://x|y&gt;");
        assert_eq!(escape("a&amp;b"), "a&amp;amp;b", "an entity typed is shown as typed");
    }

    #[test]
    fn cutting_never_splits_an_entity_and_keeps_to_the_limit() {
        let cut = escape_cut(&"<".repeat(100), 20);
        assert!(cut.chars().count() <= 20, "{cut}");
        assert!(cut.ends_with('…') && cut.starts_with("&lt;"), "{cut}");
        assert_eq!(cut.matches("&lt;").count() * 4 + 1, cut.chars().count());
        assert_eq!(escape_cut("short", 20), "short");
    }

    #[test]
    fn a_code_block_cannot_be_closed_from_inside() {
        assert!(!code("x```y").contains("```"));
        assert_eq!(code("<b>"), "&lt;b&gt;");
    }

    #[test]
    fn every_string_is_translated() {
        for locale in [Locale::En, Locale::Vi, Locale::Zh] {
            for msg in [SMsg::EditTitle, SMsg::RejectTitle, SMsg::CommentTitle, SMsg::AnswerTitle, SMsg::Cancel] {
                // Modal titles and button texts: Slack's 24-character limit.
                assert!(stext(locale, msg).chars().count() <= 24, "{msg:?} {locale:?}");
            }
        }
    }
}
