//! Newline-delimited frames from a child's stdout, read so that a `select!` may drop
//! the read at any await without losing bytes (everything read is kept in `self`),
//! and bounded: a line over [`MAX_LINE_BYTES`] is skipped, not buffered.

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// The longest frame kept. Claude Code's frames carry tool inputs and results (a file
/// written or read); past this something is wrong, and the line is dropped.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

pub struct Lines<R> {
    reader: BufReader<R>,
    line: Vec<u8>,
    /// Bytes of the current over-long line dropped so far (0: not skipping).
    skipped: usize,
    max: usize,
}

impl<R: AsyncRead + Unpin> Lines<R> {
    pub fn new(reader: R) -> Self {
        Self::with_limit(reader, MAX_LINE_BYTES)
    }

    fn with_limit(reader: R, max: usize) -> Self {
        Self { reader: BufReader::new(reader), line: Vec::new(), skipped: 0, max }
    }

    /// The next line without its newline; `None` at the end of the stream.
    /// Cancel-safe.
    pub async fn next_line(&mut self) -> std::io::Result<Option<String>> {
        loop {
            let available = self.reader.fill_buf().await?;
            if available.is_empty() {
                if self.line.is_empty() {
                    return Ok(None);
                }
                return Ok(Some(self.take()));
            }
            let (chunk, complete) = match available.iter().position(|b| *b == b'\n') {
                Some(at) => (&available[..at], true),
                None => (available, false),
            };
            let used = chunk.len() + usize::from(complete);
            if self.skipped > 0 || self.line.len() + chunk.len() > self.max {
                self.skipped += self.line.len() + chunk.len();
                self.line.clear();
            } else {
                self.line.extend_from_slice(chunk);
            }
            self.reader.consume(used);
            if complete {
                if self.skipped > 0 {
                    tracing::warn!(bytes = self.skipped, limit = self.max, "skipping an oversized line from Claude Code");
                    self.skipped = 0;
                    continue;
                }
                return Ok(Some(self.take()));
            }
        }
    }

    fn take(&mut self) -> String {
        let bytes = std::mem::take(&mut self.line);
        String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_split_and_oversized_ones_skipped() {
        let input: &[u8] = b"{\"a\":1}\n0123456789abcdef\nshort\r\nlast";
        let mut lines = Lines::with_limit(input, 10);
        assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("{\"a\":1}"));
        assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("short\r"));
        assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("last"));
        assert_eq!(lines.next_line().await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_read_dropped_midway_loses_nothing() {
        let (mut tx, rx) = tokio::io::duplex(64);
        let mut lines = Lines::new(rx);
        use tokio::io::AsyncWriteExt;
        tx.write_all(b"{\"half\":").await.unwrap();
        let dropped = tokio::time::timeout(std::time::Duration::from_millis(50), lines.next_line()).await;
        assert!(dropped.is_err(), "no line yet");
        tx.write_all(b"true}\n").await.unwrap();
        assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("{\"half\":true}"));
    }
}
