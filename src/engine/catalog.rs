//! Table definitions as persisted in the `catalog` column family (JSON, one entry per table).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, SqlState};
use crate::index::keyed::IndexKind;
use crate::types::{codec, DataType, Key, Value};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ColumnDef {
    pub name: String,
    pub ty: DataType,
    pub nullable: bool,
    /// The DEFAULT expression as SQL text; the SQL layer evaluates it. The engine stores it.
    #[serde(default)]
    pub default: Option<String>,
}

impl ColumnDef {
    pub fn new(name: impl Into<String>, ty: DataType) -> ColumnDef {
        ColumnDef {
            name: name.into(),
            ty,
            nullable: true,
            default: None,
        }
    }
    pub fn not_null(mut self) -> ColumnDef {
        self.nullable = false;
        self
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndexDef {
    pub name: String,
    /// Column positions, in index order.
    pub columns: Vec<usize>,
    pub unique: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableDef {
    /// Assigned by the database; a TRUNCATE or a rebuild gives the table a new id.
    pub id: u32,
    pub name: String,
    pub columns: Vec<ColumnDef>,
    /// Column positions of the primary key; empty: the table is keyed by a hidden row identity.
    pub primary_key: Vec<usize>,
    #[serde(default)]
    pub indexes: Vec<IndexDef>,
    /// Name of the primary key constraint (`<table>_pkey` by default).
    #[serde(default)]
    pub pkey_name: Option<String>,
}

impl TableDef {
    /// A definition for [`crate::Database::create_table`]; `id` is filled in on creation.
    pub fn new(name: impl Into<String>, columns: Vec<ColumnDef>, primary_key: &[&str]) -> Result<TableDef> {
        let mut def = TableDef {
            id: 0,
            name: name.into(),
            columns,
            primary_key: Vec::new(),
            indexes: Vec::new(),
            pkey_name: None,
        };
        for pk in primary_key {
            let i = def.column_index(pk)?;
            def.primary_key.push(i);
        }
        def.validate()?;
        Ok(def)
    }

    pub fn validate(&mut self) -> Result<()> {
        if self.columns.is_empty() {
            return Err(Error::new(
                SqlState::SYNTAX_ERROR,
                "a table needs at least one column",
            ));
        }
        if self.columns.len() > 1600 {
            return Err(Error::new(
                SqlState::PROGRAM_LIMIT_EXCEEDED,
                "tables can have at most 1600 columns",
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for c in &self.columns {
            if !seen.insert(c.name.as_str()) {
                return Err(Error::new(
                    SqlState::DUPLICATE_COLUMN,
                    format!("column \"{}\" specified more than once", c.name),
                ));
            }
        }
        let mut pk_seen = std::collections::HashSet::new();
        for &i in &self.primary_key {
            if i >= self.columns.len() || !pk_seen.insert(i) {
                return Err(Error::new(
                    SqlState::INVALID_PRIMARY_KEY,
                    "invalid primary key columns",
                ));
            }
            self.columns[i].nullable = false;
        }
        if !self.primary_key.is_empty() && self.pkey_name.is_none() {
            self.pkey_name = Some(format!("{}_pkey", self.name));
        }
        Ok(())
    }

    pub fn column_index(&self, name: &str) -> Result<usize> {
        self.columns
            .iter()
            .position(|c| c.name == name)
            .ok_or_else(|| Error::undefined_column(name))
    }

    /// ALEX for a single integer or timestamp key column (and for hidden row identities),
    /// the ordered fallback for everything else.
    pub fn key_kind(&self) -> IndexKind {
        match self.primary_key.as_slice() {
            [] => IndexKind::Alex,
            [i] if self.columns[*i].ty.is_int_key() => IndexKind::Alex,
            _ => IndexKind::BTree,
        }
    }

    pub fn has_primary_key(&self) -> bool {
        !self.primary_key.is_empty()
    }

    /// The primary key of a row (already coerced to the column types).
    pub fn key_of(&self, row: &[Value]) -> Result<Key> {
        // Fast path: a coerced integer or timestamp key column is the ALEX key itself.
        if let [i] = self.primary_key.as_slice() {
            if self.columns[*i].ty.is_int_key() {
                if let Some(v) = row.get(*i).and_then(Value::int_key) {
                    return Ok(Key::Int(v));
                }
            }
        }
        self.key_from_values(
            &self
                .primary_key
                .iter()
                .map(|&i| row[i].clone())
                .collect::<Vec<_>>(),
        )
    }

    /// Builds a key from primary-key column values, coercing each to its column type.
    pub fn key_from_values(&self, vals: &[Value]) -> Result<Key> {
        if vals.len() != self.primary_key.len() || vals.is_empty() {
            return Err(Error::new(
                SqlState::INVALID_PARAMETER_VALUE,
                format!(
                    "table \"{}\" has a {}-column primary key, got {} values",
                    self.name,
                    self.primary_key.len(),
                    vals.len()
                ),
            ));
        }
        let mut coerced = Vec::with_capacity(vals.len());
        for (v, &i) in vals.iter().zip(&self.primary_key) {
            let col = &self.columns[i];
            let v = col.ty.coerce(v.clone())?;
            if v.is_null() {
                return Err(Error::new(
                    SqlState::NOT_NULL_VIOLATION,
                    format!(
                        "null value in column \"{}\" of relation \"{}\" violates not-null constraint",
                        col.name, self.name
                    ),
                ));
            }
            coerced.push(v);
        }
        Ok(match (self.key_kind(), coerced.as_slice()) {
            (IndexKind::Alex, [v]) if v.int_key().is_some() => Key::Int(v.int_key().unwrap_or_default()),
            _ => Key::Bytes(codec::encode_key_values(&coerced)),
        })
    }

    /// Checks and coerces a full row for storage: arity, types, NOT NULL.
    pub fn check_row(&self, row: Vec<Value>) -> Result<Vec<Value>> {
        if row.len() != self.columns.len() {
            return Err(Error::new(
                SqlState::SYNTAX_ERROR,
                format!(
                    "table \"{}\" has {} columns but {} values were supplied",
                    self.name,
                    self.columns.len(),
                    row.len()
                ),
            ));
        }
        let mut out = Vec::with_capacity(row.len());
        for (v, c) in row.into_iter().zip(&self.columns) {
            let v = c.ty.coerce(v).map_err(|e| match e {
                Error::Sql { state, message } => Error::Sql {
                    state,
                    message: format!("{message} (column \"{}\")", c.name),
                },
                e => e,
            })?;
            if v.is_null() && !c.nullable {
                return Err(Error::new(
                    SqlState::NOT_NULL_VIOLATION,
                    format!(
                        "null value in column \"{}\" of relation \"{}\" violates not-null constraint",
                        c.name, self.name
                    ),
                ));
            }
            out.push(v);
        }
        Ok(out)
    }

    /// The encoded value of a secondary index for a row, or None when a column is NULL (NULLs
    /// never conflict in a unique index, as in PostgreSQL).
    pub fn index_value(&self, idx: &IndexDef, row: &[Value]) -> Option<Vec<u8>> {
        let vals: Vec<Value> = idx.columns.iter().map(|&i| row[i].clone()).collect();
        if vals.iter().any(Value::is_null) {
            return None;
        }
        Some(codec::encode_key_values(&vals))
    }
}
