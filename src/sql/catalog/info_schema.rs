//! information_schema's views (tables, columns, schemata, table_constraints,
//! key_column_usage, referential_constraints, check_constraints, constraint_column_usage,
//! constraint_table_usage, sequences, views), with PostgreSQL 15's column names; its domains
//! (sql_identifier, cardinal_number, yes_or_no, ...) are their base types, text and integer.

use super::types::{by_oid, column_type};
use super::{
    deparse, int, relation, text, yes_no, Relation, Snapshot, TableInfo, DATABASE_NAME, PUBLIC_NS, ROLE_NAME,
    SCHEMAS,
};
use crate::error::Result;
use crate::sql::expr::Ty;
use crate::types::{DataType, Value};

pub const NAMES: &[&str] = &[
    "tables",
    "columns",
    "schemata",
    "table_constraints",
    "key_column_usage",
    "sequences",
    "views",
    "referential_constraints",
    "check_constraints",
    "constraint_column_usage",
    "constraint_table_usage",
];

const T: Ty = Ty::Text;
const I: Ty = Ty::Int4;
const N: Value = Value::Null;

pub fn build(name: &str, s: &Snapshot) -> Result<Relation> {
    match name {
        "tables" => tables(s),
        "columns" => columns(s),
        "schemata" => schemata(),
        "table_constraints" => table_constraints(s),
        "key_column_usage" => key_column_usage(s),
        "sequences" => sequences(s),
        "referential_constraints" => referential_constraints(s),
        "check_constraints" => check_constraints(s),
        "constraint_column_usage" => constraint_column_usage(s),
        "constraint_table_usage" => constraint_table_usage(s),
        _ => views(s),
    }
}

fn tables(s: &Snapshot) -> Result<Relation> {
    let cols: &[(&str, Ty)] = &[
        ("table_catalog", T),
        ("table_schema", T),
        ("table_name", T),
        ("table_type", T),
        ("self_referencing_column_name", T),
        ("reference_generation", T),
        ("user_defined_type_catalog", T),
        ("user_defined_type_schema", T),
        ("user_defined_type_name", T),
        ("is_insertable_into", T),
        ("is_typed", T),
        ("commit_action", T),
    ];
    // Views are read-only in Augur: not insertable into.
    let row = |schema: &str, name: &str, kind: &str, insertable: bool| {
        vec![
            text(DATABASE_NAME),
            text(schema),
            text(name),
            text(kind),
            N,
            N,
            N,
            N,
            N,
            yes_no(insertable),
            yes_no(false),
            N,
        ]
    };
    let rows = s
        .tables
        .iter()
        .map(|t| row("public", &t.def.name, "BASE TABLE", true))
        .chain(s.views.iter().map(|v| row("public", &v.name, "VIEW", false)))
        // The catalog relations, as PostgreSQL lists its own: pg_catalog's tables as (insertable)
        // base tables, its and information_schema's views as views.
        .chain(
            super::pg::catalog_relation_names()
                .into_iter()
                .map(|(_, ns, name, kind)| {
                    let schema = SCHEMAS
                        .iter()
                        .find(|(o, _)| *o == ns)
                        .map_or("pg_catalog", |s| s.1);
                    if kind == "r" {
                        row(schema, name, "BASE TABLE", true)
                    } else {
                        row(schema, name, "VIEW", false)
                    }
                }),
        )
        .collect();
    relation(cols, rows)
}

/// (numeric_precision, radix, scale) of a numeric type.
fn numeric(t: DataType) -> (Value, Value, Value) {
    let bits = match t {
        DataType::Int2 => 16,
        DataType::Int4 => 32,
        DataType::Int8 => 64,
        DataType::Float8 => return (int(53), int(2), N),
        DataType::Numeric(Some((p, s))) => return (int(i64::from(p)), int(10), int(i64::from(s))),
        DataType::Numeric(None) => return (N, int(10), N),
        _ => return (N, N, N),
    };
    (int(bits), int(2), int(0))
}

