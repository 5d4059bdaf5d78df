//! The two frames that carry a program's output, a runner's `Output` and a UI's `Log` event,
//! in their binary form: the length prefix, a fixed header and the output's raw bytes (the
//! layout is in [`super::frame`] and `docs/protocol.md`). They carry nearly every byte bosun
//! moves, and this way those bytes are never escaped, scanned or copied as text. Readers take
//! them as [`RunnerMsg::Output`](super::runner::RunnerMsg::Output) and
//! [`ServerFrame::Event`](super::ui::ServerFrame::Event) with
//! [`Event::Log`](super::ui::Event::Log), and still take the JSON form older peers send.

use super::frame::{
    KIND_OUTPUT, LOG_HEADER_LEN, OUTPUT_HEADER_LEN, decode_binary, encode_frame, put_header,
};
use super::runner::RunnerMsg;
use bosun_shared::Timestamp;
use bosun_shared::run::Stream;

/// Encodes a runner's `Output` frame (length prefix included).
pub fn output_frame(seq: u64, stream: Stream, at: Timestamp, data: &[u8]) -> Vec<u8> {
    let mut buf = Vec::with_capacity(4 + OUTPUT_HEADER_LEN + data.len());
    put_header(&mut buf, None, seq, stream, at, data.len());
    buf.extend_from_slice(data);
    buf
}

/// Encodes a UI's `Log` event frame (length prefix included).
pub fn log_event_frame(sub: u64, seq: u64, stream: Stream, at: Timestamp, data: &[u8]) -> Vec<u8> {
    let mut buf = Vec::with_capacity(4 + LOG_HEADER_LEN + data.len());
    put_header(&mut buf, Some(sub), seq, stream, at, data.len());
    buf.extend_from_slice(data);
    buf
}

/// The start of a UI's `Log` event frame (length prefix and header) whose `len` bytes of
/// output follow: a writer sends these and the output's own buffer one after the other, so the
/// output is not copied into a frame first.
pub fn log_event_head(sub: u64, seq: u64, stream: Stream, at: Timestamp, len: usize) -> Vec<u8> {
    let mut buf = Vec::with_capacity(4 + LOG_HEADER_LEN);
    put_header(&mut buf, Some(sub), seq, stream, at, len);
    buf
}

