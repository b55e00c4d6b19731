//! Reading typed columns out of a result row, with errors that name the column.

use sqlx::any::AnyRow;
use sqlx::{Any, Decode, Row, Type};

use super::error::{Result, StoreError};

pub(super) fn column<'r, T: Decode<'r, Any> + Type<Any>>(row: &'r AnyRow, name: &'static str) -> Result<T> {
    row.try_get(name).map_err(|source| StoreError::Column { column: name, source })
}
