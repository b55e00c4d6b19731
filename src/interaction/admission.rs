//! Who may talk to the agent: start or continue a turn from a chat, or use the chat
//! commands that steer a session (`/new`, `/cancel`, `/pending`). Every platform's
//! messages go through the engine, which asks [`Allowlist::admits`] here, so Telegram,
//! Discord and any future platform share one rule:
//!
//! - the console (the terminal, and so `demo`) is always admitted: whoever types there
//!   already controls the process;
//! - a user in `access.users`, a chat in `access.chats` (or every chat of a space, as
//!   a Discord guild, in each platform's grammar: [`ChatNetwork::allowed_chats`]), a
//!   person in a group of `access.roles` (a Discord role) on a platform with groups;
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
#[cfg(doc)]
use super::chat::ChatNetwork;
use super::chat::{AllowedChats, Networks};

/// Pairing code characters: no 0/O, 1/I/L, so a code read aloud or retyped from a
/// phone survives.
pub const CODE_ALPHABET: &[u8] = b"23456789ABCDEFGHJKMNPQRSTUVWXYZ";

/// Characters in a pairing code: 31^8 ≈ 8.5e11, far beyond guessing within its hour.
pub const CODE_LEN: usize = 8;

/// `access.chats` parsed: `(platform, chat id)` pairs, and `(platform, space id)`
/// pairs.
pub type ChatEntries = (Vec<(String, String)>, Vec<(String, String)>);

/// The talk allowlist, from `[access]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowlist {
    /// `(platform, user id)`.
    pub users: Vec<(String, String)>,
    /// `(platform, chat id)`: a Telegram chat (every topic in it), a Discord channel
    /// (threads under it too) or DM channel.
    pub chats: Vec<(String, String)>,
    /// `(platform, space id)`: spaces whose every chat is open (a Discord guild).
    pub spaces: Vec<(String, String)>,
    /// `(platform, group id)`: groups whose members may talk (a Discord role).
    pub groups: Vec<(String, String)>,
    /// Platforms anyone may talk in (the local terminal): see
    /// [`ChatNetwork::always_open`].
    pub open: Vec<String>,
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
    /// Parses `access.chats` entries, each in its platform's grammar, into chats and
    /// spaces; the error is the first entry that names neither.
    pub fn parse_chats(networks: &Networks, entries: &[String]) -> Result<ChatEntries, String> {
        let mut chats = Vec::new();
        let mut spaces = Vec::new();
        for entry in entries {
            match networks.allowed_chats(entry).ok_or_else(|| entry.clone())? {
                (platform, AllowedChats::Chat(chat)) => chats.push((platform, chat)),
                (platform, AllowedChats::Space(space)) => spaces.push((platform, space)),
            }
        }
        Ok((chats, spaces))
    }

    /// Whether nobody on `platform` could ever be admitted by configuration alone
    /// (pairing aside): what the start-up warning is about. `has_groups`: whether its
    /// people are in groups, which approver groups may name.
    pub fn is_closed_on(&self, platform: &str, has_groups: bool) -> bool {
        let mut entries = self.users.iter().chain(&self.chats).chain(&self.spaces).chain(&self.groups).chain(&self.approvers.approver_users);
        let names_someone_here = entries.any(|(p, _)| p == platform);
        let approver_groups_apply = has_groups && !self.approvers.approver_roles.is_empty();
        !(names_someone_here || approver_groups_apply)
    }

    /// Whether configuration admits `actor` writing in `chat_id` on `platform` (the
    /// chat's platform; `actor.space` is the space the chat is in, if any).
    /// Paired users are the store's business: see [`Allowlist::verdict`].
    pub fn admits(&self, platform: &str, chat_id: &str, actor: &Actor) -> bool {
        if self.open.iter().any(|open| open == platform) {
            return true;
        }
        let same = |(p, id): &(String, String), value: &str| p == platform && id == value;
        self.users.iter().any(|u| same(u, &actor.user_id) && actor.platform == platform)
            || self.chats.iter().any(|c| same(c, chat_id))
            || actor.space.as_ref().is_some_and(|space| self.spaces.iter().any(|s| same(s, space)))
            || self.groups.iter().any(|(p, group)| *p == actor.platform && actor.groups.contains(group))
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
        let entries = ["telegram:-100123".into(), "discord:800".into(), "discord:guild:700".into()];
        let (chats, spaces) = Allowlist::parse_chats(&crate::interaction::test_networks::networks(), &entries).unwrap();
        Allowlist {
            users: vec![("telegram".into(), "1".into()), ("discord".into(), "5".into())],
            chats,
            spaces,
            groups: vec![("discord".into(), "900".into())],
            open: Vec::new(),
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
        in_guild.space = Some("700".into());
        assert!(l.admits("discord", "801", &in_guild));
        let mut with_role = Actor::new("discord", "14", "Dev");
        with_role.groups = vec!["1".into(), "900".into()];
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
        let terminal = Allowlist { open: vec!["console".into()], ..Allowlist::default() };
        assert!(terminal.admits("console", "stdin", &Actor::new("console", "console", "me")));
        assert!(!empty.admits("console", "stdin", &Actor::new("console", "console", "me")));
        assert!(!empty.admits("telegram", "13", &stranger));
    }

    #[test]
    fn closed_platforms_are_named() {
        let networks = crate::interaction::test_networks::networks();
        let closed = |l: &Allowlist, platform: &str| l.is_closed_on(platform, networks.has_groups(platform));
        let empty = Allowlist::default();
        assert!(closed(&empty, "telegram") && closed(&empty, "discord"));
        let l = list();
        assert!(!closed(&l, "telegram") && !closed(&l, "discord"));
        let roles_only = Allowlist { groups: vec![("discord".into(), "9".into())], ..Allowlist::default() };
        assert!(closed(&roles_only, "telegram") && !closed(&roles_only, "discord"));
        let approver_roles_only = Allowlist { approvers: AccessPolicy { approver_roles: vec!["9".into()], ..AccessPolicy::default() }, ..Allowlist::default() };
        assert!(closed(&approver_roles_only, "telegram") && !closed(&approver_roles_only, "discord"));
    }

    #[test]
    fn bad_chat_entries_are_named() {
        for bad in ["telegram", "irc:#ops", "discord:guild:", "telegram:guild:1", "discord:abc", "telegram:"] {
            assert_eq!(Allowlist::parse_chats(&crate::interaction::test_networks::networks(), &[bad.into()]), Err(bad.to_owned()), "{bad}");
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
