//! pg_catalog and information_schema as relations: their rows are built from Augur's catalog
//! (tables, indexes, sequences, settings) when a query names them, and the query engine reads
//! them like any derived table. Also the OID scheme, shared with the server's psql answers.
//!
//! OIDs: a table with id `n` is `16384 + 100 n`; its primary-key index is that + 1 and its
//! secondary indexes follow (they change when a table is rebuilt, as in PostgreSQL). A key
//! constraint is `CONSTRAINT_BASE` + its index's OID; table `n`'s CHECK constraint `i` is
//! `CHECK_BASE + 2000 n + i` and its foreign key `i` that plus 1000; a column default is
//! `ATTRDEF_BASE + 2000 n` plus the column number; a sequence `SEQUENCE_BASE` plus a hash of
//! its name, a view `VIEW_BASE` plus a hash of its name. Namespaces, the role, the database,
//! access methods and types have PostgreSQL's own OIDs.

pub mod deparse;
mod info_schema;
mod pg;
pub mod types;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::engine::catalog::{CheckDef, ForeignKeyDef};
use crate::engine::{SequenceDef, TableDef, ViewDef};
use crate::error::{Error, Result, SqlState};
use crate::index::keyed::IndexKind;
use crate::seam::prelude::*;
use crate::sql::expr::Ty;
use crate::sql::plan::Column;
use crate::types::Value;

pub const PG_CATALOG_NS: i64 = 11;
pub const PUBLIC_NS: i64 = 2200;
pub const INFO_SCHEMA_NS: i64 = 13183;
/// The one role (PostgreSQL's bootstrap superuser OID) and database.
pub const ROLE_OID: i64 = 10;
pub const ROLE_NAME: &str = "augur";
pub const DATABASE_OID: i64 = 5;
pub const DATABASE_NAME: &str = "augur";
/// Access methods: tables are Augur's own store; indexes ALEX or a B-tree.
pub const AM_TABLE: i64 = 2;
pub const AM_BTREE: i64 = 403;
pub const AM_ALEX: i64 = 9000;
const CONSTRAINT_BASE: i64 = 2_000_000_000;
const ATTRDEF_BASE: i64 = 3_000_000_000;
const CHECK_BASE: i64 = 4_000_000_000;
const SEQUENCE_BASE: i64 = 1_000_000_000;
const VIEW_BASE: i64 = 500_000_000;

/// The OIDs of information_schema's relations (not on the search path: `pg_table_is_visible`
/// is false for them).
pub fn info_schema_oids() -> Vec<i64> {
    pg::catalog_relation_names()
        .into_iter()
        .filter(|r| r.1 == INFO_SCHEMA_NS)
        .map(|r| r.0)
        .collect()
}

/// The schemas, as pg_namespace lists them.
pub const SCHEMAS: &[(i64, &str)] = &[
    (PG_CATALOG_NS, "pg_catalog"),
    (PUBLIC_NS, "public"),
    (INFO_SCHEMA_NS, "information_schema"),
];

pub fn table_oid(def: &TableDef) -> i64 {
    16384 + 100 * def.id as i64
}

/// One index of a table, as pg_class / pg_index show it.
#[derive(Clone)]
pub struct IndexInfo {
    pub name: String,
    pub oid: i64,
    /// Column positions, in index order.
    pub columns: Vec<usize>,
    pub unique: bool,
    pub primary: bool,
    pub method: &'static str,
    /// The memory of a primary-key index (Augur's only per-relation size).
    pub heap_bytes: Option<usize>,
}

impl IndexInfo {
    /// The OID of the constraint the index enforces (primary key or unique).
    pub fn constraint_oid(&self) -> i64 {
        CONSTRAINT_BASE + self.oid
    }

    pub fn am_oid(&self) -> i64 {
        if self.method == "alex" {
            AM_ALEX
        } else {
            AM_BTREE
        }
    }
}

/// The primary-key index (if the table has a declared key) and the secondary indexes.
pub fn indexes_of(t: &AnyTable, def: &TableDef) -> Vec<IndexInfo> {
    let base = table_oid(def);
    let mut v = Vec::new();
    if def.has_primary_key() {
        v.push(IndexInfo {
            name: def.pkey_constraint(),
            oid: base + 1,
            columns: def.primary_key.clone(),
            unique: true,
            primary: true,
            method: match t.key_index_kind() {
                IndexKind::Alex => "alex",
                IndexKind::BTree => "btree",
            },
            heap_bytes: Some(t.index_heap_bytes()),
        });
    }
    for (i, ix) in def.indexes.iter().enumerate() {
        v.push(IndexInfo {
            name: ix.name.clone(),
            oid: base + 2 + i as i64,
            columns: ix.columns.clone(),
            unique: ix.unique,
            primary: false,
            method: "btree",
            heap_bytes: None,
        });
    }
    v
}

