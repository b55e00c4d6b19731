//! A minimal Server-Sent Events parser: bytes in (in whatever chunks the network
//! gives), complete `event:`/`data:` records out. Pure, so chunk boundaries in the
//! middle of a line or of a UTF-8 character are unit-tested.

/// The most one record may hold; a larger one is a runaway stream and is dropped.
pub const MAX_EVENT_BYTES: usize = 4 * 1024 * 1024;

/// One dispatched SSE record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field; `message` when absent (the SSE default).
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of the current, unfinished line.
    line: Vec<u8>,
    event: Option<String>,
    data: Option<String>,
    /// The current record grew past [`MAX_EVENT_BYTES`]: skip it to its blank line.
    oversized: bool,
}

impl SseParser {
    /// Feeds a chunk; returns the records it completed.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        for &byte in chunk {
            if byte == b'\n' {
                let mut line = std::mem::take(&mut self.line);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                if let Some(event) = self.line_done(&line) {
                    out.push(event);
                }
            } else if self.line.len() < MAX_EVENT_BYTES {
                self.line.push(byte);
            } else {
                self.oversized = true;
            }
        }
        out
    }

    fn line_done(&mut self, line: &[u8]) -> Option<SseEvent> {
        if line.is_empty() {
            let (event, data, oversized) = (self.event.take(), self.data.take(), std::mem::take(&mut self.oversized));
            if oversized {
                tracing::warn!(limit = MAX_EVENT_BYTES, "skipping an oversized server-sent event");
                return None;
            }
            return data.map(|data| SseEvent { event: event.unwrap_or_else(|| "message".into()), data });
        }
        if line.starts_with(b":") {
            return None; // a comment (keep-alive)
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = match text.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (text.as_ref(), ""),
        };
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => {
                let data = self.data.get_or_insert_with(String::new);
                if !data.is_empty() {
                    data.push('\n');
                }
                if data.len() + value.len() > MAX_EVENT_BYTES {
                    self.oversized = true;
                } else {
                    data.push_str(value);
                }
            }
            _ => {} // id, retry and unknown fields are not used
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_split_anywhere_come_out_whole() {
        let stream = "event: RunStarted\ndata: {\"a\":\"ă\"}\n\n: keep-alive\n\nevent: RunContent\r\ndata: x\r\ndata: y\r\n\r\n";
        let bytes = stream.as_bytes();
        for cut in 0..bytes.len() {
            let mut p = SseParser::default();
            let mut out = p.push(&bytes[..cut]);
            out.extend(p.push(&bytes[cut..]));
            assert_eq!(out, vec![
                SseEvent { event: "RunStarted".into(), data: "{\"a\":\"ă\"}".into() },
                SseEvent { event: "RunContent".into(), data: "x\ny".into() },
            ], "cut at {cut}");
        }
    }

    #[test]
    fn a_record_without_event_is_a_message_and_one_without_data_is_nothing() {
        let mut p = SseParser::default();
        assert_eq!(p.push(b"data: 1\n\nevent: Lonely\n\n"), vec![SseEvent { event: "message".into(), data: "1".into() }]);
    }

    #[test]
    fn an_oversized_record_is_skipped_and_the_next_one_kept() {
        let mut p = SseParser::default();
        let big = format!("data: {}\n\n", "x".repeat(MAX_EVENT_BYTES + 10));
        assert!(p.push(big.as_bytes()).is_empty());
        assert_eq!(p.push(b"event: E\ndata: ok\n\n"), vec![SseEvent { event: "E".into(), data: "ok".into() }]);
    }
}
