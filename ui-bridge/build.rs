//! Rebuilds the crate when the web UI's assets change: they are embedded in the binary.

fn main() {
    println!("cargo:rerun-if-changed=assets");
}
