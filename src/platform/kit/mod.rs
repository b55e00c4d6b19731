//! The platform kit: the parts every chat platform would otherwise write again for
//! itself. It sits below the platforms (they import it, it imports none of them), so a
//! new platform brings its transport, its cards and its addresses, and takes the rest
//! from here.

pub mod address;
pub mod bounded;
pub mod codes;
pub mod commands;
pub mod groups;
pub mod inbox;
pub mod json;
pub mod lanes;
pub mod pacing;
pub mod refusals;
pub mod reminder;
pub mod stream;
pub mod token;
pub mod turns;
