//! A follower that reads the run's log file itself, under adversarial schedules: the file is
//! written byte by byte at random (so a reader can meet half a record: a write in progress),
//! a write cut short is cut off again, bosund's word of how far the file goes (`LogProgress`)
//! comes late, repeated or several records at once, the connection breaks (the follower opens
//! the file anew and goes on from its next seq), and the follower falls back to chunks sent
//! through bosund (repeats included). What it prints must be exactly the run's output, every
//! chunk once, in order.
//!
//! A failing seed is printed; replay one with `BOSUN_FOLLOW_SEED=<seed>`.

use std::os::unix::fs::FileExt;
use std::path::Path;

use bosun_shared::Timestamp;
use bosun_shared::logfile::{LogChunk, LogFile};
use bosun_shared::run::Stream;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::Printer;

fn printer(stream: Option<Stream>) -> Printer<Vec<u8>> {
    Printer {
        out: Vec::new(),
        next: 1,
        at_line_start: true,
        stream,
        timestamps: false,
        json: false,
        buf: Vec::new(),
    }
}

/// The run's whole log, as its writer writes it: the chunks, the file's bytes, and where each
/// record ends.
struct Image {
    chunks: Vec<LogChunk>,
    bytes: Vec<u8>,
    /// `ends[i]`: the file's length once the records up to seq `i` are whole (`ends[0]` = 0).
    ends: Vec<u64>,
}

fn image(dir: &Path, rng: &mut StdRng, n: u64) -> Image {
    let path = dir.join("image");
    let mut file = LogFile::open_for_append(&path).unwrap_or_else(|e| panic!("{e}"));
    let mut chunks = Vec::new();
    let mut ends = vec![0];
    for seq in 1..=n {
        let len = rng.random_range(1..200);
        let c = LogChunk {
            seq,
            stream: if rng.random_bool(0.3) {
                Stream::Stderr
            } else {
                Stream::Stdout
            },
            at: Timestamp::from_millis(seq),
            data: (0..len).map(|i| b'a' + ((seq + i) % 26) as u8).collect(),
        };
        file.append([&c]).unwrap_or_else(|e| panic!("{e}"));
        ends.push(file.end());
        chunks.push(c);
    }
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{e}"));
    Image {
        chunks,
        bytes,
        ends,
    }
}

/// One schedule; `Err` says what went wrong.
fn schedule(seed: u64, n: u64, stream: Option<Stream>) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let img = image(dir.path(), &mut rng, n);
    let path = dir.path().join("log");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&path)
        .map_err(|e| e.to_string())?;
    let mut p = printer(stream);
    let mut reader = None;
    let (mut written, mut reported) = (0u64, 0u64);
    let mut through_bosund = false;
    let whole = |written: u64| img.ends.iter().rposition(|e| *e <= written).unwrap_or(0) as u64;
    let wanted = |c: &LogChunk| stream.is_none_or(|s| s == c.stream);
    let mut steps = 0;
    while p.next <= n {
        steps += 1;
        if steps > 100_000 {
            return Err(format!("no progress: next {} of {n}", p.next));
        }
        match rng.random_range(0..100) {
            // The writer writes on, any number of bytes: a record may be half there.
            0..=39 => {
                let more = rng.random_range(1..400u64);
                let to = (written + more).min(img.bytes.len() as u64);
                file.write_all_at(&img.bytes[written as usize..to as usize], written)
                    .map_err(|e| e.to_string())?;
                written = to;
            }
            // A write cut short is cut off: the file ends with whole records again.
            40..=44 => {
                let cut = img.ends[whole(written) as usize];
                file.set_len(cut).map_err(|e| e.to_string())?;
                written = cut;
            }
            // The connection breaks: the follower opens the file anew, from its next seq.
            45..=49 => {
                reader = None;
                if rng.random_bool(0.2) {
                    through_bosund = !through_bosund;
                }
            }
            // bosund says how far the file goes: anything up to what is whole, never less than
            // it said before on this connection (a new one may say less).
            50..=84 if !through_bosund => {
                let whole = whole(written);
                if reported < whole {
                    reported = rng.random_range(reported..=whole);
                }
                p.read_file("r", &mut reader, &path, reported)
                    .map_err(|e| format!("upto {reported}: {e}"))?;
            }
            // Through bosund: the chunks themselves, from a little before the next one (a
            // repeat is passed over), only those of the stream asked for.
            50..=84 => {
                let whole = whole(written);
                let from = p.next.saturating_sub(rng.random_range(0..3)).max(1);
                let to = whole.min(from + rng.random_range(0..5));
                for c in img.chunks[(from - 1) as usize..to as usize]
                    .iter()
                    .filter(|c| wanted(c))
                {
                    p.chunk("r", c.seq, c.stream, c.at, &c.data)
                        .map_err(|e| format!("chunk {}: {e}", c.seq))?;
                }
            }
            _ => {}
        }
    }
    let want: Vec<u8> = img
        .chunks
        .iter()
        .filter(|c| wanted(c))
        .flat_map(|c| c.data.iter().copied())
        .collect();
    if p.out != want {
        let same = p.out.iter().zip(&want).take_while(|(a, b)| a == b).count();
        return Err(format!(
            "printed {} bytes, the run wrote {}; they differ from byte {same}",
            p.out.len(),
            want.len()
        ));
    }
    Ok(())
}

fn seeds(count: u64) -> Vec<u64> {
    match std::env::var("BOSUN_FOLLOW_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        Some(seed) => vec![seed],
        None => (0..count).map(|i| 0x5eed_0000 + i).collect(),
    }
}

#[test]
fn a_direct_follower_prints_every_chunk_once_in_order_under_random_schedules() {
    for seed in seeds(300) {
        if let Err(e) = schedule(seed, 120, None) {
            panic!("seed {seed}: {e}");
        }
    }
}

#[test]
fn a_direct_follower_of_one_stream_prints_exactly_that_stream() {
    for seed in seeds(100) {
        if let Err(e) = schedule(seed, 120, Some(Stream::Stdout)) {
            panic!("seed {seed}: {e}");
        }
    }
}

#[test]
fn a_file_shorter_than_bosund_says_is_an_error_never_a_gap() {
    let mut rng = StdRng::seed_from_u64(7);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let img = image(dir.path(), &mut rng, 10);
    let path = dir.path().join("log");
    // Records 1..=4 whole, and half of the fifth (what a damaged or cut log leaves).
    let cut = (img.ends[4] + img.ends[5]) / 2;
    std::fs::write(&path, &img.bytes[..cut as usize]).unwrap_or_else(|e| panic!("{e}"));
    let mut p = printer(None);
    let mut reader = None;
    let err = match p.read_file("r", &mut reader, &path, 6) {
        Ok(()) => panic!("a log file short of what bosund said was read as whole"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains("ends after chunk 4, but the run wrote 6"),
        "{err}"
    );
    let want: Vec<u8> = img.chunks[..4]
        .iter()
        .flat_map(|c| c.data.iter().copied())
        .collect();
    assert_eq!(
        p.out, want,
        "what is there is printed, and nothing after it"
    );
}
