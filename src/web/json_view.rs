//! An action's arguments as a reviewer reads them: the whole JSON pretty-printed with
//! its parts coloured (keys, strings, numbers, literals), then every multi-line string
//! again as a text block, and a unified diff as a diff (added, removed and hunk lines
//! marked). Everything goes through maud's escaping: argument text is never markup.

use maud::{Markup, html};
use serde_json::Value;

/// The coloured JSON of `value`.
pub(super) fn json(value: &Value) -> Markup {
    let mut parts = Vec::new();
    walk(value, 0, &mut parts);
    html! { pre.json { @for (class, text) in &parts { @if class.is_empty() { (text) } @else { span class=(class) { (text) } } } } }
}

/// Every multi-line string inside `value`, with where it is (`$.patch`, `$.files[0]`):
/// shown again below the JSON as text or as a diff.
pub(super) fn blocks(value: &Value) -> Markup {
    let mut found = Vec::new();
    multi_line(value, "$".to_owned(), &mut found);
    html! {
        @for (path, text) in &found {
            figure.block {
                figcaption { code { (path) } }
                @if is_diff(text) { (diff(text)) } @else { pre.text { (text) } }
            }
        }
    }
}

fn walk(value: &Value, depth: usize, out: &mut Vec<(&'static str, String)>) {
    let pad = |d: usize| "  ".repeat(d);
    match value {
        Value::Null => out.push(("lit", "null".into())),
        Value::Bool(b) => out.push(("lit", b.to_string())),
        Value::Number(n) => out.push(("num", n.to_string())),
        Value::String(s) => out.push(("str", Value::String(s.clone()).to_string())),
        Value::Array(items) if items.is_empty() => out.push(("", "[]".into())),
        Value::Object(map) if map.is_empty() => out.push(("", "{}".into())),
        Value::Array(items) => {
            out.push(("", "[\n".into()));
            for (n, item) in items.iter().enumerate() {
                out.push(("", pad(depth + 1)));
                walk(item, depth + 1, out);
                out.push(("", if n + 1 < items.len() { ",\n".into() } else { "\n".into() }));
            }
            out.push(("", format!("{}]", pad(depth))));
        }
        Value::Object(map) => {
            out.push(("", "{\n".into()));
            for (n, (key, item)) in map.iter().enumerate() {
                out.push(("", pad(depth + 1)));
                out.push(("key", Value::String(key.clone()).to_string()));
                out.push(("", ": ".into()));
                walk(item, depth + 1, out);
                out.push(("", if n + 1 < map.len() { ",\n".into() } else { "\n".into() }));
            }
            out.push(("", format!("{}}}", pad(depth))));
        }
    }
}

fn multi_line(value: &Value, path: String, out: &mut Vec<(String, String)>) {
    match value {
        Value::String(s) if s.contains('\n') => out.push((path, s.clone())),
        Value::Array(items) => items.iter().enumerate().for_each(|(n, item)| multi_line(item, format!("{path}[{n}]"), out)),
        Value::Object(map) => map.iter().for_each(|(key, item)| multi_line(item, format!("{path}.{key}"), out)),
        _ => {}
    }
}

/// A unified diff: file headers, or a hunk header on some line.
fn is_diff(text: &str) -> bool {
    text.starts_with("diff --git ") || text.starts_with("--- ") || text.lines().any(|l| l.starts_with("@@ ") && l[3..].contains(" @@"))
}

fn diff(text: &str) -> Markup {
    html! {
        pre.diff {
            @for line in text.lines() {
                @let class = if line.starts_with("+++") || line.starts_with("---") || line.starts_with("diff ") { "file" }
                    else if line.starts_with("@@") { "hunk" }
                    else if line.starts_with('+') { "add" }
                    else if line.starts_with('-') { "del" }
                    else { "ctx" };
                span class=(class) { (line) } "\n"
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_is_coloured_and_escaped() {
        let html = json(&json!({"name": "<script>alert(1)</script>", "n": 3, "ok": true, "list": [], "o": {"a": null}})).into_string();
        assert!(html.contains(r#"<span class="key">&quot;name&quot;</span>"#), "{html}");
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{html}");
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains(r#"<span class="num">3</span>"#) && html.contains(r#"<span class="lit">true</span>"#), "{html}");
    }

    #[test]
    fn multi_line_strings_and_diffs_get_blocks() {
        let patch = "--- a/x.sql\n+++ b/x.sql\n@@ -1,2 +1,2 @@\n-DROP TABLE users;\n+SELECT 1;\n unchanged";
        let html = blocks(&json!({"sql": "SELECT 1;\nSELECT 2;", "one": "line", "patches": [patch]})).into_string();
        assert!(html.contains("<code>$.sql</code>") && html.contains(r#"<pre class="text">SELECT 1;"#), "{html}");
        assert!(html.contains("<code>$.patches[0]</code>"), "{html}");
        assert!(html.contains(r#"<span class="del">-DROP TABLE users;</span>"#) && html.contains(r#"<span class="add">+SELECT 1;</span>"#), "{html}");
        assert!(html.contains(r#"<span class="hunk">@@ -1,2 +1,2 @@</span>"#), "{html}");
        assert!(!html.contains("$.one"), "single-line strings stay in the JSON only");
    }
}
