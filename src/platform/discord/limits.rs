//! Discord's limits (DESIGN.md "Platform limits"): what a message, an embed, a
//! component and a modal may hold. The renderers cut to these; the button codes fit
//! [`CUSTOM_ID`].

pub const CUSTOM_ID: usize = 100;
pub const BUTTON_LABEL: usize = 80;
pub const ROWS: usize = 5;
pub const BUTTONS_PER_ROW: usize = 5;
pub const SELECT_OPTIONS: usize = 25;
pub const OPTION_TEXT: usize = 100;
pub const PLACEHOLDER: usize = 150;
pub const MODAL_TITLE: usize = 45;
pub const MODAL_INPUTS: usize = 5;
pub const INPUT_LABEL: usize = 45;
pub const INPUT_VALUE: usize = 4000;
pub const CONTENT: usize = 2000;
pub const EMBED_TITLE: usize = 256;
pub const EMBED_DESCRIPTION: usize = 4096;
pub const FIELD_NAME: usize = 256;
pub const FIELD_VALUE: usize = 1024;
pub const FIELDS: usize = 25;
pub const EMBED_TOTAL: usize = 6000;
pub const BUTTON_URL: usize = 512;