/// The JSON form of an [`output_frame`] (length prefix included), for a daemon too old to
/// read binary frames. Any other frame is returned as it is.
pub fn output_frame_as_json(frame: &[u8]) -> Vec<u8> {
    let json = match frame.get(4..) {
        Some(body) if body.first() == Some(&KIND_OUTPUT) => match decode_binary(body) {
            Ok(super::frame::BinaryFrame::Output(chunk)) => {
                encode_frame(&RunnerMsg::Output(chunk)).ok()
            }
            Ok(super::frame::BinaryFrame::Log { .. }) | Err(_) => None,
        },
        Some(_) | None => None,
    };
    json.unwrap_or_else(|| frame.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{FrameError, FrameReader};
    use crate::runner::OutputChunk;
    use crate::ui::{Event, ServerFrame};
    use crate::{LogBytes, MAX_FRAME_LEN};

    fn samples() -> Vec<Vec<u8>> {
        vec![
            Vec::new(),
            b"plain line\n".to_vec(),
            b"tab\there \"quoted\" back\\slash\r\n\x1b[31mred\x1b[0m\x00\x7f".to_vec(),
            "héllo wörld ✓ 🚀\n".as_bytes().to_vec(),
            vec![0xff, 0xfe, b'a', b'\n'],
            // Every byte value, and a cut through a character.
            (0..=255u8).collect(),
            "é".as_bytes()[..1].to_vec(),
            // Large: near the limit, and not UTF-8.
            (0..MAX_FRAME_LEN - LOG_HEADER_LEN)
                .map(|i| (i * 7 % 251) as u8)
                .collect(),
        ]
    }

    async fn read_all<T: crate::frame::Decode>(frames: Vec<u8>) -> Result<Vec<T>, FrameError> {
        let mut r = FrameReader::new(std::io::Cursor::new(frames));
        let mut out = Vec::new();
        while let Some(m) = r.read::<T>().await? {
            out.push(m);
        }
        Ok(out)
    }

    fn as_output(msg: &RunnerMsg) -> Option<&OutputChunk> {
        match msg {
            RunnerMsg::Output(c) => Some(c),
            RunnerMsg::Started(_)
            | RunnerMsg::Logged { .. }
            | RunnerMsg::OutputHeld { .. }
            | RunnerMsg::LogFlush { .. }
            | RunnerMsg::Exited(_)
            | RunnerMsg::Ask(_)
            | RunnerMsg::Delivered { .. }
            | RunnerMsg::Withdrawn { .. }
            | RunnerMsg::WantPlan
            | RunnerMsg::Token(_)
            | RunnerMsg::ServerAsk(_)
            | RunnerMsg::HeldBack { .. }
            | RunnerMsg::Unsaved { .. } => None,
        }
    }

    #[test]
    fn the_example_in_the_protocol_reference_is_what_is_sent() {
        let frame = output_frame(
            1,
            Stream::Stdout,
            Timestamp::from_millis(1_700_000_000_000),
            b"hi\n",
        );
        let doc = "00 00 00 15 01 00 00 00 00 00 00 00 01 01 00 00 01 8b cf e5 68 00 68 69 0a";
        let hex: Vec<String> = frame.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex.join(" "), doc);
        let log = log_event_frame(
            4,
            1,
            Stream::Stdout,
            Timestamp::from_millis(1_700_000_000_000),
            b"hi\n",
        );
        assert_eq!(&log[..5], [0, 0, 0, 29, 2]);
        assert_eq!(&log[5..13], 4u64.to_be_bytes());
        assert_eq!(&log[13..], &frame[5..]);
    }

    #[tokio::test]
    async fn output_frames_round_trip_every_byte() -> Result<(), FrameError> {
        let mut stream = Vec::new();
        for (i, data) in samples().iter().enumerate() {
            let frame = output_frame(i as u64, Stream::Stderr, Timestamp::from_millis(42), data);
            let len = u32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize;
            assert_eq!(len, frame.len() - 4);
            assert_eq!(len, OUTPUT_HEADER_LEN + data.len());
            assert_eq!(&frame[4 + OUTPUT_HEADER_LEN..], &data[..], "raw, unescaped");
            stream.extend_from_slice(&frame);
        }
        let got = read_all::<RunnerMsg>(stream).await?;
        assert_eq!(got.len(), samples().len());
        for (i, (msg, data)) in got.iter().zip(samples()).enumerate() {
            let c = as_output(msg);
            assert_eq!(
                c.map(|c| (c.seq, c.stream, c.at.as_millis())),
                Some((i as u64, Stream::Stderr, 42))
            );
            assert!(c.is_some_and(|c| c.data.0 == data), "sample {i}");
        }
        Ok(())
    }

    #[tokio::test]
    async fn log_event_frames_round_trip_every_byte() -> Result<(), FrameError> {
        let mut stream = Vec::new();
        for (i, data) in samples().iter().enumerate() {
            let at = Timestamp::from_millis(u64::MAX - 1);
            stream.extend_from_slice(&log_event_frame(u64::MAX, i as u64, Stream::Note, at, data));
        }
        let got = read_all::<ServerFrame>(stream).await?;
        assert_eq!(got.len(), samples().len());
        for (i, (frame, want)) in got.into_iter().zip(samples()).enumerate() {
            let ServerFrame::Event(Event::Log {
                sub,
                seq,
                stream,
                at,
                data,
            }) = frame
            else {
                panic!("{frame:?}");
            };
            assert_eq!(
                (sub, seq, stream, at.as_millis()),
                (u64::MAX, i as u64, Stream::Note, u64::MAX - 1)
            );
            assert!(data.0 == want, "sample {i}");
        }
        Ok(())
    }

    #[tokio::test]
    async fn the_old_json_forms_still_decode() -> Result<(), FrameError> {
        // What a runner or a daemon of before the binary frames sent, byte for byte.
        let mut old = Vec::new();
        for body in [
            &br#"{"type":"output","seq":3,"stream":"stdout","at":5,"data":"hi \"there\"\n"}"#[..],
            br#"{"type":"output","seq":4,"stream":"note","at":6,"data":{"base64":"/wA="}}"#,
        ] {
            old.extend_from_slice(&(body.len() as u32).to_be_bytes());
            old.extend_from_slice(body);
        }
        let got = read_all::<RunnerMsg>(old).await?;
        let got: Vec<_> = got.iter().filter_map(as_output).collect();
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].seq, got[0].stream), (3, Stream::Stdout));
        assert_eq!(got[0].data.as_slice(), b"hi \"there\"\n");
        assert_eq!((got[1].seq, got[1].stream), (4, Stream::Note));
        assert_eq!(got[1].data.as_slice(), [0xff, 0x00]);

        // Every sample as serde writes it, mixed with binary frames on one stream.
        let mut mixed = Vec::new();
        for data in samples().into_iter().take(7) {
            let json = ServerFrame::Event(Event::Log {
                sub: 1,
                seq: 2,
                stream: Stream::Stdout,
                at: Timestamp::from_millis(3),
                data: LogBytes(data.clone()),
            });
            mixed.extend_from_slice(&encode_frame(&json)?);
            let at = Timestamp::from_millis(3);
            mixed.extend_from_slice(&log_event_frame(1, 2, Stream::Stdout, at, &data));
        }
        let got = read_all::<ServerFrame>(mixed).await?;
        let datas: Vec<Vec<u8>> = got
            .into_iter()
            .filter_map(|f| {
                let ServerFrame::Event(Event::Log { data, .. }) = f else {
                    return None;
                };
                Some(data.0)
            })
            .collect();
        let want: Vec<Vec<u8>> = samples()
            .into_iter()
            .take(7)
            .flat_map(|d| [d.clone(), d])
            .collect();
        assert!(datas == want);
        Ok(())
    }

    #[tokio::test]
    async fn a_log_frame_is_not_runner_output_nor_the_other_way() -> Result<(), FrameError> {
        let at = Timestamp::from_millis(1);
        let log = log_event_frame(1, 1, Stream::Stdout, at, b"x");
        let err = read_all::<RunnerMsg>(log)
            .await
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("a frame is not valid: a binary log frame came where it has no place")
        );
        let out = output_frame(1, Stream::Stdout, at, b"x");
        assert!(matches!(
            read_all::<ServerFrame>(out).await,
            Err(FrameError::Malformed { .. })
        ));
        Ok(())
    }

    #[tokio::test]
    async fn the_json_fallback_carries_the_same_chunk() -> Result<(), FrameError> {
        for data in samples().into_iter().take(7) {
            let at = Timestamp::from_millis(9);
            let json = output_frame_as_json(&output_frame(5, Stream::Stderr, at, &data));
            assert_eq!(json.get(4), Some(&b'{'));
            let got = read_all::<RunnerMsg>(json).await?;
            let c = got.first().and_then(as_output);
            assert_eq!(
                c.map(|c| (c.seq, c.stream, c.at.as_millis())),
                Some((5, Stream::Stderr, 9))
            );
            assert!(c.is_some_and(|c| c.data.0 == data));
        }
        let other = b"\0\0\0\x02{}".to_vec();
        assert_eq!(output_frame_as_json(&other), other);
        Ok(())
    }
}
