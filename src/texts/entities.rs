//! `&`, `<` and `>` as entities: what Telegram's HTML and Slack's mrkdwn both need, so
//! that text from an agent or a person is shown as typed, never as markup, a mention
//! or a link.

/// `text` with `&`, `<` and `>` as `&amp;`, `&lt;` and `&gt;`.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// `text` escaped and cut so that the *escaped* result has at most `max` characters
/// (ending in `…` when cut). Escaping can make text five times longer (`&` →
/// `&amp;`), so cutting before escaping is not enough to respect a limit, and an
/// entity is never cut in half.
pub fn escape_cut(text: &str, max: usize) -> String {
    let full = escape(text);
    if full.chars().count() <= max {
        return full;
    }
    let mut out = String::new();
    let mut len = 0;
    for c in text.chars() {
        let piece = escape(c.encode_utf8(&mut [0; 4]));
        let n = piece.chars().count();
        if len + n > max.saturating_sub(1) {
            break;
        }
        out.push_str(&piece);
        len += n;
    }
    if max > 0 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_is_shown_as_typed() {
        assert_eq!(escape("<!channel> & <@U1> <http://x|y>"), "&lt;!channel&gt; &amp; &lt;@U1&gt; &lt;http://x|y&gt;");
    }

    #[test]
    fn the_cut_counts_the_escaped_text_and_never_splits_an_entity() {
        assert_eq!(escape_cut("a<b", 10), "a&lt;b");
        assert_eq!(escape_cut("&&&&", 8), "&amp;…");
        assert_eq!(escape_cut("ab<cd", 4), "ab…");
        for max in 0..30 {
            let cut = escape_cut("<&>x<&>y<&>z", max);
            assert!(cut.chars().count() <= max, "{max}: {cut}");
            assert!(!cut.trim_end_matches('…').ends_with('&'), "{max}: {cut}");
        }
    }
}
