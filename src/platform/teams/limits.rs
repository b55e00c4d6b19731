//! What a Teams message may hold: about 28 KB for the whole activity, card included
//! (learn.microsoft.com, "Format your bot messages": "the message size limit is
//! 28 KB"). The bridge keeps its cards well under it.

/// The most a card's JSON may take, leaving room for the activity around it.
pub const CARD_BYTES: usize = 26_000;
/// The most one action's arguments take on a card, before they are cut with a note.
pub const ARGS_BYTES: usize = 8_000;
/// The longest text one message carries: agent text longer is split.
pub const TEXT_PIECE: usize = 8_000;
/// The longest signed value in an `Action.Execute`'s data.
pub const DATA: usize = 512;
/// The longest name, description, context or label shown before it is cut.
pub const FIELD: usize = 1_000;
