//! The LangGraph thread of a bridge session. Deterministic, so a restarted bridge (or
//! another replica) finds the same thread; LangGraph wants a UUID.

use uuid::Uuid;

/// The session id itself when it is a UUID (the bridge makes them so), else a UUID
/// (version 8) made from a stable 128-bit FNV-1a hash of it.
pub fn thread_id(session_id: &str) -> String {
    if let Ok(uuid) = Uuid::parse_str(session_id) {
        return uuid.hyphenated().to_string();
    }
    let mut bytes = fnv1a_128(session_id.as_bytes()).to_be_bytes();
    bytes[6] = (bytes[6] & 0x0f) | 0x80; // version 8: custom
    bytes[8] = (bytes[8] & 0x3f) | 0x80; // RFC 4122 variant
    Uuid::from_bytes(bytes).hyphenated().to_string()
}

fn fnv1a_128(data: &[u8]) -> u128 {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013B;
    data.iter().fold(OFFSET, |hash, byte| (hash ^ u128::from(*byte)).wrapping_mul(PRIME))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uuid_session_is_its_own_thread() {
        assert_eq!(thread_id("0f1e2d3c4b5a69788796a5b4c3d2e1f0"), "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0");
    }

    #[test]
    fn other_ids_hash_to_a_stable_uuid() {
        let a = thread_id("chat-42");
        assert_eq!(a, thread_id("chat-42"));
        assert_ne!(a, thread_id("chat-43"));
        let parsed = Uuid::parse_str(&a).unwrap();
        assert_eq!(parsed.get_version_num(), 8);
        // Pinned: a change here would orphan every existing thread.
        assert_eq!(fnv1a_128(b"a"), 0xd228cb696f1a8caf78912b704e4a8964);
    }
}
