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

use sqlx::any::{Any, AnyArguments};
use sqlx::query::Query;
use sqlx::{AnyConnection, AssertSqlSafe};

/// A statement built at run time, prepared for this one use and not cached (see the
/// module doc). The caller's text must hold only value marks where values go: every
/// value is bound.
pub(super) fn run_time_statement(sql: String) -> Query<'static, Any, AnyArguments> {
    sqlx::query(AssertSqlSafe(sql)).persistent(false)
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
    fn numbered_marks_count_every_value_once_and_positional_ones_are_plain() {
        assert_eq!(Marks::Numbered.rows(2, 3), "($1, $2, $3), ($4, $5, $6)");
        assert_eq!(Marks::Numbered.list(2, 3), "$2, $3, $4");
        assert_eq!(Marks::Positional.rows(2, 2), "(?, ?), (?, ?)");
        assert_eq!(Marks::Positional.list(2, 1), "?");
    }
}