/// A sequence's OID: stable for its name.
pub fn sequence_oid(name: &str) -> i64 {
    SEQUENCE_BASE + i64::from(name_hash(name) % 1_000_000_000)
}

/// A view's OID: `VIEW_BASE` + a hash of its name (views have no numeric id).
pub fn view_oid(name: &str) -> i64 {
    VIEW_BASE + i64::from(name_hash(name) % 400_000_000)
}

/// FNV-1a, 32 bits: the same name always gets the same OID, in every process.
fn name_hash(name: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// `CREATE [UNIQUE] INDEX ...` as pg_get_indexdef prints it.
pub fn index_def(def: &TableDef, ix: &IndexInfo) -> String {
    format!(
        "CREATE {}INDEX {} ON public.{} USING {} ({})",
        if ix.unique { "UNIQUE " } else { "" },
        ix.name,
        def.name,
        ix.method,
        column_names(def, &ix.columns).join(", ")
    )
}

/// `PRIMARY KEY (a, b)` / `UNIQUE (a)` as pg_get_constraintdef prints it.
pub fn constraint_def(def: &TableDef, ix: &IndexInfo) -> String {
    format!(
        "{} ({})",
        if ix.primary { "PRIMARY KEY" } else { "UNIQUE" },
        column_names(def, &ix.columns).join(", ")
    )
}

/// `pg_size_pretty(bytes)`: PostgreSQL's rounding and units (bytes below 10 kB, then kB, MB,
/// ... each below 20480 of it, halves rounded away from zero).
pub fn size_pretty(bytes: i64) -> String {
    const LIMIT: u64 = 10 * 1024;
    if bytes.unsigned_abs() < LIMIT {
        return format!("{bytes} bytes");
    }
    let units = ["kB", "MB", "GB", "TB", "PB"];
    // One extra bit for rounding; division (not a shift) rounds negative sizes as positive ones.
    let mut size = bytes / 512;
    let mut i = 0;
    while size.unsigned_abs() >= LIMIT * 2 - 1 && i + 1 < units.len() {
        size /= 1024;
        i += 1;
    }
    let half = (size + if size < 0 { -1 } else { 1 }) / 2;
    format!("{half} {}", units[i])
}

fn column_names(def: &TableDef, cols: &[usize]) -> Vec<String> {
    cols.iter()
        .map(|&c| def.columns.get(c).map(|c| c.name.clone()).unwrap_or_default())
        .collect()
}

/// A table and what the catalog shows of it.
pub struct TableInfo {
    pub def: Arc<TableDef>,
    pub oid: i64,
    pub indexes: Vec<IndexInfo>,
}

impl TableInfo {
    /// The indexes that enforce a constraint: the primary key and unique indexes (CHECK and
    /// FOREIGN KEY constraints are [`TableInfo::checks`] and [`Snapshot::foreign_keys`]).
    /// Augur's IndexDef has no flag telling a UNIQUE constraint from a CREATE UNIQUE INDEX, so
    /// every unique index is listed as a constraint.
    pub fn constraints(&self) -> impl Iterator<Item = &IndexInfo> {
        self.indexes.iter().filter(|i| i.primary || i.unique)
    }

    /// The CHECK constraints with their OIDs.
    pub fn checks(&self) -> impl Iterator<Item = (i64, &CheckDef)> {
        let base = CHECK_BASE + 2000 * i64::from(self.def.id);
        self.def
            .checks
            .iter()
            .enumerate()
            .map(move |(i, c)| (base + i as i64, c))
    }

    /// The OID of the table's `i`th foreign key.
    fn foreign_key_oid(&self, i: usize) -> i64 {
        CHECK_BASE + 2000 * i64::from(self.def.id) + 1000 + i as i64
    }

    /// The OID of column `c`'s default (pg_attrdef).
    pub fn attrdef_oid(&self, c: usize) -> i64 {
        ATTRDEF_BASE + 2000 * i64::from(self.def.id) + c as i64 + 1
    }
}

/// A FOREIGN KEY constraint as the catalog shows it: the referencing table, the referenced one
/// and the unique index (primary key or unique) its referenced columns match.
pub struct ForeignKeyInfo<'a> {
    pub oid: i64,
    pub def: &'a ForeignKeyDef,
    pub table: &'a TableInfo,
    pub parent: Option<&'a TableInfo>,
    pub parent_index: Option<&'a IndexInfo>,
    /// The referenced columns' positions in the parent table.
    pub parent_columns: Vec<usize>,
}

