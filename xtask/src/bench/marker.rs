//! Marker scanning throughput, measured by `ralph-marker`'s own `throughput` example built in
//! release mode: xtask itself runs as a debug build, which would measure the wrong code.

use super::harness::{self, Ctx, Result};
use super::table::Row;

const COMMAND: &str = "cargo run --release -p ralph-marker --example throughput";

/// The example's data sets reported here, with their row names.
const SETS: [(&str, &str); 2] = [
    ("marker-free", "Marker scanning, marker-free output"),
    (
        "dense",
        "Marker scanning, output dense with `<`, `<!-` and `<!-- ralph` near-markers",
    ),
];

/// One line of the example's output: `  marker-free plain:  12.34 GB/s over 1024 MiB (0 findings)`.
struct Line {
    set: String,
    mode: String,
    gbps: f64,
    mib: u64,
}

/// Measures the plain scanner (and, alongside, the ANSI-skipping one) on each data set.
pub(crate) fn measure(ctx: &Ctx) -> Vec<Row> {
    eprintln!("bench: marker scanning ({COMMAND})");
    let lines = match run_example(ctx) {
        Ok(lines) => lines,
        Err(why) => {
            return SETS
                .iter()
                .map(|(_, name)| Row::skipped(name, "–", &why))
                .collect();
        }
    };
    SETS.iter()
        .map(|(set, name)| {
            let find = |mode: &str| lines.iter().find(|l| l.set == *set && l.mode == mode);
            match (find("plain"), find("ansi")) {
                (Some(plain), ansi) => Row::measured(
                    &format!("{name}, {} MiB in 64 KiB chunks", plain.mib),
                    format!("{:.2} GB/s", plain.gbps),
                    ansi.map_or_else(
                        || "–".to_owned(),
                        |a| format!("ANSI-skipping scanner: {:.2} GB/s", a.gbps),
                    ),
                    "–",
                    None,
                ),
                (None, _) => Row::skipped(
                    name,
                    "–",
                    &format!("`{COMMAND}` printed no \"{set} plain\" line"),
                ),
            }
        })
        .collect()
}

fn run_example(ctx: &Ctx) -> Result<Vec<Line>> {
    let mut cmd = ctx.cargo();
    cmd.args([
        "run",
        "--quiet",
        "--release",
        "-p",
        "ralph-marker",
        "--example",
        "throughput",
    ]);
    let out = cmd
        .output()
        .map_err(|err| format!("cannot run `{COMMAND}`: {err}"))?;
    if !out.status.success() {
        return Err(harness::failure(&cmd, &out.status, &out.stderr));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(parse_line)
        .collect())
}

fn parse_line(line: &str) -> Option<Line> {
    let (label, rest) = line.split_once(':')?;
    let mut label = label.split_whitespace();
    let (set, mode) = (label.next()?, label.next()?);
    let words: Vec<&str> = rest.split_whitespace().collect();
    // `12.34 GB/s over 1024 MiB (...)`
    match words.as_slice() {
        [gbps, "GB/s", "over", mib, "MiB", ..] => Some(Line {
            set: set.to_owned(),
            mode: mode.to_owned(),
            gbps: gbps.parse().ok()?,
            mib: mib.parse().ok()?,
        }),
        _ => None,
    }
}
