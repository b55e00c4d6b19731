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

/// Whether serde_json's encoding of a value has a hidden character in one of its
/// strings. serde_json escapes C0 controls as `\b`, `\f`, `\r` or `\u00XX` (and `\u`
/// for nothing else), and writes every other character as itself.
fn encoded_has_hidden(json: &str) -> bool {
    let mut chars = json.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if matches!(chars.next(), Some('b' | 'f' | 'r' | 'u')) {
                    return true;
                }
            }
            c if hidden(c) => return true,
            _ => {}
        }
    }
    false
}

/// `interaction` as a card may show it: every string in it made readable. Borrowed
/// (no copy) when nothing needed it, which is nearly always; the check walks one
/// encoding of the whole interaction, so no field can be forgotten.
pub fn interaction(interaction: &Interaction) -> Cow<'_, Interaction> {
    let clean = serde_json::to_string(interaction).is_ok_and(|json| !encoded_has_hidden(&json));
    if clean {
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

    #[test]
    fn the_encoding_check_finds_what_serde_json_escapes_and_what_it_does_not() {
        for raw in ["\u{0}", "\u{8}", "\u{c}", "\r", "\u{1b}", "\u{202e}", "\u{9b}"] {
            let encoded = serde_json::to_string(&json!({"a": raw})).unwrap();
            assert!(encoded_has_hidden(&encoded), "{raw:?} as {encoded}");
        }
        for fine in ["\n", "\t", "a\\b", "\"quoted\"", "back\\slash\\u"] {
            let encoded = serde_json::to_string(&json!({"a": fine})).unwrap();
            assert!(!encoded_has_hidden(&encoded), "{fine:?} as {encoded}");
        }
    }
}
