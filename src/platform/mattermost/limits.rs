//! What a Mattermost post, button, menu and dialog may hold, as the server enforces it
//! (model/post.go, model/integration_action.go; "Interactive dialogs" reference).

/// A post's message: `PostMessageMaxRunesV2`, 16,383 characters by default.
pub const POST_MESSAGE: usize = 16_383;
/// A post's `props` as serialized: `PostPropsMaxRunes`, 800,000 characters.
pub const POST_PROPS: usize = 800_000;
/// A dialog's title: "Maximum 24 characters".
pub const DIALOG_TITLE: usize = 24;
/// A dialog element's `display_name`: 24 characters.
pub const ELEMENT_NAME: usize = 24;
/// A `textarea` element's `max_length`: at most 3,000.
pub const TEXTAREA: usize = 3000;
/// A `text` element's `max_length`: at most 150.
pub const TEXT: usize = 150;
/// The text of one attachment carrying one action's arguments: cut well below the
/// post limit so several actions fit one post.
pub const ACTION_TEXT: usize = 3000;
/// A button's label as the bridge writes it (Mattermost shows long labels cut).
pub const BUTTON_NAME: usize = 60;
/// Options a static select menu shows before scrolling is unusable.
pub const MENU_OPTIONS: usize = 100;
