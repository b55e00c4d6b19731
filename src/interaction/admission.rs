//! Who may talk to the agent: start or continue a turn from a chat, or use the chat
//! commands that steer a session (`/new`, `/cancel`, `/pending`). Every platform's
//! messages go through the engine, which asks [`Allowlist::admits`] here, so Telegram,
//! Discord and any future platform share one rule:
//!
//! - the console (the terminal, and so `demo`) is always admitted: whoever types there
//!   already controls the process;
//! - a user in `access.users`, a chat in `access.chats` (a Discord guild with
//!   `discord:guild:ID`), a Discord member with a role in `access.roles`;
//! - a configured approver (`access.approvers`, `access.approver_roles`): someone
//!   trusted to approve tool calls is trusted to ask for them;
//! - a user paired by an admin (the engine looks that up in the store).
//!
//! Everyone else is a stranger: refused, or offered a pairing code when
//! `access.pairing` is on. Codes are approved by people, not by chats: `/pair CODE`
//! is accepted from someone in `access.admins`, in an admin chat or a direct chat with
//! the bot ([`PairingAdmins::may_pair`]), and never for their own code (the store
//! checks that, where the code's owner is known). This module also owns the pairing
//! code's alphabet and shape; it does no IO, so the randomness comes in as bytes.

use super::access::{AccessPolicy, Actor};

/// The platform that is never refused.
pub const CONSOLE: &str = "console";

/// A Discord chat entry naming a whole guild: `discord:guild:ID`.
const GUILD_PREFIX: &str = "guild:";

/// Pairing code characters: no 0/O, 1/I/L, so a code read aloud or retyped from a
/// phone survives.
pub const CODE_ALPHABET: &[u8] = b"23456789ABCDEFGHJKMNPQRSTUVWXYZ";

/// Characters in a pairing code: 31^8 ≈ 8.5e11, far beyond guessing within its hour.
pub const CODE_LEN: usize = 8;

/// `access.chats` parsed: `(platform, chat id)` pairs, and Discord guild ids.
pub type ChatEntries = (Vec<(String, String)>, Vec<String>);

/// The talk allowlist, from `[access]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowlist {
    /// `(platform, user id)`.
    pub users: Vec<(String, String)>,
    /// `(platform, chat id)`: a Telegram chat (every topic in it), a Discord channel
    /// (threads under it too) or DM channel.
    pub chats: Vec<(String, String)>,
    /// Discord guild ids whose channels are open.
    pub guilds: Vec<String>,
    /// Discord role ids whose members may talk.
    pub roles: Vec<String>,
    /// Approvers may talk too.
    pub approvers: AccessPolicy,
    /// Strangers get a pairing code instead of a plain refusal.
    pub pairing: bool,
}

/// What to do with a stranger's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Admitted,
    /// Refused; with pairing on, shown a pairing code.
    Stranger {
        offer_pairing: bool,
    },
}

impl Allowlist {
    /// Parses `access.chats` entries into chats and guilds; `None` names the first bad
    /// entry. Accepted: `telegram:CHAT_ID`, `discord:CHANNEL_ID`, `discord:guild:ID`.
    pub fn parse_chats(entries: &[String]) -> Result<ChatEntries, String> {
        let mut chats = Vec::new();
        let mut guilds = Vec::new();
        for entry in entries {
            let bad = || entry.clone();
            let (platform, rest) = entry.split_once(':').ok_or_else(bad)?;
            match (platform, rest.strip_prefix(GUILD_PREFIX)) {
                ("discord", Some(guild)) if is_id(guild) => guilds.push(guild.to_owned()),
                ("telegram" | "discord", None) if is_id(rest.trim_start_matches('-')) => chats.push((platform.to_owned(), rest.to_owned())),
                _ => return Err(bad()),
            }
        }
        Ok((chats, guilds))
    }

    /// Whether nobody on `platform` could ever be admitted by configuration alone
    /// (pairing aside): what the start-up warning is about.
    pub fn is_closed_on(&self, platform: &str) -> bool {
        let on = |p: &String| p == platform;
        let discord = platform == "discord";
        !self.users.iter().any(|(p, _)| on(p))
            && !self.chats.iter().any(|(p, _)| on(p))
            && !(discord && (!self.guilds.is_empty() || !self.roles.is_empty() || !self.approvers.approver_roles.is_empty()))
            && !self.approvers.approver_users.iter().any(|(p, _)| on(p))
    }

