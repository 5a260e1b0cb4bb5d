//! The results table: one row per figure, rendered as Markdown for both stdout and
//! `docs/benchmarks.md`.

/// Whether a figure meets its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Measured and within the target.
    Met,
    /// Measured and outside the target.
    Missed,
    /// Measured; there is no target to meet.
    Info,
    /// Not measured.
    Skipped,
}

/// One line of the table.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    /// What is measured, and how much.
    pub(crate) measurement: String,
    /// ralph's figure.
    pub(crate) ralph: String,
    /// The baseline's figure and the ratio, when the row is a comparison.
    pub(crate) compared: String,
    /// The target, or "–".
    pub(crate) target: String,
    /// Whether the target is met.
    pub(crate) verdict: Verdict,
}

impl Row {
    /// A measured row; `met` is `None` when the row has no target.
    pub(crate) fn measured(
        measurement: &str,
        ralph: String,
        compared: String,
        target: &str,
        met: Option<bool>,
    ) -> Self {
        Self {
            measurement: measurement.to_owned(),
            ralph,
            compared,
            target: target.to_owned(),
            verdict: match met {
                Some(true) => Verdict::Met,
                Some(false) => Verdict::Missed,
                None => Verdict::Info,
            },
        }
    }

    /// A row that could not be measured, saying why.
    pub(crate) fn skipped(measurement: &str, target: &str, why: &str) -> Self {
        Self {
            measurement: measurement.to_owned(),
            ralph: format!("skipped: {why}"),
            compared: "–".to_owned(),
            target: target.to_owned(),
            verdict: Verdict::Skipped,
        }
    }
}

/// The rows as a Markdown table.
pub(crate) fn render(rows: &[Row]) -> String {
    let mut out = String::from(
        "| Measurement | ralph | Compared with | Target | Met |\n|---|---|---|---|---|\n",
    );
    for row in rows {
        let verdict = match row.verdict {
            Verdict::Met => "yes",
            Verdict::Missed => "**no**",
            Verdict::Info => "–",
            Verdict::Skipped => "skipped",
        };
        let cells = [
            row.measurement.as_str(),
            &row.ralph,
            &row.compared,
            &row.target,
            verdict,
        ];
        out.push('|');
        for cell in cells {
            // A `|` or a newline inside a cell would break the table.
            out.push(' ');
            out.push_str(&cell.replace('|', "\\|").replace('\n', " "));
            out.push_str(" |");
        }
        out.push('\n');
    }
    out
}