fn columns(s: &Snapshot) -> Result<Relation> {
    let cols: &[(&str, Ty)] = &[
        ("table_catalog", T),
        ("table_schema", T),
        ("table_name", T),
        ("column_name", T),
        ("ordinal_position", I),
        ("column_default", T),
        ("is_nullable", T),
        ("data_type", T),
        ("character_maximum_length", I),
        ("character_octet_length", I),
        ("numeric_precision", I),
        ("numeric_precision_radix", I),
        ("numeric_scale", I),
        ("datetime_precision", I),
        ("interval_type", T),
        ("interval_precision", I),
        ("character_set_catalog", T),
        ("character_set_schema", T),
        ("character_set_name", T),
        ("collation_catalog", T),
        ("collation_schema", T),
        ("collation_name", T),
        ("domain_catalog", T),
        ("domain_schema", T),
        ("domain_name", T),
        ("udt_catalog", T),
        ("udt_schema", T),
        ("udt_name", T),
        ("scope_catalog", T),
        ("scope_schema", T),
        ("scope_name", T),
        ("maximum_cardinality", I),
        ("dtd_identifier", T),
        ("is_self_referencing", T),
        ("is_identity", T),
        ("identity_generation", T),
        ("identity_start", T),
        ("identity_increment", T),
        ("identity_maximum", T),
        ("identity_minimum", T),
        ("identity_cycle", T),
        ("is_generated", T),
        ("generation_expression", T),
        ("is_updatable", T),
    ];
    let mut rows = Vec::new();
    for t in &s.tables {
        let def = &t.def;
        for (i, c) in def.columns.iter().enumerate() {
            let nullable = c.nullable && !def.primary_key.contains(&i);
            rows.push(column_row(
                &def.name,
                i,
                &c.name,
                c.ty,
                c.default
                    .as_ref()
                    .and_then(|d| deparse::default_def(def, d, c.ty)),
                nullable,
                true,
            ));
        }
    }
    // A view's columns, as its query describes them (Augur's views are read-only).
    for v in &s.views {
        for (i, (name, ty)) in v.columns.iter().enumerate() {
            rows.push(column_row(&v.name, i, name, *ty, None, true, false));
        }
    }
    relation(cols, rows)
}

/// One information_schema.columns row: column `i` (from 0) `name` of type `ty` of table or view
/// `table`.
fn column_row(
    table: &str,
    i: usize,
    name: &str,
    ty: DataType,
    default: Option<String>,
    nullable: bool,
    updatable: bool,
) -> Vec<Value> {
    let (oid, _) = column_type(ty);
    let pt = by_oid(oid);
    let (max_len, octets) = match ty {
        DataType::Varchar(Some(n)) | DataType::Bpchar(Some(n)) => (int(i64::from(n)), int(4 * i64::from(n))),
        DataType::Text(_) | DataType::Varchar(None) | DataType::Bpchar(None) => (N, int(1_073_741_824)),
        _ => (N, N),
    };
    let (prec, radix, scale) = numeric(ty);
    let dt_prec = match ty {
        DataType::Date => int(0),
        DataType::Timestamp | DataType::TimestampTz | DataType::Interval | DataType::Time(None) => int(6),
        DataType::Time(Some(p)) => int(i64::from(p)),
        _ => N,
    };
    let pos = i as i64 + 1;
    vec![
        text(DATABASE_NAME),
        text("public"),
        text(table),
        text(name),
        int(pos),
        default.map_or(N, Value::Text),
        yes_no(nullable),
        // Arrays are `ARRAY` here (their element type is in element_types).
        text(match ty {
            DataType::Array(_) => "ARRAY",
            _ => pt.map_or("USER-DEFINED", |p| p.display),
        }),
        max_len,
        octets,
        prec,
        radix,
        scale,
        dt_prec,
        N,
        N,
        N,
        N,
        N,
        N,
        N,
        N,
        N,
        N,
        N,
        text(DATABASE_NAME),
        text("pg_catalog"),
        text(pt.map_or("", |p| p.name)),
        N,
        N,
        N,
        N,
        text(pos.to_string()),
        yes_no(false),
        yes_no(false),
        N,
        N,
        N,
        N,
        N,
        yes_no(false),
        text("NEVER"),
        N,
        yes_no(updatable),
    ]
}

fn schemata() -> Result<Relation> {
    let cols: &[(&str, Ty)] = &[
        ("catalog_name", T),
        ("schema_name", T),
        ("schema_owner", T),
        ("default_character_set_catalog", T),
        ("default_character_set_schema", T),
        ("default_character_set_name", T),
        ("sql_path", T),
    ];
    let rows = SCHEMAS
        .iter()
        .map(|(_, n)| vec![text(DATABASE_NAME), text(*n), text(ROLE_NAME), N, N, N, N])
        .collect();
    relation(cols, rows)
}