    /// Whether configuration admits `actor` writing in `chat_id` on `platform` (the
    /// chat's platform; `actor.guild_id` is the Discord guild the chat is in, if any).
    /// Paired users are the store's business: see [`Allowlist::verdict`].
    pub fn admits(&self, platform: &str, chat_id: &str, actor: &Actor) -> bool {
        if platform == CONSOLE {
            return true;
        }
        let same = |(p, id): &(String, String), value: &str| p == platform && id == value;
        self.users.iter().any(|u| same(u, &actor.user_id) && actor.platform == platform)
            || self.chats.iter().any(|c| same(c, chat_id))
            || (platform == "discord" && actor.guild_id.as_ref().is_some_and(|g| self.guilds.contains(g)))
            || actor.role_ids.iter().any(|r| self.roles.contains(r))
            || self.approvers.is_approver(actor)
    }

    /// The verdict once the store has said whether the actor is paired.
    pub fn verdict(&self, platform: &str, chat_id: &str, actor: &Actor, paired: bool) -> Verdict {
        if paired || self.admits(platform, chat_id, actor) { Verdict::Admitted } else { Verdict::Stranger { offer_pairing: self.pairing } }
    }
}

/// Who may approve pairing codes from a chat (`/pair CODE`), from `[access]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PairingAdmins {
    /// `access.admins`: `(platform, user id)`.
    pub admins: Vec<(String, String)>,
    /// `access.admin_chats`: `(platform, chat id)` where admins may use `/pair`
    /// besides their direct chat with the bot.
    pub admin_chats: Vec<(String, String)>,
}

/// Why `/pair CODE` is refused before the code is even looked up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairDenied {
    /// The sender is not in `access.admins`: membership of an admin chat is not enough.
    NotAdmin,
    /// An admin, but in a chat that is neither an admin chat nor a direct chat: the
    /// code and the confirmation should not be shown to whoever else is there.
    NotAdminChat,
}

impl PairingAdmins {
    /// Whether `actor` may approve a code from chat `chat_id` on `platform`; `direct`
    /// says the chat is the actor's own direct chat with the bot.
    pub fn may_pair(&self, actor: &Actor, platform: &str, chat_id: &str, direct: bool) -> Result<(), PairDenied> {
        let admin = self.admins.iter().any(|(p, id)| *p == actor.platform && *id == actor.user_id);
        if !admin {
            return Err(PairDenied::NotAdmin);
        }
        let admin_chat = self.admin_chats.iter().any(|(p, id)| p == platform && id == chat_id);
        if admin_chat || direct { Ok(()) } else { Err(PairDenied::NotAdminChat) }
    }
}

