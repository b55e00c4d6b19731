//! Slack's limits (Block Kit reference, "Blocks" and "Block elements"): what a
//! message, a block and an element may hold. The renderers cut to these; the button
//! codes fit [`OPTION_VALUE`].

pub const BLOCKS: usize = 50;
pub const SECTION_TEXT: usize = 3000;
pub const HEADER_TEXT: usize = 150;
pub const BUTTON_TEXT: usize = 75;
pub const BUTTON_VALUE: usize = 2000;
/// A button's `url` ("Button element").
pub const BUTTON_URL: usize = 3000;
pub const ACTION_ID: usize = 255;
pub const ACTIONS_ELEMENTS: usize = 25;
/// An option object's text and description, and its value (Block Kit reference,
/// "Option object"); the options of a select menu; a placeholder.
pub const OPTION_TEXT: usize = 75;
pub const OPTION_VALUE: usize = 150;
pub const SELECT_OPTIONS: usize = 100;
pub const PLACEHOLDER: usize = 150;
pub const CONTEXT_ELEMENTS: usize = 10;
pub const CONFIRM_TITLE: usize = 100;
pub const CONFIRM_TEXT: usize = 300;
pub const CONFIRM_BUTTON: usize = 30;
/// The message's own `text`, the notification's and screen readers' fallback.
pub const MESSAGE_TEXT: usize = 4000;
