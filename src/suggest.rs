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

/// Levenshtein distance counted in characters, case-insensitively.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_lowercase().chars().collect();
    let b: Vec<char> = b.to_lowercase().chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, &ca) in a.iter().enumerate() {
        current[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("Attempt", "attempt"), 0);
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
