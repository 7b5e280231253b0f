//! pg_catalog's relations (pg_class, pg_attribute, pg_type, pg_index, ...) and its views
//! (pg_tables, pg_indexes, pg_roles, pg_user, pg_settings), with PostgreSQL 15's column names
//! and types; array columns (indkey, conkey, ...) are given in PostgreSQL's text form. This
//! file names them and dispatches; each family of relations is built in its own file.

mod constraints;
mod depend;
mod empty;
mod own;
mod relations;
mod sequences;
mod settings;
mod types;

use super::{relation, text, Relation, Snapshot, ROLE_NAME};
use crate::error::Result;
use crate::sql::expr::Ty;
use crate::types::Value;
pub use own::{catalog_relation_names, catalog_relations};

pub const NAMES: &[&str] = &[
    "pg_namespace",
    "pg_class",
    "pg_attribute",
    "pg_type",
    "pg_index",
    "pg_constraint",
    "pg_attrdef",
    "pg_description",
    "pg_database",
    "pg_roles",
    "pg_user",
    "pg_authid",
    "pg_settings",
    "pg_tables",
    "pg_indexes",
    "pg_views",
    "pg_sequence",
    "pg_am",
    "pg_collation",
    "pg_opclass",
    "pg_policy",
    "pg_statistic_ext",
    "pg_publication",
    "pg_publication_namespace",
    "pg_publication_rel",
    "pg_inherits",
    "pg_trigger",
    "pg_rewrite",
    "pg_foreign_table",
    "pg_depend",
    "pg_event_trigger",
    "pg_partitioned_table",
];

/// The OIDs PostgreSQL gives its catalog tables (`'pg_class'::regclass`, pg_description's
/// classoid).
pub const TABLE_OIDS: &[(&str, i64)] = &[
    ("pg_type", 1247),
    ("pg_attribute", 1249),
    ("pg_proc", 1255),
    ("pg_class", 1259),
    ("pg_authid", 1260),
    ("pg_database", 1262),
    ("pg_am", 2601),
    ("pg_attrdef", 2604),
    ("pg_constraint", 2606),
    ("pg_description", 2609),
    ("pg_index", 2610),
    ("pg_namespace", 2615),
    ("pg_sequence", 2224),
    ("pg_collation", 3456),
    ("pg_opclass", 2616),
    ("pg_depend", 2608),
    ("pg_inherits", 2611),
    ("pg_rewrite", 2618),
    ("pg_trigger", 2620),
    ("pg_foreign_table", 3118),
    ("pg_policy", 3256),
    ("pg_partitioned_table", 3350),
    ("pg_statistic_ext", 3381),
    ("pg_event_trigger", 3466),
    ("pg_publication", 6104),
    ("pg_publication_rel", 6106),
    ("pg_publication_namespace", 6237),
];

/// The ones that are views in PostgreSQL.
pub const VIEWS: &[&str] = &[
    "pg_roles",
    "pg_user",
    "pg_settings",
    "pg_tables",
    "pg_indexes",
    "pg_views",
];

const B: Ty = Ty::Bool;
const I2: Ty = Ty::Int2;
const I4: Ty = Ty::Int4;
const I8: Ty = Ty::Int8;
const F8: Ty = Ty::Float8;
const T: Ty = Ty::Text;
/// `int2[]` columns (conkey, confkey), held in their text form `{1,2}`.
const I2_ARRAY: Ty = Ty::Array(&Ty::Int2);
/// `text[]` columns (reloptions).
const T_ARRAY: Ty = Ty::Array(&Ty::Text);
/// `oid[]` columns (pg_policy.polroles).
const OID_ARRAY: Ty = Ty::Array(&Ty::Int8);
/// `oid` and `reg*` columns.
const OID: Ty = Ty::Int8;
const N: Value = Value::Null;

fn b(v: bool) -> Value {
    Value::Bool(v)
}

/// PostgreSQL's text form of an `int2vector` (`1 2`) or of an array (`{1,2}`) of column
/// numbers (1-based).
fn attnums(cols: &[usize], array: bool) -> Value {
    let v: Vec<String> = cols.iter().map(|c| (c + 1).to_string()).collect();
    if array {
        text(format!("{{{}}}", v.join(",")))
    } else {
        text(v.join(" "))
    }
}

/// The rows of pg_catalog relation `name`: pg_class and pg_attribute with the catalog
/// relations' own rows after those of Augur's tables, views and sequences (`own.rs`).
pub fn build(name: &str, s: &Snapshot) -> Result<Relation> {
    let mut r = build_plain(name, s)?;
    match name {
        "pg_class" => r.rows.extend(own::class_rows()),
        "pg_attribute" => r.rows.extend(own::attribute_rows()),
        _ => {}
    }
    Ok(r)
}

/// A pg_catalog relation with the rows of Augur's own objects only.
fn build_plain(name: &str, s: &Snapshot) -> Result<Relation> {
    match name {
        "pg_namespace" => relations::namespaces(),
        "pg_class" => relations::classes(s),
        "pg_attribute" => relations::attributes(s),
        "pg_type" => types::types(),
        "pg_index" => constraints::indexes(s),
        "pg_constraint" => constraints::constraints(s),
        "pg_attrdef" => constraints::attrdefs(s),
        "pg_description" => relation(
            &[
                ("objoid", OID),
                ("classoid", OID),
                ("objsubid", I4),
                ("description", T),
            ],
            vec![],
        ),
        "pg_database" => settings::databases(),
        "pg_roles" | "pg_authid" => settings::roles(name == "pg_authid"),
        "pg_user" => settings::users(),
        "pg_settings" => settings::settings(s),
        "pg_tables" => relations::tables(s),
        "pg_indexes" => constraints::index_view(s),
        // A view's definition is the query text as it was written (PostgreSQL prints its own
        // rendering of the parsed query).
        "pg_views" => relation(
            &[
                ("schemaname", T),
                ("viewname", T),
                ("viewowner", T),
                ("definition", T),
            ],
            s.views
                .iter()
                .map(|v| vec![text("public"), text(&v.name), text(ROLE_NAME), text(&v.sql)])
                .collect(),
        ),
        "pg_sequence" => sequences::sequences(s),
        "pg_collation" => types::collations(),
        // No rows: Augur's indexes name no operator class (pg_index.indclass is 0 for each
        // column), as SQLAlchemy's index reflection reads them.
        "pg_opclass" => relation(
            &[
                ("oid", OID),
                ("opcmethod", OID),
                ("opcname", T),
                ("opcnamespace", OID),
                ("opcowner", OID),
                ("opcfamily", OID),
                ("opcintype", OID),
                ("opcdefault", B),
                ("opckeytype", OID),
            ],
            vec![],
        ),
        "pg_am" => types::access_methods(),
        "pg_depend" => depend::depend(s),
        // Relations of what Augur does not have (policies, extended statistics, publications,
        // inheritance and partitions, triggers, rules, foreign tables, event triggers): no
        // rows, PostgreSQL's columns.
        name => relation(empty::columns(name), vec![]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_relations_are_well_formed() {
        let s = Snapshot {
            tables: vec![],
            sequences: vec![],
            views: vec![],
            settings: vec![("datestyle".into(), "ISO, MDY".into())],
        };
        for n in NAMES {
            let r = build(n, &s).unwrap();
            assert!(r.rows.iter().all(|row| row.len() == r.cols.len()), "{n}");
        }
    }
}
