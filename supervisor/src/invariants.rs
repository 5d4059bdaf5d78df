//! Rules the whole of bosund's code keeps (every area's crate and bosund's own), checked over
//! its source.

use std::path::Path;

/// Every `.rs` file under `dir`, with its text.
fn sources(dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            out.push((path.display().to_string(), text));
        }
    }
}

/// The process invariant (ARCHITECTURE.md): what bosund starts for a moment is started by
/// `bosun_shared::process`'s helpers, which give it a group of its own, a deadline and a
/// guard. The runner alone is started otherwise: it leaves for a session of its own and is
/// recorded before it gets its plan.
#[test]
fn every_process_started_for_a_moment_goes_through_the_helpers() {
    let mut files = Vec::new();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    sources(&manifest.join("src"), &mut files);
    sources(&manifest.join("../actors"), &mut files);
    let mut wrong = Vec::new();
    // This file names what it looks for.
    files.retain(|(path, _)| !path.ends_with("src/invariants.rs"));
    for (path, text) in &files {
        let starts = text.contains("Command::new(");
        let helped = text.contains("Helper::spawn(") || text.contains("output_blocking(");
        let is_runner = path.ends_with("actors/runs/src/spawn.rs");
        let own_group = text.contains(".process_group(") || text.contains(".kill_on_drop(");
        if starts && !helped && !is_runner || own_group {
            wrong.push(path.clone());
        }
    }
    assert!(wrong.is_empty(), "started without the helpers: {wrong:?}");
}
