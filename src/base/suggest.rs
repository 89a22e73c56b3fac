//! "Did you mean ...?" for names a user misspelled: field names, jitter names, modes.
//!
//! An error that names the closest valid spelling turns a typo into a one-second fix, so every
//! place that rejects an unknown name asks this module for a suggestion.

/// The candidate closest to `given` by edit distance, if it is close enough to be a plausible
/// typo: at most a third of the longer name's length, and at least one edit allowed.
/// Ties go to the earlier candidate, so the answer does not depend on hashing.
pub fn did_you_mean<'a>(
    given: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|candidate| (edit_distance(given, candidate), candidate))
        .filter(|(distance, candidate)| {
            let longest = given.chars().count().max(candidate.chars().count());
            *distance <= (longest / 3).max(1)
        })
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// Edit distance counted in characters, case-insensitively, where a swap of two neighbours
/// (`crahs` for `crash`) is one edit (optimal string alignment distance).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_lowercase().chars().collect();
    let b: Vec<char> = b.to_lowercase().chars().collect();
    // distance[i][j]: distance between a[..i] and b[..j].
    let mut distance = vec![vec![0; b.len() + 1]; a.len() + 1];
    for (i, row) in distance.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in distance[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let substitution = distance[i - 1][j - 1] + usize::from(a[i - 1] != b[j - 1]);
            let mut best = substitution
                .min(distance[i - 1][j] + 1)
                .min(distance[i][j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(distance[i - 2][j - 2] + 1);
            }
            distance[i][j] = best;
        }
    }
    distance[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("Attempt", "attempt"), 0);
        assert_eq!(edit_distance("crahs", "crash"), 1);
    }

    #[test]
    fn suggests_the_nearest_plausible_name() {
        let fields = ["attempt", "max_attempts", "now_ms", "deadline_ms"];
        assert_eq!(did_you_mean("atempt", fields), Some("attempt"));
        assert_eq!(did_you_mean("deadline", fields), Some("deadline_ms"));
        assert_eq!(did_you_mean("nowms", fields), Some("now_ms"));
        assert_eq!(did_you_mean("colour", fields), None);
    }
}