fn is_id(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// A pairing code from random bytes: each byte below the largest multiple of the
/// alphabet's size picks a character (no modulo bias); `None` if the bytes ran out
/// first (the caller draws more).
pub fn code_from_bytes(bytes: &[u8]) -> Option<String> {
    let n = CODE_ALPHABET.len();
    let limit = 256 - 256 % n;
    let code: String = bytes.iter().filter(|&&b| (b as usize) < limit).take(CODE_LEN).map(|&b| CODE_ALPHABET[b as usize % n] as char).collect();
    (code.len() == CODE_LEN).then_some(code)
}

/// A code as typed by a person: case, spaces and dashes do not matter. `None` when it
/// cannot be a code at all (wrong length, or a character outside the alphabet).
pub fn normalize_code(typed: &str) -> Option<String> {
    let code: String = typed.chars().filter(|c| !c.is_whitespace() && *c != '-').map(|c| c.to_ascii_uppercase()).collect();
    (code.len() == CODE_LEN && code.bytes().all(|b| CODE_ALPHABET.contains(&b))).then_some(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list() -> Allowlist {
        let (chats, guilds) = Allowlist::parse_chats(&["telegram:-100123".into(), "discord:800".into(), "discord:guild:700".into()]).unwrap();
        Allowlist {
            users: vec![("telegram".into(), "1".into()), ("discord".into(), "5".into())],
            chats,
            guilds,
            roles: vec!["900".into()],
            approvers: AccessPolicy { approver_users: vec![("telegram".into(), "42".into())], ..AccessPolicy::default() },
            pairing: false,
        }
    }

    #[test]
    fn users_chats_guilds_roles_and_approvers_are_admitted() {
        let l = list();
        assert!(l.admits("telegram", "1", &Actor::new("telegram", "1", "Thảo")));
        // A user id is per platform.
        assert!(!l.admits("discord", "77", &Actor::new("discord", "1", "x")));
        // Anyone in an allowed chat; not in another chat.
        assert!(l.admits("telegram", "-100123", &Actor::new("telegram", "13", "Guest")));
        assert!(!l.admits("telegram", "-100999", &Actor::new("telegram", "13", "Guest")));
        assert!(l.admits("discord", "800", &Actor::new("discord", "13", "Guest")));
        // A Telegram chat id does not open the same number on Discord.
        assert!(!l.admits("discord", "-100123", &Actor::new("discord", "13", "Guest")));
        let mut in_guild = Actor::new("discord", "13", "Guest");
        assert!(!l.admits("discord", "801", &in_guild));
        in_guild.guild_id = Some("700".into());
        assert!(l.admits("discord", "801", &in_guild));
        let mut with_role = Actor::new("discord", "14", "Dev");
        with_role.role_ids = vec!["1".into(), "900".into()];
        assert!(l.admits("discord", "801", &with_role));
        assert!(l.admits("telegram", "42", &Actor::new("telegram", "42", "Ops")));
    }

    #[test]
    fn strangers_are_refused_or_offered_pairing_and_the_console_never() {
        let stranger = Actor::new("telegram", "13", "Mallory");
        let mut l = list();
        assert_eq!(l.verdict("telegram", "13", &stranger, false), Verdict::Stranger { offer_pairing: false });
        l.pairing = true;
        assert_eq!(l.verdict("telegram", "13", &stranger, false), Verdict::Stranger { offer_pairing: true });
        assert_eq!(l.verdict("telegram", "13", &stranger, true), Verdict::Admitted);
        let empty = Allowlist::default();
        assert!(empty.admits(CONSOLE, CONSOLE, &Actor::new(CONSOLE, "console", "me")));
        assert!(!empty.admits("telegram", "13", &stranger));
    }

    #[test]
    fn closed_platforms_are_named() {
        let empty = Allowlist::default();
        assert!(empty.is_closed_on("telegram") && empty.is_closed_on("discord"));
        let l = list();
        assert!(!l.is_closed_on("telegram") && !l.is_closed_on("discord"));
        let roles_only = Allowlist { roles: vec!["9".into()], ..Allowlist::default() };
        assert!(roles_only.is_closed_on("telegram") && !roles_only.is_closed_on("discord"));
    }

    #[test]
    fn bad_chat_entries_are_named() {
        for bad in ["telegram", "irc:#ops", "discord:guild:", "telegram:guild:1", "discord:abc", "telegram:"] {
            assert_eq!(Allowlist::parse_chats(&[bad.into()]), Err(bad.to_owned()), "{bad}");
        }
    }

    #[test]
    fn pairing_is_for_admins_in_admin_chats_or_their_direct_chat() {
        let admins = PairingAdmins {
            admins: vec![("telegram".into(), "3003".into()), ("discord".into(), "77".into())],
            admin_chats: vec![("telegram".into(), "-100999".into())],
        };
        let ops = Actor::new("telegram", "3003", "Ops");
        assert_eq!(admins.may_pair(&ops, "telegram", "-100999", false), Ok(()));
        assert_eq!(admins.may_pair(&ops, "telegram", "3003", true), Ok(()));
        // An admin in some other group: the code would be shown to everyone there.
        assert_eq!(admins.may_pair(&ops, "telegram", "-100123", false), Err(PairDenied::NotAdminChat));
        // Another member of the admin chat is not an admin.
        let member = Actor::new("telegram", "2002", "Mallory");
        assert_eq!(admins.may_pair(&member, "telegram", "-100999", false), Err(PairDenied::NotAdmin));
        assert_eq!(admins.may_pair(&member, "telegram", "2002", true), Err(PairDenied::NotAdmin));
        // A user id is per platform.
        assert_eq!(admins.may_pair(&Actor::new("discord", "3003", "x"), "discord", "5", true), Err(PairDenied::NotAdmin));
        assert_eq!(admins.may_pair(&Actor::new("discord", "77", "Lead"), "discord", "5", true), Ok(()));
        assert_eq!(PairingAdmins::default().may_pair(&ops, "telegram", "3003", true), Err(PairDenied::NotAdmin));
    }

    #[test]
    fn codes_use_the_unambiguous_alphabet_without_bias() {
        let code = code_from_bytes(&[0, 30, 31, 247, 248, 255, 1, 2, 3, 4]).unwrap();
        // 248 and 255 are skipped (248 = 8 × 31): no character is likelier than another.
        assert_eq!(code, "2Z2Z3456");
        assert_eq!(code_from_bytes(&[255; 16]), None);
        assert!(!String::from_utf8_lossy(CODE_ALPHABET).contains(['0', 'O', '1', 'I', 'L']));
    }

    #[test]
    fn typed_codes_are_normalized_or_rejected() {
        assert_eq!(normalize_code(" abcd-efgh ").as_deref(), Some("ABCDEFGH"));
        assert_eq!(normalize_code("ABCD EFGH").as_deref(), Some("ABCDEFGH"));
        assert_eq!(normalize_code("ABCDEFG"), None);
        assert_eq!(normalize_code("ABCDEFG0"), None);
        assert_eq!(normalize_code("ABCDEFGHJ"), None);
    }
}