impl ForeignKeyInfo<'_> {
    /// pg_get_constraintdef's text.
    pub fn text(&self) -> String {
        deparse::foreign_key_def(&self.table.def, self.def)
    }
}

/// Augur's catalog at one moment: what every catalog relation is built from.
pub struct Snapshot {
    pub tables: Vec<TableInfo>,
    pub sequences: Vec<SequenceDef>,
    pub views: Vec<Arc<ViewDef>>,
    pub settings: Vec<(String, String)>,
}

impl Snapshot {
    pub fn take(db: &AnyEngine, settings: Option<&BTreeMap<String, String>>) -> Result<Snapshot> {
        let tables = db
            .tables()
            .into_iter()
            .map(|t| {
                let def = t.def();
                TableInfo {
                    oid: table_oid(&def),
                    indexes: indexes_of(&t, &def),
                    def,
                }
            })
            .collect();
        Ok(Snapshot {
            tables,
            sequences: db.sequences()?,
            views: db.views()?,
            settings: settings
                .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                .unwrap_or_default(),
        })
    }

    /// Every FOREIGN KEY constraint, table by table.
    pub fn foreign_keys(&self) -> Vec<ForeignKeyInfo<'_>> {
        let mut v = Vec::new();
        for t in &self.tables {
            for (i, fk) in t.def.foreign_keys.iter().enumerate() {
                let parent = self.tables.iter().find(|p| p.def.name == fk.parent);
                let parent_columns: Vec<usize> = parent
                    .map(|p| {
                        fk.parent_columns
                            .iter()
                            .filter_map(|n| p.def.columns.iter().position(|c| c.name == *n))
                            .collect()
                    })
                    .unwrap_or_default();
                let parent_index = parent.and_then(|p| {
                    let mut want = parent_columns.clone();
                    want.sort_unstable();
                    p.constraints().find(|ix| {
                        let mut have = ix.columns.clone();
                        have.sort_unstable();
                        have == want
                    })
                });
                v.push(ForeignKeyInfo {
                    oid: t.foreign_key_oid(i),
                    def: fk,
                    table: t,
                    parent,
                    parent_index,
                    parent_columns,
                });
            }
        }
        v
    }

    /// Whether a table takes part in a foreign key, as either side (PostgreSQL then has
    /// triggers on it: pg_class.relhastriggers).
    pub fn has_triggers(&self, t: &TableInfo) -> bool {
        !t.def.foreign_keys.is_empty()
            || self
                .tables
                .iter()
                .any(|o| o.def.foreign_keys.iter().any(|f| f.parent == t.def.name))
    }

    /// Every relation's (OID, name): tables, indexes, sequences, views, then pg_catalog's
    /// tables and the other generated catalog relations (information_schema's qualified).
    pub fn relations(&self) -> Vec<(i64, String)> {
        let mut v = Vec::new();
        for t in &self.tables {
            v.push((t.oid, t.def.name.clone()));
            for ix in &t.indexes {
                v.push((ix.oid, ix.name.clone()));
            }
        }
        for s in &self.sequences {
            v.push((sequence_oid(&s.name), s.name.clone()));
        }
        for w in &self.views {
            v.push((view_oid(&w.name), w.name.clone()));
        }
        v.extend(pg::TABLE_OIDS.iter().map(|(n, o)| (*o, n.to_string())));
        v.extend(
            pg::catalog_relations()
                .iter()
                .filter(|r| !pg::TABLE_OIDS.iter().any(|(_, o)| *o == r.oid))
                .map(|r| (r.oid, r.regclass.clone())),
        );
        v
    }

    /// `'name'::regclass`: the OID of the relation a (possibly schema-qualified, possibly
    /// quoted) name denotes; 42P01 if there is none.
    pub fn regclass(&self, name: &str) -> Result<i64> {
        let n = parse_relname(name);
        self.relations()
            .into_iter()
            .find(|(_, r)| *r == n)
            .map(|(o, _)| o)
            .ok_or_else(|| Error::undefined_table(&n))
    }
}

