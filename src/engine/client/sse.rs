//! Server-sent events framing as a pure, incremental decoder (bytes in, events out).
//!
//! Follows the WHATWG event-stream rules: lines end in LF, CRLF or a lone CR (also when the CR
//! and LF arrive in different reads); a blank line dispatches the event; `data:` lines are
//! joined with LF; one space after the colon is dropped; lines starting with `:` are comments;
//! a leading BOM is skipped. Bytes are buffered until a line is complete, so events split
//! across reads and multi-byte UTF-8 characters split across reads both come out whole.
//!
//! Linear in the bytes received: a partial line pending across reads is only appended to, and
//! each new read is searched for a line end once (re-scanning the pending line on every read
//! made a 10 MB line cost seconds of CPU). An event larger than [`MAX_EVENT_BYTES`] stops the
//! decoder ([`SseDecoder::oversized`]); the client counts that request as `malformed_chunk`.
//!
//! Why not the `eventsource-stream` crate: it converts every read to a `String` and re-copies
//! the remaining buffer after each line (`split_off`), which is quadratic in the number of
//! events per read — and under load a single read holds hundreds of events. This decoder
//! scans each byte once and drains the buffer once per read.

/// The largest event (pending line plus joined data) the decoder holds: a token stream's
/// events are a few hundred bytes, so anything near this is a broken or hostile server.
pub const MAX_EVENT_BYTES: usize = 4 << 20;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, if one was given (`None` means the default `message`).
    pub event: Option<String>,
    /// The joined `data:` lines (raw bytes; JSON is parsed from them directly).
    pub data: Vec<u8>,
}

impl SseEvent {
    pub fn is_done(&self) -> bool {
        self.data.trim_ascii() == b"[DONE]"
    }
}

#[derive(Debug, Default)]
pub struct SseDecoder {
    buf: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    event: Option<String>,
    /// The previous read ended in CR: a leading LF in the next read belongs to it.
    skip_lf: bool,
    started: bool,
    /// An event outgrew [`MAX_EVENT_BYTES`]; nothing more is decoded.
    oversized: bool,
    /// Bytes searched for a line end (tests check that decoding is linear).
    #[cfg(test)]
    examined: usize,
}

