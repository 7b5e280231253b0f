//! The catalog relations themselves in pg_class and pg_attribute: every relation of
//! pg_catalog and information_schema that Augur generates has a row in pg_class (relkind 'r'
//! for PostgreSQL's catalog tables, 'v' for its views) and a pg_attribute row per column,
//! typed as the relation's result columns are, so that tools may join pg_attribute to
//! pg_class for them (`WHERE attrelid = 'pg_class'::regclass`).

use std::sync::OnceLock;

use super::relations::{attribute_row, class_row};
use super::{b, TABLE_OIDS, VIEWS};
use crate::sql::catalog::{info_schema, text, Snapshot, INFO_SCHEMA_NS, PG_CATALOG_NS};
use crate::types::{DataType, Value};

/// The OIDs of pg_catalog's views, as PostgreSQL 15's initdb gives them (below 16384, where
/// the OIDs of user objects start).
const VIEW_OIDS: &[(&str, i64)] = &[
    ("pg_roles", 12000),
    ("pg_user", 12014),
    ("pg_views", 12028),
    ("pg_tables", 12033),
    ("pg_indexes", 12043),
    ("pg_settings", 12104),
];

/// The OIDs of information_schema's views, as PostgreSQL 15's initdb gives them.
const INFO_SCHEMA_OIDS: &[(&str, i64)] = &[
    ("check_constraints", 13260),
    ("columns", 13295),
    ("constraint_column_usage", 13300),
    ("constraint_table_usage", 13305),
    ("key_column_usage", 13329),
    ("referential_constraints", 13339),
    ("schemata", 13382),
    ("sequences", 13386),
    ("table_constraints", 13411),
    ("tables", 13425),
    ("views", 13483),
];

/// One generated catalog relation as pg_class and pg_attribute describe it.
pub struct CatalogRelation {
    pub oid: i64,
    pub namespace: i64,
    /// Its name as `regclass` reads and prints it: pg_catalog's unqualified (pg_catalog is on
    /// the search path), information_schema's qualified.
    pub regclass: String,
    pub name: &'static str,
    /// `r` (a table in PostgreSQL) or `v` (a view).
    pub kind: &'static str,
    /// Its columns and the types it returns them as.
    pub columns: Vec<(String, DataType)>,
}

/// Every generated catalog relation's (OID, namespace, name, kind: `r` or `v`), without its
/// columns (information_schema.tables lists them).
pub fn catalog_relation_names() -> Vec<(i64, i64, &'static str, &'static str)> {
    let oid_in = |list: &[(&str, i64)], n: &str| list.iter().find(|(x, _)| *x == n).map(|(_, o)| *o);
    let pg = super::NAMES.iter().filter_map(|n| {
        let oid = oid_in(TABLE_OIDS, n).or_else(|| oid_in(VIEW_OIDS, n))?;
        Some((oid, PG_CATALOG_NS, *n, if VIEWS.contains(n) { "v" } else { "r" }))
    });
    let info = info_schema::NAMES
        .iter()
        .filter_map(|n| Some((oid_in(INFO_SCHEMA_OIDS, n)?, INFO_SCHEMA_NS, *n, "v")));
    pg.chain(info).collect()
}

/// Every generated catalog relation, built once (their columns do not depend on the data).
pub fn catalog_relations() -> &'static [CatalogRelation] {
    static RELS: OnceLock<Vec<CatalogRelation>> = OnceLock::new();
    RELS.get_or_init(|| {
        let empty = Snapshot {
            tables: vec![],
            sequences: vec![],
            views: vec![],
            settings: vec![],
        };
        let columns = |r: crate::error::Result<crate::sql::catalog::Relation>| {
            r.map(|r| r.cols.iter().map(|c| (c.name.clone(), c.dt())).collect())
                .unwrap_or_default()
        };
        catalog_relation_names()
            .into_iter()
            .map(|(oid, namespace, name, kind)| CatalogRelation {
                oid,
                namespace,
                regclass: if namespace == INFO_SCHEMA_NS {
                    format!("information_schema.{name}")
                } else {
                    name.to_string()
                },
                name,
                kind,
                columns: columns(if namespace == INFO_SCHEMA_NS {
                    info_schema::build(name, &empty)
                } else {
                    super::build_plain(name, &empty)
                }),
            })
            .collect()
    })
}

/// pg_class's rows of the catalog relations.
pub(super) fn class_rows() -> impl Iterator<Item = Vec<Value>> {
    catalog_relations().iter().map(|r| {
        let table = r.kind == "r";
        let mut row = class_row(
            r.oid,
            r.name,
            r.kind,
            if table { 2 } else { 0 },
            r.columns.len(),
            table,
        );
        row[2] = Value::Int(r.namespace);
        // pg_authid and pg_database are shared by every database of a PostgreSQL cluster.
        row[14] = b(matches!(r.name, "pg_authid" | "pg_database"));
        row[25] = text("n");
        row
    })
}

/// pg_attribute's rows of the catalog relations' columns.
pub(super) fn attribute_rows() -> impl Iterator<Item = Vec<Value>> {
    catalog_relations().iter().flat_map(|r| {
        r.columns
            .iter()
            .enumerate()
            .map(|(i, (name, ty))| attribute_row(r.oid, name, *ty, i + 1, false, false))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_generated_relation_has_an_oid_of_its_own() {
        let rels = catalog_relations();
        assert_eq!(rels.len(), super::super::NAMES.len() + info_schema::NAMES.len());
        let mut oids: Vec<i64> = rels.iter().map(|r| r.oid).collect();
        oids.sort_unstable();
        oids.dedup();
        assert_eq!(oids.len(), rels.len());
        assert!(rels.iter().all(|r| !r.columns.is_empty() && r.oid < 16384));
        let class = rels.iter().find(|r| r.name == "pg_class").unwrap();
        assert_eq!((class.oid, class.kind), (1259, "r"));
        assert_eq!(class.columns[1], ("relname".to_string(), DataType::Text(None)));
    }
}
