//! What a card shows is what the text says: characters that are invisible or that
//! reorder what follows them are turned into visible markers before anything is
//! rendered, on every platform.
//!
//! An agent (or a prompt injection it read) controls an action's name and arguments,
//! a question's words and the request's context; a person controls their display
//! name. Without this, a right-to-left override (U+202E) placed before `gpj.txt`
//! makes `rm -rf /` + U+202E + `gpj.txt` read as `rm -rf /txt.jpg`, and NUL, BEL or
//! ESC hide or garble text. So:
//!
//! - C0 and C1 control characters and DEL, except newline and tab, become `[U+0007]`;
//!   a CR right before an LF is dropped (Windows line ends are not an attack);
//! - bidirectional controls (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C)
//!   become `[U+202E]`, so the reader sees that the text tried to turn.
//!
//! The stored request is never changed: the HTTP API answers what was pushed, and an
//! edit starts from what the person was shown.

use std::borrow::Cow;

use serde_json::Value;

use super::Interaction;

/// Whether `c` must be shown as a marker.
fn hidden(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{61c}')
}

/// `text` with every hidden character shown as `[U+XXXX]`; borrowed when there is none.
pub fn text(text: &str) -> Cow<'_, str> {
    if !text.chars().any(hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' && chars.peek() == Some(&'\n') {
            continue;
        }
        if hidden(c) {
            out.push_str(&format!("[U+{:04X}]", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Every string of `value` (object keys too) made readable, in place.
fn json_in_place(value: &mut Value) {
    match value {
        Value::String(s) => {
            if let Cow::Owned(shown) = text(s) {
                *s = shown;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(json_in_place),
        Value::Object(map) => {
            if map.keys().any(|k| matches!(text(k), Cow::Owned(_))) {
                let entries = std::mem::take(map);
                for (key, mut item) in entries {
                    json_in_place(&mut item);
                    map.insert(text(&key).into_owned(), item);
                }
            } else {
                map.values_mut().for_each(json_in_place);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// Reads serde_json's encoding of a value as it is written, without keeping it, and
/// stops it at the first hidden character in one of its strings. serde_json escapes C0
/// controls as `\b`, `\f`, `\r` or `\u00XX` (and `\u` for nothing else), and writes
/// every other character as itself, so a hidden character is one of those escapes or
/// one of the UTF-8 sequences of [`hidden`] beyond ASCII. The state carried from one
/// write to the next (an escape's backslash, the two bytes before) makes the answer
/// the same however the encoding is cut into writes.
#[derive(Default)]
struct HiddenScan {
    found: bool,
    after_backslash: bool,
    /// The two bytes before the current one, the nearer last.
    before: [u8; 2],
}

impl HiddenScan {
    /// Whether `byte`, after what came before it, completes a hidden character.
    fn completes_hidden(&mut self, byte: u8) -> bool {
        let [two_back, one_back] = self.before;
        self.before = [one_back, byte];
        if self.after_backslash {
            self.after_backslash = false;
            return matches!(byte, b'b' | b'f' | b'r' | b'u');
        }
        match byte {
            b'\\' => {
                self.after_backslash = true;
                false
            }
            0x00..=0x08 | 0x0b..=0x1f | 0x7f => true,
            // U+0080–U+009F, U+061C; then U+200E, U+200F, U+202A–U+202E, U+2066–U+2069.
            0x80..=0x9f if one_back == 0xc2 => true,
            0x9c if one_back == 0xd8 => true,
            0x8e | 0x8f | 0xaa..=0xae if (two_back, one_back) == (0xe2, 0x80) => true,
            0xa6..=0xa9 if (two_back, one_back) == (0xe2, 0x81) => true,
            _ => false,
        }
    }
}

impl std::io::Write for HiddenScan {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if bytes.iter().any(|&b| self.completes_hidden(b)) {
            self.found = true;
            // An error ends the encoding: the rest cannot change the answer.
            return Err(std::io::Error::other("a hidden character"));
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Whether serde_json's encoding of `value` has a hidden character in one of its
/// strings; `None` when it does not encode.
fn encodes_hidden(value: &impl serde::Serialize) -> Option<bool> {
    let mut scan = HiddenScan::default();
    match serde_json::to_writer(&mut scan, value) {
        Ok(()) => Some(false),
        Err(_) if scan.found => Some(true),
        Err(_) => None,
    }
}

/// `interaction` as a card may show it: every string in it made readable. Borrowed
/// (no copy) when nothing needed it, which is nearly always; the check reads one
/// encoding of the whole interaction as it is written (nothing kept), so no field can
/// be forgotten.
pub fn interaction(interaction: &Interaction) -> Cow<'_, Interaction> {
    if encodes_hidden(interaction) == Some(false) {
        return Cow::Borrowed(interaction);
    }
    let Ok(mut value) = serde_json::to_value(interaction) else { return Cow::Borrowed(interaction) };
    json_in_place(&mut value);
    match serde_json::from_value(value) {
        Ok(shown) => Cow::Owned(shown),
        Err(e) => {
            // Markers only replace text inside strings, so this cannot fail; if it
            // ever did, showing nothing would be worse than showing the original.
            tracing::error!(error = %e, interaction = %interaction.id, "cannot mark hidden characters");
            Cow::Borrowed(interaction)
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    #[test]
    fn controls_and_direction_changes_become_visible_markers() {
        assert_eq!(text("rm -rf /\u{202e}gpj.txt"), "rm -rf /[U+202E]gpj.txt");
        assert_eq!(text("a\u{0}b\u{7}c\u{1b}[31md\u{7f}e\u{85}f"), "a[U+0000]b[U+0007]c[U+001B][31md[U+007F]e[U+0085]f");
        assert_eq!(text("\u{2066}x\u{2069}\u{200e}\u{200f}\u{61c}"), "[U+2066]x[U+2069][U+200E][U+200F][U+061C]");
        assert_eq!(text("line\r\nnext\rover"), "line\nnext[U+000D]over");
    }

    #[test]
    fn ordinary_text_is_borrowed_untouched() {
        for s in ["Thảo muốn mua 100 VNM", "数据\n\tindented", "עברית ومرحبا", "emoji 🚀 & <b>"] {
            assert!(matches!(text(s), Cow::Borrowed(_)), "{s}");
        }
    }

    #[test]
    fn json_strings_and_keys_are_marked() {
        let mut args = json!({"cmd": "ls\u{202e}", "nested": [{"k\u{0}": "\u{1b}"}], "n": 1});
        json_in_place(&mut args);
        assert_eq!(args, json!({"cmd": "ls[U+202E]", "nested": [{"k[U+0000]": "[U+001B]"}], "n": 1}));
    }

    /// The scan of `encoded`, written in pieces cut at `cuts` (byte offsets, anywhere,
    /// even inside a character).
    fn scan_in_pieces(encoded: &str, cuts: &[usize]) -> bool {
        use std::io::Write;
        let bytes = encoded.as_bytes();
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
        cuts.sort_unstable();
        let mut scan = HiddenScan::default();
        let mut from = 0;
        for to in cuts.into_iter().chain([bytes.len()]) {
            if scan.write_all(&bytes[from..to]).is_err() {
                return true;
            }
            from = to;
        }
        scan.found
    }

    #[test]
    fn the_encoding_check_finds_what_serde_json_escapes_and_what_it_does_not() {
        for raw in ["\u{0}", "\u{8}", "\u{c}", "\r", "\u{1b}", "\u{7f}", "\u{202e}", "\u{9b}", "\u{61c}", "\u{200e}", "\u{2069}"] {
            assert_eq!(encodes_hidden(&json!({"a": raw})), Some(true), "{raw:?}");
            assert_eq!(encodes_hidden(&json!({raw: 1})), Some(true), "{raw:?} as a key");
        }
        for fine in ["\n", "\t", "a\\b", "\"quoted\"", "back\\slash\\u", "\\\\r", "\u{a0}", "\u{2010}", "\u{202f}", "\u{2065}", "ؠ", "€"] {
            assert_eq!(encodes_hidden(&json!({"a": fine})), Some(false), "{fine:?}");
        }
    }

    /// Text with many characters near the hidden ones.
    fn tricky_text() -> impl Strategy<Value = String> {
        let near_hidden = prop_oneof![
            proptest::char::range('\u{0}', '\u{ff}'),
            proptest::char::range('\u{600}', '\u{620}'),
            proptest::char::range('\u{2000}', '\u{2070}'),
            proptest::char::any()
        ];
        proptest::collection::vec(near_hidden, 0..12).prop_map(|chars| chars.into_iter().collect())
    }

    proptest! {
        /// However the encoding is cut into writes, the scan finds a hidden character
        /// exactly when the text has one.
        #[test]
        fn the_scan_agrees_with_the_characters(text in tricky_text(), cuts in proptest::collection::vec(0usize..200, 0..6)) {
            let encoded = serde_json::to_string(&json!({"k": [text.clone(), "\\"]})).unwrap();
            prop_assert_eq!(scan_in_pieces(&encoded, &cuts), text.chars().any(hidden), "{:?} as {}", text, encoded);
        }
    }
}