impl SseDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one read; complete events are appended to `out`.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) {
        let mut bytes = bytes;
        if !self.started {
            // The BOM may itself arrive split across reads: hold a prefix of it until it is
            // whole or turns out not to be one.
            const BOM: &[u8] = b"\xEF\xBB\xBF";
            let mut head = std::mem::take(&mut self.buf);
            head.extend_from_slice(bytes);
            if head.len() < BOM.len() && BOM.starts_with(&head) {
                self.buf = head;
                return;
            }
            self.started = true;
            let rest = head.strip_prefix(BOM).unwrap_or(&head);
            return self.feed(rest, out);
        }
        if self.skip_lf && !bytes.is_empty() {
            self.skip_lf = false;
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
        }
        if self.oversized {
            return;
        }
        if !self.buf.is_empty() {
            // A line is pending: look for its end in the new bytes only.
            #[cfg(test)]
            {
                self.examined += bytes
                    .iter()
                    .take_while(|&&c| c != b'\n' && c != b'\r')
                    .count();
            }
            let Some(end) = bytes.iter().position(|&c| c == b'\n' || c == b'\r') else {
                self.buf.extend_from_slice(bytes);
                self.check_size();
                return;
            };
            self.buf.extend_from_slice(&bytes[..end]);
            let next = self.line_end(bytes, end);
            let line = std::mem::take(&mut self.buf);
            self.line(&line, out);
            self.buf = line;
            self.buf.clear();
            bytes = &bytes[next..];
        }
        // No partial line pending: scan the read in place and keep only its unfinished tail.
        let used = self.scan(bytes, out);
        self.buf.extend_from_slice(&bytes[used..]);
        self.check_size();
    }

    /// Whether an event outgrew [`MAX_EVENT_BYTES`] (the stream is then not decoded further).
    pub fn oversized(&self) -> bool {
        self.oversized
    }

    fn check_size(&mut self) {
        if self.buf.len() + self.data.len() > MAX_EVENT_BYTES {
            self.oversized = true;
            self.buf = Vec::new();
            self.data = Vec::new();
        }
    }

    /// The index after the line terminator at `data[end]` (CR, LF or CRLF; a CR that ends the
    /// read may have its LF in the next one).
    fn line_end(&mut self, data: &[u8], end: usize) -> usize {
        let mut next = end + 1;
        if data[end] == b'\r' {
            if next < data.len() {
                if data[next] == b'\n' {
                    next += 1;
                }
            } else {
                self.skip_lf = true;
            }
        }
        next
    }

    /// Processes every complete line of `data`; returns how many bytes that consumed.
    fn scan(&mut self, data: &[u8], out: &mut Vec<SseEvent>) -> usize {
        let mut start = 0;
        #[cfg(test)]
        {
            self.examined += data.len();
        }
        while let Some(off) = data[start..].iter().position(|&c| c == b'\n' || c == b'\r') {
            let end = start + off;
            let next = self.line_end(data, end);
            self.line(&data[start..end], out);
            start = next;
        }
        start
    }

    /// Every event of a stream that arrives as `reads`, ended as the stream ends (tests and
    /// tools; the client feeds read by read).
    pub fn decode_all<'a>(reads: impl IntoIterator<Item = &'a [u8]>) -> Vec<SseEvent> {
        let mut d = SseDecoder::new();
        let mut out = Vec::new();
        for r in reads {
            d.feed(r, &mut out);
        }
        d.finish(&mut out);
        out
    }

    /// Ends the stream: a final event that lacked its blank line is still dispatched (servers
    /// that close right after the last `data:` line are common), and an unterminated last
    /// line is processed first.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        if self.oversized {
            return;
        }
        if !self.buf.is_empty() {
            let line = std::mem::take(&mut self.buf);
            self.line(&line, out);
        }
        self.dispatch(out);
    }

    fn line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match line.iter().position(|&c| c == b':') {
            Some(p) => {
                let v = &line[p + 1..];
                (&line[..p], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => self.event = Some(String::from_utf8_lossy(value).into_owned()),
            _ => {} // id, retry and unknown fields do not matter to a benchmark client
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = self.event.take();
        if self.has_data {
            self.has_data = false;
            out.push(SseEvent {
                event,
                data: std::mem::take(&mut self.data),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(reads: &[&[u8]]) -> Vec<SseEvent> {
        SseDecoder::decode_all(reads.iter().copied())
    }

    fn data(ev: &[SseEvent]) -> Vec<String> {
        ev.iter()
            .map(|e| String::from_utf8(e.data.clone()).unwrap())
            .collect()
    }

    #[test]
    fn one_event_split_across_reads() {
        let ev = decode(&[b"da", b"ta: {\"a\"", b":1}\n", b"\n"]);
        assert_eq!(data(&ev), ["{\"a\":1}"]);
    }

    #[test]
    fn several_events_in_one_read() {
        let ev = decode(&[b"data: 1\n\ndata: 2\n\ndata: [DONE]\n\n"]);
        assert_eq!(data(&ev), ["1", "2", "[DONE]"]);
        assert!(ev[2].is_done());
    }

    #[test]
    fn crlf_and_cr_line_endings_even_split_between_reads() {
        let ev = decode(&[b"data: a\r\n\r\ndata: b\r", b"\n\r", b"\ndata: c\r\r"]);
        assert_eq!(data(&ev), ["a", "b", "c"]);
    }

    #[test]
    fn comments_and_other_fields_are_skipped() {
        let ev = decode(&[b": keep-alive\n\nid: 7\nretry: 10\ndata: x\n\n: ping\n\n"]);
        assert_eq!(data(&ev), ["x"]);
    }

    #[test]
    fn multi_line_data_and_event_names() {
        let ev = decode(&[b"event: error\ndata: line1\ndata:line2\n\n"]);
        assert_eq!(ev[0].event.as_deref(), Some("error"));
        assert_eq!(data(&ev), ["line1\nline2"]);
    }

    #[test]
    fn utf8_split_inside_a_character() {
        let s = "data: {\"t\":\"héllo 世界\"}\n\n".as_bytes();
        let cut = s.iter().position(|&b| b == 0xE4).unwrap() + 1; // inside 世
        let ev = decode(&[&s[..cut], &s[cut..]]);
        assert_eq!(data(&ev), ["{\"t\":\"héllo 世界\"}"]);
    }

    #[test]
    fn stream_ending_without_blank_line_or_done() {
        let ev = decode(&[b"data: 1\n\ndata: 2"]);
        assert_eq!(data(&ev), ["1", "2"]);
        assert!(!ev.iter().any(SseEvent::is_done));
    }

    #[test]
    fn a_bom_split_across_reads_is_still_skipped() {
        // Found by tests/fuzz.rs: a first read of only 0xEF left the BOM in the first line.
        let s: &[u8] = b"\xEF\xBB\xBFdata: a\n\n";
        assert_eq!(decode(&[&s[..1], &s[1..]]), decode(&[s]));
        assert_eq!(decode(&[&s[..1], &s[1..2], &s[2..]]), decode(&[s]));
        assert_eq!(
            data(&decode(&[b"\xEF", b"data: b\n\n"])),
            Vec::<String>::new()
        );
    }

    #[test]
    fn bom_and_empty_data_lines() {
        let ev = decode(&[b"\xEF\xBB\xBFdata: a\n\ndata\n\n\n\n"]);
        assert_eq!(data(&ev), ["a", ""]);
    }

    #[test]
    fn a_long_line_in_many_reads_is_decoded_whole() {
        let text = "x".repeat(300_000);
        let s = format!("data: {text}\n\ndata: [DONE]\n\n");
        let reads: Vec<&[u8]> = s.as_bytes().chunks(1000).collect();
        assert_eq!(decode(&reads), decode(&[s.as_bytes()]));
        assert_eq!(data(&decode(&reads))[0].len(), 300_000);
        // Linear: each byte is searched for a line end about once (before the fix the pending
        // line was searched again on every read: 300 reads × 150 kB on average).
        let mut d = SseDecoder::new();
        let mut out = Vec::new();
        for r in &reads {
            d.feed(r, &mut out);
        }
        assert!(
            d.examined <= 2 * s.len(),
            "{} bytes searched for {}",
            d.examined,
            s.len()
        );
    }

    #[test]
    fn an_event_over_the_cap_stops_the_decoder() {
        let mut d = SseDecoder::new();
        let mut out = Vec::new();
        d.feed(b"data: ok\n\ndata: ", &mut out);
        let block = vec![b'a'; 1 << 20];
        for _ in 0..5 {
            d.feed(&block, &mut out);
        }
        d.feed(b"\n\ndata: late\n\n", &mut out);
        d.finish(&mut out);
        assert!(d.oversized());
        assert_eq!(data(&out), ["ok"], "nothing after the oversized event");
    }

    #[test]
    fn byte_at_a_time_equals_all_at_once() {
        let s: &[u8] = b"data: {\"x\":1}\r\n\r\n: c\n\ndata: [DONE]\n\n";
        let reads: Vec<&[u8]> = s.chunks(1).collect();
        assert_eq!(decode(&reads), decode(&[s]));
    }
}