/// A relation name as `regclass` input reads it: `public.` or `pg_catalog.` dropped, unquoted
/// parts lower-cased.
pub(crate) fn parse_relname(s: &str) -> String {
    let s = s.trim();
    let s = ["public.", "\"public\".", "pg_catalog."]
        .iter()
        .find_map(|p| s.strip_prefix(p))
        .unwrap_or(s);
    match s.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        Some(q) => q.replace("\"\"", "\""),
        None => s.to_lowercase(),
    }
}

/// A catalog relation's columns and rows.
pub struct Relation {
    pub cols: Vec<Column>,
    pub rows: Vec<Vec<Value>>,
}

/// Builds a relation from `(name, type)` columns and its rows (each as long as the columns).
pub(crate) fn relation(cols: &[(&str, Ty)], rows: Vec<Vec<Value>>) -> Result<Relation> {
    if let Some(r) = rows.iter().find(|r| r.len() != cols.len()) {
        return Err(Error::internal(format!(
            "catalog relation row of {} values for {} columns",
            r.len(),
            cols.len()
        )));
    }
    Ok(Relation {
        cols: cols.iter().map(|(n, t)| Column::new(n.to_string(), *t)).collect(),
        rows,
    })
}

/// Which catalog relation a FROM item names, if any: `pg_catalog.X`, `information_schema.X`,
/// or an unqualified `X` of pg_catalog (first on PostgreSQL's search path).
pub fn resolve(parts: &[String]) -> Option<(&'static str, &'static str)> {
    let (schema, name) = match parts {
        [n] => ("pg_catalog", n.as_str()),
        [s, n] => (s.as_str(), n.as_str()),
        _ => return None,
    };
    match schema {
        "pg_catalog" => pg::NAMES.iter().find(|x| **x == name).map(|x| ("pg_catalog", *x)),
        "information_schema" => info_schema::NAMES
            .iter()
            .find(|x| **x == name)
            .map(|x| ("information_schema", *x)),
        _ => None,
    }
}

/// The rows of catalog relation `schema.name` (as [`resolve`] returned it).
pub fn build(schema: &str, name: &str, snap: &Snapshot) -> Result<Relation> {
    if schema == "information_schema" {
        info_schema::build(name, snap)
    } else {
        pg::build(name, snap)
    }
}

/// The error for writing to catalog relation `schema.name` (PostgreSQL's answer to a user who
/// is not a superuser; Augur's catalog changes only through DDL).
pub fn write_error(schema: &str, name: &str) -> Error {
    let what = if schema == "pg_catalog" && !pg::VIEWS.contains(&name) {
        "table"
    } else {
        "view"
    };
    Error::new(SqlState("42501"), format!("permission denied for {what} {name}"))
}

fn text(s: impl Into<String>) -> Value {
    Value::Text(s.into())
}

fn int(i: i64) -> Value {
    Value::Int(i)
}

fn yes_no(b: bool) -> Value {
    text(if b { "YES" } else { "NO" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve() {
        let p = |s: &[&str]| resolve(&s.iter().map(|x| x.to_string()).collect::<Vec<_>>());
        assert_eq!(p(&["pg_class"]), Some(("pg_catalog", "pg_class")));
        assert_eq!(p(&["pg_catalog", "pg_type"]), Some(("pg_catalog", "pg_type")));
        assert_eq!(
            p(&["information_schema", "columns"]),
            Some(("information_schema", "columns"))
        );
        assert_eq!(p(&["columns"]), None);
        assert_eq!(p(&["public", "pg_class"]), None);
    }

    #[test]
    fn relnames() {
        assert_eq!(parse_relname("T"), "t");
        assert_eq!(parse_relname("public.t"), "t");
        assert_eq!(parse_relname("\"My T\""), "My T");
        assert!(sequence_oid("a") >= SEQUENCE_BASE && sequence_oid("a") < CONSTRAINT_BASE);
        assert_eq!(sequence_oid("abc"), sequence_oid("abc"));
    }

    #[test]
    fn sizes_as_postgresql_prints_them() {
        assert_eq!(size_pretty(0), "0 bytes");
        assert_eq!(size_pretty(10239), "10239 bytes");
        assert_eq!(size_pretty(10240), "10 kB");
        assert_eq!(size_pretty(20 * 1024 * 1024), "20 MB");
        assert_eq!(size_pretty(10 * 1024 * 1024), "10 MB");
        assert_eq!(size_pretty(10 * 1024 * 1024 - 1), "10 MB");
        assert_eq!(size_pretty(20479 * 512 - 1), "10239 kB");
        assert_eq!(size_pretty(-10240), "-10 kB");
    }
}
