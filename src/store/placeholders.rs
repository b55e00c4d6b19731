//! The value marks of the statements built at run time (multi-row inserts, `IN` lists).
//! PostgreSQL needs numbered marks (`$1`). SQLite reads them too, but looks each one
//! up among those before it, when it parses the statement and again when sqlx binds
//! it: a 256-row audit insert (3,840 values) took 77 ms that way, 1.4 ms with plain
//! `?` marks, which SQLite numbers in order. So SQLite gets `?`.
//!
//! Such statements are also kept out of sqlx's statement cache: their text changes with
//! their row count, so a burst would leave up to 100 of them prepared on each pooled
//! connection (in SQLite alone, 128 prepared inserts of 1–128 audit rows held 12 MiB;
//! the load bench's peak was 2–3 MiB lower without them), for nothing, since the next
//! batch rarely has the same count.
//!
//! Statements by a list of keys (`IN (…)`) are the exception: their lists are padded to
//! the next power of two by repeating the last key, which changes nothing in an `IN`
//! list, so they come in a few shapes and are kept prepared ([`list_statement`]). The
//! shared read of where requests are shown (three arms, a list each) runs once per few
//! card refreshes: prepared anew each time, it was much of the parsing that took a
//! tenth of a large burst's CPU (9.8 %; 7.9 % once key lists were kept).

use sqlx::any::{Any, AnyArguments};
use sqlx::query::Query;
use sqlx::{AnyConnection, AssertSqlSafe};

/// A statement built at run time, prepared for this one use and not cached (see the
/// module doc). The caller's text must hold only value marks where values go: every
/// value is bound.
pub(super) fn run_time_statement(sql: String) -> Query<'static, Any, AnyArguments> {
    sqlx::query(AssertSqlSafe(sql)).persistent(false)
}

/// A statement whose `IN (…)` lists hold [`padded`] keys: prepared once per connection and
/// shape, and kept (see the module doc). The caller's text must hold only value marks
/// where values go: every value is bound.
pub(super) fn list_statement(sql: String) -> Query<'static, Any, AnyArguments> {
    sqlx::query(AssertSqlSafe(sql))
}

/// `query` with `keys` bound as a [`padded`] list, each by `value`, after whatever
/// `query` binds already: the values of a [`list_statement`]'s `IN (…)` list.
pub(super) fn bind_keys<'q, K, V>(query: Query<'q, Any, AnyArguments>, keys: &'q [K], value: impl Fn(&'q K) -> V) -> Query<'q, Any, AnyArguments>
where
    V: 'q + sqlx::Encode<'q, Any> + sqlx::Type<Any>,
{
    padded(keys).fold(query, |query, key| query.bind(value(key)))
}

/// How many marks a list of `len` keys gets: the next power of two.
pub(super) fn padded_len(len: usize) -> usize {
    len.max(1).next_power_of_two()
}

/// `keys`, then the last one again up to [`padded_len`]: bound in a list of that many
/// marks. `keys` must not be empty.
fn padded<T>(keys: &[T]) -> impl Iterator<Item = &T> {
    padded_to(keys, padded_len(keys.len()))
}

/// `keys`, then the last one again up to `len` in all (at least as many as `keys`).
pub(super) fn padded_to<T>(keys: &[T], len: usize) -> impl Iterator<Item = &T> {
    keys.iter().chain(std::iter::repeat_n(keys.last(), len.saturating_sub(keys.len())).flatten())
}

/// How values are marked on one connection's database.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Marks {
    /// `$1, $2`: PostgreSQL.
    Numbered,
    /// `?, ?`: SQLite, numbered by position.
    Positional,
}

impl Marks {
    pub fn of(conn: &AnyConnection) -> Self {
        if conn.backend_name() == "SQLite" { Marks::Positional } else { Marks::Numbered }
    }

    /// `count` marks in a row, the first numbered `from` (values bound in that order).
    pub fn list(self, from: usize, count: usize) -> String {
        let mark = |n: usize| match self {
            Marks::Numbered => format!("${n}"),
            Marks::Positional => "?".to_owned(),
        };
        (from..from + count).map(mark).collect::<Vec<_>>().join(", ")
    }

    /// `(…), (…)`: `rows` rows of `columns` marks, numbered from 1 row by row.
    pub fn rows(self, rows: usize, columns: usize) -> String {
        (0..rows).map(|r| format!("({})", self.list(r * columns + 1, columns))).collect::<Vec<_>>().join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::Marks;

    #[test]
    fn key_lists_are_padded_with_their_last_key_to_a_power_of_two() {
        use super::{padded, padded_len};
        assert_eq!([1, 2, 3, 4, 5, 64, 65].map(padded_len), [1, 2, 4, 4, 8, 64, 128]);
        assert_eq!(padded(&["a", "b", "c"]).copied().collect::<Vec<_>>(), ["a", "b", "c", "c"]);
        assert_eq!(padded(&["a"]).copied().collect::<Vec<_>>(), ["a"]);
    }

    #[test]
    fn numbered_marks_count_every_value_once_and_positional_ones_are_plain() {
        assert_eq!(Marks::Numbered.rows(2, 3), "($1, $2, $3), ($4, $5, $6)");
        assert_eq!(Marks::Numbered.list(2, 3), "$2, $3, $4");
        assert_eq!(Marks::Positional.rows(2, 2), "(?, ?), (?, ?)");
        assert_eq!(Marks::Positional.list(2, 1), "?");
    }
}
