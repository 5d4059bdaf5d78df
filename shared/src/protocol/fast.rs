//! Hand-made encoding of the two frames that carry a program's output: a runner's `Output` and
//! a UI's `Log` event. They carry nearly every byte bosun moves, and serde_json escapes strings
//! one byte at a time; here, runs of bytes that need no escaping (almost all of a log) are found
//! eight at a time and copied whole. The frames are exactly what serde would decode as
//! [`RunnerMsg::Output`](super::runner::RunnerMsg::Output) and
//! [`ServerFrame::Event`](super::ui::ServerFrame::Event) with [`Event::Log`](super::ui::Event::Log);
//! the tests decode them with serde to make sure.

use std::io::Write;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::Timestamp;
use crate::run::Stream;

/// Encodes a runner's `Output` frame (length prefix included).
pub fn output_frame(seq: u64, stream: Stream, at: Timestamp, data: &[u8]) -> Vec<u8> {
    let mut buf = start(data.len());
    let _ = write!(
        buf,
        "{{\"type\":\"output\",\"seq\":{seq},\"stream\":\"{}\",\"at\":{},\"data\":",
        stream_name(stream),
        at.as_millis()
    );
    finish(buf, data)
}

/// Encodes a UI's `Log` event frame (length prefix included).
pub fn log_event_frame(sub: u64, seq: u64, stream: Stream, at: Timestamp, data: &[u8]) -> Vec<u8> {
    let mut buf = start(data.len());
    let _ = write!(
        buf,
        "{{\"type\":\"event\",\"event\":\"log\",\"sub\":{sub},\"seq\":{seq},\"stream\":\"{}\",\"at\":{},\"data\":",
        stream_name(stream),
        at.as_millis()
    );
    finish(buf, data)
}

fn stream_name(s: Stream) -> &'static str {
    match s {
        Stream::Stdout => "stdout",
        Stream::Stderr => "stderr",
        Stream::Note => "note",
    }
}

fn start(data_len: usize) -> Vec<u8> {
    let mut buf = Vec::with_capacity(data_len + data_len / 16 + 160);
    buf.extend_from_slice(&[0; 4]);
    buf
}

fn finish(mut buf: Vec<u8>, data: &[u8]) -> Vec<u8> {
    write_bytes(&mut buf, data);
    buf.push(b'}');
    let len = (buf.len() - 4) as u32;
    buf[..4].copy_from_slice(&len.to_be_bytes());
    buf
}

/// Writes bytes as [`super::LogBytes`] serializes them: a JSON string when they are UTF-8,
/// otherwise `{"base64":"…"}`.
pub fn write_bytes(out: &mut Vec<u8>, data: &[u8]) {
    if std::str::from_utf8(data).is_err() {
        out.extend_from_slice(b"{\"base64\":\"");
        out.extend_from_slice(STANDARD.encode(data).as_bytes());
        out.extend_from_slice(b"\"}");
        return;
    }
    out.push(b'"');
    let mut i = 0;
    let mut plain_from = 0;
    while i < data.len() {
        // Eight bytes at a time while none of them needs escaping.
        if i + 8 <= data.len() {
            let mut word = [0u8; 8];
            word.copy_from_slice(&data[i..i + 8]);
            if !needs_escape(u64::from_le_bytes(word)) {
                i += 8;
                continue;
            }
        }
        let b = data[i];
        if b < 0x20 || b == b'"' || b == b'\\' {
            out.extend_from_slice(&data[plain_from..i]);
            escape(out, b);
            plain_from = i + 1;
        }
        i += 1;
    }
    out.extend_from_slice(&data[plain_from..]);
    out.push(b'"');
}

/// Whether any of the eight bytes is below 0x20, a quote or a backslash.
fn needs_escape(w: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let has_zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH != 0;
    let below_space = w.wrapping_sub(ONES * 0x20) & !w & HIGH != 0;
    below_space || has_zero(w ^ (ONES * b'"' as u64)) || has_zero(w ^ (ONES * b'\\' as u64))
}

fn escape(out: &mut Vec<u8>, b: u8) {
    match b {
        b'"' => out.extend_from_slice(b"\\\""),
        b'\\' => out.extend_from_slice(b"\\\\"),
        b'\n' => out.extend_from_slice(b"\\n"),
        b'\r' => out.extend_from_slice(b"\\r"),
        b'\t' => out.extend_from_slice(b"\\t"),
        0x08 => out.extend_from_slice(b"\\b"),
        0x0c => out.extend_from_slice(b"\\f"),
        _ => {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.extend_from_slice(b"\\u00");
            out.push(HEX[(b >> 4) as usize]);
            out.push(HEX[(b & 0xf) as usize]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::frame::decode_body;
    use crate::protocol::runner::RunnerMsg;
    use crate::protocol::ui::{Event, ServerFrame};

    fn samples() -> Vec<Vec<u8>> {
        let mut v: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"plain line\n".to_vec(),
            b"tab\there \"quoted\" back\\slash\r\n\x1b[31mred\x1b[0m\x00\x7f".to_vec(),
            "héllo wörld ✓ 🚀\n".as_bytes().to_vec(),
            vec![0xff, 0xfe, b'a', b'\n'],
        ];
        // Every byte value at every position of an 8-byte word.
        for b in 0u8..=0x7f {
            for pos in 0..9 {
                let mut s = vec![b'x'; 17];
                s[pos] = b;
                v.push(s);
            }
        }
        v
    }

    #[test]
    fn output_frames_decode_with_serde_to_the_same_bytes() {
        for data in samples() {
            let frame = output_frame(7, Stream::Stderr, Timestamp::from_millis(42), &data);
            let len = u32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize;
            assert_eq!(len, frame.len() - 4);
            match decode_body::<RunnerMsg>(&frame[4..]) {
                Ok(RunnerMsg::Output(c)) => {
                    assert_eq!(c.data.0, data, "{:?}", String::from_utf8_lossy(&frame[4..]));
                    assert_eq!((c.seq, c.stream, c.at.as_millis()), (7, Stream::Stderr, 42));
                }
                other => panic!("{other:?} from {:?}", String::from_utf8_lossy(&frame[4..])),
            }
        }
    }

    #[test]
    fn log_event_frames_decode_with_serde_to_the_same_bytes() {
        for data in samples() {
            let frame = log_event_frame(3, 9, Stream::Stdout, Timestamp::from_millis(1), &data);
            match decode_body::<ServerFrame>(&frame[4..]) {
                Ok(ServerFrame::Event(Event::Log {
                    sub,
                    seq,
                    stream,
                    at,
                    data: d,
                })) => {
                    assert_eq!(d.0, data);
                    assert_eq!(
                        (sub, seq, stream, at.as_millis()),
                        (3, 9, Stream::Stdout, 1)
                    );
                }
                other => panic!("{other:?}"),
            }
        }
    }
}
