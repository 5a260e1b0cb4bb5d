//! "Did you mean" suggestions for misspelt keys and names.

/// The known word closest to `word`, when it is close enough to be a likely typo.
///
/// Closeness is the optimal-string-alignment distance (a swap of two neighbours counts once, so
/// `max_dealy` is one step from `max_delay`), compared case-insensitively, with `-` and `_`
/// treated as one character. A third of the word's length, at least one, is allowed.
pub fn nearest<'k>(word: &str, known: &[&'k str]) -> Option<&'k str> {
    let normal = normalize(word);
    let allowed = (normal.chars().count() / 3).max(1);
    known
        .iter()
        .map(|candidate| (distance(&normal, &normalize(candidate)), *candidate))
        .filter(|(d, _)| *d <= allowed)
        .min_by_key(|(d, _)| *d)
        .map(|(_, candidate)| candidate)
}

fn normalize(word: &str) -> String {
    word.to_lowercase().replace('-', "_")
}

/// Optimal string alignment distance between `a` and `b`, over characters.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let width = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * width];
    for (i, row) in d.chunks_mut(width).enumerate() {
        row[0] = i;
    }
    for (j, cell) in d.iter_mut().take(width).enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[(i - 1) * width + j] + 1)
                .min(d[i * width + j - 1] + 1)
                .min(d[(i - 1) * width + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[(i - 2) * width + j - 2] + 1);
            }
            d[i * width + j] = best;
        }
    }
    d[a.len() * width + b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    const IDLE: &[&str] = &["delay", "backoff", "max_delay", "max"];

    #[test]
    fn swapped_letters_suggest_the_key() {
        assert_eq!(nearest("max_dealy", IDLE), Some("max_delay"));
    }

    #[test]
    fn dash_for_underscore_and_case_suggest_the_key() {
        assert_eq!(nearest("Max-Delay", IDLE), Some("max_delay"));
    }

    #[test]
    fn unrelated_word_suggests_nothing() {
        assert_eq!(nearest("colour", IDLE), None);
        assert_eq!(nearest("description", IDLE), None);
    }

    #[test]
    fn distance_counts_edits() {
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("ab", "ba"), 1);
        assert_eq!(distance("", "abc"), 3);
    }
}
