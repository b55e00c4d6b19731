//! A tiny glob for tool names, session ids and chat targets: `*` matches any run of
//! characters (also none), `?` exactly one, everything else itself, case-sensitively.
//! No classes, no escapes: tool names never need them, and a crate would be heavier
//! than these twenty lines. Matching is iterative with one backtrack point, so it is
//! linear-ish and never recursive on hostile patterns.

/// Whether `text` matches `pattern` as a whole.
pub fn matches(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    // Where the last `*` was, and the text position it is currently standing for.
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some(&c) if c == '?' || c == t[ti] => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                // Let the last `*` swallow one more character and retry from there.
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::matches;
    use proptest::prelude::*;

    #[test]
    fn literal_star_and_question_mark() {
        assert!(matches("run_migration", "run_migration"));
        assert!(!matches("run_migration", "run_migrations"));
        assert!(!matches("run_migration", "Run_migration"), "case-sensitive");
        assert!(matches("run_*", "run_migration"));
        assert!(matches("run_*", "run_"));
        assert!(!matches("run_*", "dry_run_migration"));
        assert!(matches("*", ""));
        assert!(matches("*_table", "drop_table"));
        assert!(matches("d*_t*e", "drop_table"));
        assert!(matches("drop_?able", "drop_table"));
        assert!(!matches("drop_?able", "drop_able"));
        assert!(matches("a*b*c", "aXbYbZc"));
        assert!(!matches("a*b*c", "aXbYbZ"));
        assert!(matches("discord:1100*", "discord:1100000000000000000"));
        assert!(matches("ẞ?", "ẞé"), "characters, not bytes");
        assert!(!matches("", "x"));
        assert!(matches("", ""));
    }

    proptest! {
        /// A pattern without wildcards matches exactly itself; `*` matches anything.
        #[test]
        fn literals_and_star(a in "[a-z_]{0,12}", b in "[a-z_]{0,12}") {
            prop_assert_eq!(matches(&a, &b), a == b);
            prop_assert!(matches("*", &b));
            let (prefix, suffix, joined) = (format!("{a}*"), format!("*{b}"), format!("{a}{b}"));
            prop_assert!(matches(&prefix, &joined));
            prop_assert!(matches(&suffix, &joined));
        }
    }
}
