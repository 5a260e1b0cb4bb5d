//! Measures scanner throughput: 1 GiB of marker-free output, output dense with `<` and
//! near-markers, and output with a finding every ~90 bytes, all fed in 64 KiB chunks, for the
//! plain and the ANSI-skipping scanner.
//!
//! The chunks are taken in turn from a 32 MiB buffer so that the figures include reading from
//! memory rather than from a cache-resident chunk.
//!
//! Run with `cargo run --release --example throughput -p ralph-marker`.

#![allow(clippy::print_stdout)]

use std::hint::black_box;
use std::time::Instant;

use ralph_marker::MarkerScanner;

const CHUNK: usize = 64 * 1024;
const GIB: usize = 1024 * 1024 * 1024;
const SOURCE: usize = 32 * 1024 * 1024;

/// `SOURCE` bytes of `pattern` repeated.
fn output_of(pattern: &[u8]) -> Vec<u8> {
    pattern.iter().copied().cycle().take(SOURCE).collect()
}

/// Feeds `total` bytes of `output` (cycled) in chunks; returns GB/s and the number of findings.
fn measure(mut scanner: MarkerScanner, output: &[u8], total: usize) -> (f64, usize) {
    let mut found = Vec::new();
    let mut count = 0;
    let start = Instant::now();
    for chunk in output.chunks(CHUNK).cycle().take(total / CHUNK) {
        scanner.feed(black_box(chunk), &mut found);
        count += found.len();
        found.clear();
    }
    scanner.finish(&mut found);
    let secs = start.elapsed().as_secs_f64();
    (
        scanner.bytes_seen() as f64 / secs / 1e9,
        count + found.len(),
    )
}

fn main() {
    let quiet = output_of(
        b"test engine::tests::idle_wait_resets_after_activity ... ok (0.02s)\n\
          Compiling ralph-engine v0.1.0 (/work/main/crates/ralph-engine)\n",
    );
    // `<` every few bytes, comments and openings that fail at every step of `<!-- ralph:`.
    let dense = output_of(
        b"if a < b && c <= d { <!-- note --> } <!- x <!-- ralph is great --> <<< \
          <!--ralph <!-- RALPH Vec<u8> <!--\n\tralp <div><br/></div> ",
    );
    // A marker and a diagnostic in every 90 bytes: the allocating path.
    let markers = output_of(
        b"<!-- ralph:state blocked reason=\"no db\" --> text <!-- ralph:state 9x --> more text\n",
    );
    let runs: [(&str, &[u8], usize); 3] = [
        ("marker-free", &quiet, GIB),
        ("dense", &dense, GIB / 4),
        ("markers", &markers, GIB / 16),
    ];
    for (name, chunk, total) in runs {
        for (mode, scanner) in [
            ("plain", MarkerScanner::new as fn() -> MarkerScanner),
            ("ansi", MarkerScanner::skipping_ansi),
        ] {
            let (gbps, findings) = measure(scanner(), chunk, total);
            println!(
                "{name:>12} {mode:>5}: {gbps:6.2} GB/s over {} MiB ({findings} findings)",
                total >> 20
            );
        }
    }
}
