//! A small Server-Sent Events parser: bytes in, whole events out. Pure, so the
//! framing rules (CRLF or LF, several `data:` lines joined by `\n`, comments,
//! events split across chunks anywhere, even inside a UTF-8 character) are unit-tested.
//!
//! Bounded: an event whose pending bytes pass [`MAX_EVENT_BYTES`] is dropped (logged)
//! rather than held, so a server that never ends an event cannot grow the bridge's memory.

/// The most one event may hold. LangGraph `updates` carry whole state slices, so this
/// is generous; past it the server is misbehaving.
///
/// Shared by the connectors whose backends stream over SSE (LangGraph, Agno).
pub const MAX_EVENT_BYTES: usize = 8 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field; `message` when absent (the SSE default).
    pub event: String,
    pub data: String,
}

#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes not yet ending in a line break.
    partial: Vec<u8>,
    event: Option<String>,
    data: Vec<String>,
    /// Bytes held for the current event; see [`MAX_EVENT_BYTES`].
    held: usize,
    /// The current event grew too large: skip its lines until its end.
    skipping: bool,
}

impl SseParser {
    /// Feeds a chunk; returns the events it completed.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        self.partial.extend_from_slice(chunk);
        let mut start = 0;
        while let Some(offset) = self.partial[start..].iter().position(|b| *b == b'\n') {
            let end = start + offset;
            let mut line = &self.partial[start..end];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            let line = String::from_utf8_lossy(line).into_owned();
            start = end + 1;
            if let Some(event) = self.line(&line) {
                out.push(event);
            }
        }
        self.partial.drain(..start);
        if self.held + self.partial.len() > MAX_EVENT_BYTES && !self.skipping {
            tracing::warn!(limit = MAX_EVENT_BYTES, "an SSE event is too large; dropping it");
            self.skipping = true;
            self.data.clear();
        }
        if self.skipping {
            self.partial.clear();
        }
        out
    }

    fn line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            let data = std::mem::take(&mut self.data);
            let event = self.event.take();
            let skipped = std::mem::replace(&mut self.skipping, false);
            self.held = 0;
            // As the SSE spec says: a record without `data:` is not dispatched.
            if skipped || data.is_empty() {
                return None;
            }
            return Some(SseEvent { event: event.unwrap_or_else(|| "message".into()), data: data.join("\n") });
        }
        if self.skipping || line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        self.held += line.len();
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => self.data.push(value.to_owned()),
            _ => {} // id, retry: not needed here
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent { event: event.into(), data: data.into() }
    }

    #[test]
    fn events_end_at_a_blank_line() {
        let mut p = SseParser::default();
        let out = p.push(b"event: metadata\ndata: {\"run_id\":\"r\"}\n\nevent: updates\ndata: {}\n\n");
        assert_eq!(out, vec![ev("metadata", "{\"run_id\":\"r\"}"), ev("updates", "{}")]);
    }

    #[test]
    fn chunks_may_split_anything_even_a_character() {
        let text = "event: updates\r\ndata: {\"t\":\"Thảo\"}\r\n\r\n".as_bytes();
        for cut in 1..text.len() {
            let mut p = SseParser::default();
            let mut out = p.push(&text[..cut]);
            out.extend(p.push(&text[cut..]));
            assert_eq!(out, vec![ev("updates", "{\"t\":\"Thảo\"}")], "cut at {cut}");
        }
    }

    #[test]
    fn data_lines_join_comments_are_skipped_and_the_default_event_is_message() {
        let mut p = SseParser::default();
        let out = p.push(b": heartbeat\n\ndata: a\ndata:b\nid: 7\n\n");
        assert_eq!(out, vec![ev("message", "a\nb")]);
    }

    #[test]
    fn an_oversized_event_is_dropped_and_the_next_one_kept() {
        let mut p = SseParser::default();
        assert!(p.push(b"event: updates\ndata: ").is_empty());
        let big = vec![b'x'; MAX_EVENT_BYTES + 1];
        assert!(p.push(&big).is_empty());
        assert!(p.push(b"xx\n\n").is_empty(), "the oversized event is not emitted");
        assert_eq!(p.push(b"event: end\ndata: null\n\n"), vec![ev("end", "null")]);
    }
}