fn table_constraints(s: &Snapshot) -> Result<Relation> {
    let cols: &[(&str, Ty)] = &[
        ("constraint_catalog", T),
        ("constraint_schema", T),
        ("constraint_name", T),
        ("table_catalog", T),
        ("table_schema", T),
        ("table_name", T),
        ("constraint_type", T),
        ("is_deferrable", T),
        ("initially_deferred", T),
        ("enforced", T),
        ("nulls_distinct", T),
    ];
    let mut rows = Vec::new();
    let row = |name: &str, table: &str, ty: &str, nulls_distinct: Value| {
        vec![
            text(DATABASE_NAME),
            text("public"),
            text(name),
            text(DATABASE_NAME),
            text("public"),
            text(table),
            text(ty),
            yes_no(false),
            yes_no(false),
            yes_no(true),
            nulls_distinct,
        ]
    };
    for t in &s.tables {
        for ix in t.constraints() {
            let ty = if ix.primary { "PRIMARY KEY" } else { "UNIQUE" };
            rows.push(row(
                &ix.name,
                &t.def.name,
                ty,
                if ix.primary { N } else { yes_no(true) },
            ));
        }
        for (_, c) in t.checks() {
            rows.push(row(&c.name, &t.def.name, "CHECK", N));
        }
        for (name, _) in not_null_checks(t) {
            rows.push(row(&name, &t.def.name, "CHECK", N));
        }
    }
    for fk in s.foreign_keys() {
        rows.push(row(&fk.def.name, &fk.table.def.name, "FOREIGN KEY", N));
    }
    relation(cols, rows)
}

fn key_column_usage(s: &Snapshot) -> Result<Relation> {
    let cols: &[(&str, Ty)] = &[
        ("constraint_catalog", T),
        ("constraint_schema", T),
        ("constraint_name", T),
        ("table_catalog", T),
        ("table_schema", T),
        ("table_name", T),
        ("column_name", T),
        ("ordinal_position", I),
        ("position_in_unique_constraint", I),
    ];
    let mut rows = Vec::new();
    for t in &s.tables {
        for ix in t.constraints() {
            for (k, &c) in ix.columns.iter().enumerate() {
                rows.push(vec![
                    text(DATABASE_NAME),
                    text("public"),
                    text(&ix.name),
                    text(DATABASE_NAME),
                    text("public"),
                    text(&t.def.name),
                    text(&t.def.columns[c].name),
                    int(k as i64 + 1),
                    N,
                ]);
            }
        }
    }
    for fk in s.foreign_keys() {
        let t = &fk.table.def;
        for (k, &c) in fk.def.columns.iter().enumerate() {
            // The referenced column's position in the unique constraint the key matches.
            let pos = fk
                .parent_index
                .zip(fk.parent_columns.get(k))
                .and_then(|(ix, pc)| ix.columns.iter().position(|x| x == pc))
                .map_or(N, |p| int(p as i64 + 1));
            rows.push(vec![
                text(DATABASE_NAME),
                text("public"),
                text(&fk.def.name),
                text(DATABASE_NAME),
                text("public"),
                text(&t.name),
                text(&t.columns[c].name),
                int(k as i64 + 1),
                pos,
            ]);
        }
    }
    relation(cols, rows)
}

/// The NOT NULL columns of a table as information_schema lists them, CHECK constraints named
/// `<namespace oid>_<table oid>_<attnum>_not_null`: (name, check clause).
fn not_null_checks(t: &TableInfo) -> Vec<(String, String)> {
    let def = &t.def;
    def.columns
        .iter()
        .enumerate()
        .filter(|(i, c)| !c.nullable || def.primary_key.contains(i))
        .map(|(i, c)| {
            (
                format!("{PUBLIC_NS}_{}_{}_not_null", t.oid, i + 1),
                format!("{} IS NOT NULL", c.name),
            )
        })
        .collect()
}

fn referential_constraints(s: &Snapshot) -> Result<Relation> {
    let cols: &[(&str, Ty)] = &[
        ("constraint_catalog", T),
        ("constraint_schema", T),
        ("constraint_name", T),
        ("unique_constraint_catalog", T),
        ("unique_constraint_schema", T),
        ("unique_constraint_name", T),
        ("match_option", T),
        ("update_rule", T),
        ("delete_rule", T),
    ];
    let rows = s
        .foreign_keys()
        .iter()
        .map(|fk| {
            let (cat, schema, name) = match fk.parent_index {
                Some(ix) => (text(DATABASE_NAME), text("public"), text(&ix.name)),
                None => (N, N, N),
            };
            vec![
                text(DATABASE_NAME),
                text("public"),
                text(&fk.def.name),
                cat,
                schema,
                name,
                text("NONE"),
                text(deparse::action_name(fk.def.on_update)),
                text(deparse::action_name(fk.def.on_delete)),
            ]
        })
        .collect();
    relation(cols, rows)
}

/// CHECK constraints and NOT NULL columns; a CHECK's clause is pg_get_constraintdef's text
/// after `CHECK `, as PostgreSQL's view takes it.
fn check_constraints(s: &Snapshot) -> Result<Relation> {
    let cols: &[(&str, Ty)] = &[
        ("constraint_catalog", T),
        ("constraint_schema", T),
        ("constraint_name", T),
        ("check_clause", T),
    ];
    let row = |name: &str, clause: &str| vec![text(DATABASE_NAME), text("public"), text(name), text(clause)];
    let mut rows = Vec::new();
    for t in &s.tables {
        for (_, c) in t.checks() {
            let def = deparse::check_def(&t.def, c, false);
            rows.push(row(&c.name, &def["CHECK ".len()..]));
        }
        for (name, clause) in not_null_checks(t) {
            rows.push(row(&name, &clause));
        }
    }
    relation(cols, rows)
}

fn sequences(s: &Snapshot) -> Result<Relation> {
    let cols: &[(&str, Ty)] = &[
        ("sequence_catalog", T),
        ("sequence_schema", T),
        ("sequence_name", T),
        ("data_type", T),
        ("numeric_precision", I),
        ("numeric_precision_radix", I),
        ("numeric_scale", I),
        ("start_value", T),
        ("minimum_value", T),
        ("maximum_value", T),
        ("increment", T),
        ("cycle_option", T),
    ];
    let rows = s
        .sequences
        .iter()
        .map(|q| {
            let ty = q.data_type();
            let (prec, radix, scale) = numeric(ty);
            vec![
                text(DATABASE_NAME),
                text("public"),
                text(&q.name),
                text(ty.sql_name()),
                prec,
                radix,
                scale,
                text(q.start.to_string()),
                text(q.min.to_string()),
                text(q.max.to_string()),
                text(q.increment.to_string()),
                yes_no(q.cycle),
            ]
        })
        .collect();
    relation(cols, rows)
}

/// One row per view; the definition is the query text as written, and Augur's views are
/// read-only.
fn views(s: &Snapshot) -> Result<Relation> {
    let cols: &[(&str, Ty)] = &[
        ("table_catalog", T),
        ("table_schema", T),
        ("table_name", T),
        ("view_definition", T),
        ("check_option", T),
        ("is_updatable", T),
        ("is_insertable_into", T),
        ("is_trigger_updatable", T),
        ("is_trigger_deletable", T),
        ("is_trigger_insertable_into", T),
    ];
    let rows = s
        .views
        .iter()
        .map(|v| {
            vec![
                text(DATABASE_NAME),
                text("public"),
                text(&v.name),
                text(&v.sql),
                text("NONE"),
                yes_no(false),
                yes_no(false),
                yes_no(false),
                yes_no(false),
                yes_no(false),
            ]
        })
        .collect();
    relation(cols, rows)
}

/// The columns each constraint uses: a key's columns, the columns a CHECK reads, and for a
/// foreign key the referenced table's columns (as PostgreSQL's view lists them).
fn constraint_column_usage(s: &Snapshot) -> Result<Relation> {
    let cols: &[(&str, Ty)] = &[
        ("table_catalog", T),
        ("table_schema", T),
        ("table_name", T),
        ("column_name", T),
        ("constraint_catalog", T),
        ("constraint_schema", T),
        ("constraint_name", T),
    ];
    let row = |table: &str, column: &str, name: &str| {
        vec![
            text(DATABASE_NAME),
            text("public"),
            text(table),
            text(column),
            text(DATABASE_NAME),
            text("public"),
            text(name),
        ]
    };
    let mut rows = Vec::new();
    for t in &s.tables {
        let def = &t.def;
        for ix in t.constraints() {
            for &c in &ix.columns {
                rows.push(row(&def.name, &def.columns[c].name, &ix.name));
            }
        }
        for (_, c) in t.checks() {
            for k in deparse::check_columns(def, c) {
                rows.push(row(&def.name, &def.columns[k].name, &c.name));
            }
        }
    }
    for fk in s.foreign_keys() {
        if let Some(p) = fk.parent {
            for &c in &fk.parent_columns {
                rows.push(row(&p.def.name, &p.def.columns[c].name, &fk.def.name));
            }
        }
    }
    relation(cols, rows)
}

/// The table each key constraint is on, and for a foreign key the referenced table (CHECK
/// constraints are not listed, as in PostgreSQL).
fn constraint_table_usage(s: &Snapshot) -> Result<Relation> {
    let cols: &[(&str, Ty)] = &[
        ("table_catalog", T),
        ("table_schema", T),
        ("table_name", T),
        ("constraint_catalog", T),
        ("constraint_schema", T),
        ("constraint_name", T),
    ];
    let row = |table: &str, name: &str| {
        vec![
            text(DATABASE_NAME),
            text("public"),
            text(table),
            text(DATABASE_NAME),
            text("public"),
            text(name),
        ]
    };
    let mut rows = Vec::new();
    for t in &s.tables {
        for ix in t.constraints() {
            rows.push(row(&t.def.name, &ix.name));
        }
    }
    for fk in s.foreign_keys() {
        if let Some(p) = fk.parent {
            rows.push(row(&p.def.name, &fk.def.name));
        }
    }
    relation(cols, rows)
}
