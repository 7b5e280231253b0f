//! pg_catalog's relations (pg_class, pg_attribute, pg_type, pg_index, ...) and its views
//! (pg_tables, pg_indexes, pg_roles, pg_user, pg_settings), with PostgreSQL 15's column names
//! and types; array columns (indkey, conkey, ...) are given in PostgreSQL's text form. The
//! relations of features Augur lacks (pg_policy, pg_trigger, pg_inherits, ...) have no rows.

use super::deparse;
use super::types::{column_type, TYPES};
use super::{
    index_def, int, relation, sequence_oid, text, view_oid, Relation, Snapshot, AM_ALEX, AM_BTREE, AM_TABLE,
    DATABASE_NAME, DATABASE_OID, PG_CATALOG_NS, PUBLIC_NS, ROLE_NAME, ROLE_OID, SCHEMAS,
};
use crate::error::Result;
use crate::sql::expr::Ty;
use crate::types::{DataType, Value};

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

pub fn build(name: &str, s: &Snapshot) -> Result<Relation> {
    match name {
        "pg_namespace" => namespaces(),
        "pg_class" => classes(s),
        "pg_attribute" => attributes(s),
        "pg_type" => types(),
        "pg_index" => indexes(s),
        "pg_constraint" => constraints(s),
        "pg_attrdef" => attrdefs(s),
        "pg_description" => relation(
            &[
                ("objoid", OID),
                ("classoid", OID),
                ("objsubid", I4),
                ("description", T),
            ],
            vec![],
        ),
        "pg_database" => databases(),
        "pg_roles" | "pg_authid" => roles(name == "pg_authid"),
        "pg_user" => users(),
        "pg_settings" => settings(s),
        "pg_tables" => tables(s),
        "pg_indexes" => index_view(s),
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
        "pg_sequence" => sequences(s),
        "pg_collation" => collations(),
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
        "pg_am" => access_methods(),
        // Relations of what Augur does not have (policies, extended statistics, publications,
        // inheritance and partitions, triggers, rules, foreign tables, event triggers, and the
        // dependencies PostgreSQL records between objects): no rows, PostgreSQL's columns.
        name => relation(empty_columns(name), vec![]),
    }
}

/// The columns (PostgreSQL 15's) of the catalog relations that never have rows in Augur.
fn empty_columns(name: &str) -> &'static [(&'static str, Ty)] {
    match name {
        "pg_policy" => &[
            ("oid", OID),
            ("polname", T),
            ("polrelid", OID),
            ("polcmd", T),
            ("polpermissive", B),
            ("polroles", OID_ARRAY),
            ("polqual", T),
            ("polwithcheck", T),
        ],
        "pg_statistic_ext" => &[
            ("oid", OID),
            ("stxrelid", OID),
            ("stxname", T),
            ("stxnamespace", OID),
            ("stxowner", OID),
            ("stxstattarget", I4),
            ("stxkeys", T),
            ("stxkind", T_ARRAY),
            ("stxexprs", T),
        ],
        "pg_publication" => &[
            ("oid", OID),
            ("pubname", T),
            ("pubowner", OID),
            ("puballtables", B),
            ("pubinsert", B),
            ("pubupdate", B),
            ("pubdelete", B),
            ("pubtruncate", B),
            ("pubviaroot", B),
        ],
        "pg_publication_namespace" => &[("oid", OID), ("pnpubid", OID), ("pnnspid", OID)],
        "pg_publication_rel" => &[
            ("oid", OID),
            ("prpubid", OID),
            ("prrelid", OID),
            ("prqual", T),
            ("prattrs", T),
        ],
        "pg_inherits" => &[
            ("inhrelid", OID),
            ("inhparent", OID),
            ("inhseqno", I4),
            ("inhdetachpending", B),
        ],
        "pg_trigger" => &[
            ("oid", OID),
            ("tgrelid", OID),
            ("tgparentid", OID),
            ("tgname", T),
            ("tgfoid", OID),
            ("tgtype", I2),
            ("tgenabled", T),
            ("tgisinternal", B),
            ("tgconstrrelid", OID),
            ("tgconstrindid", OID),
            ("tgconstraint", OID),
            ("tgdeferrable", B),
            ("tginitdeferred", B),
            ("tgnargs", I2),
            ("tgattr", T),
            ("tgargs", Ty::Bytea),
            ("tgqual", T),
            ("tgoldtable", T),
            ("tgnewtable", T),
        ],
        "pg_rewrite" => &[
            ("oid", OID),
            ("rulename", T),
            ("ev_class", OID),
            ("ev_type", T),
            ("ev_enabled", T),
            ("is_instead", B),
            ("ev_qual", T),
            ("ev_action", T),
        ],
        "pg_foreign_table" => &[("ftrelid", OID), ("ftserver", OID), ("ftoptions", T_ARRAY)],
        "pg_depend" => &[
            ("classid", OID),
            ("objid", OID),
            ("objsubid", I4),
            ("refclassid", OID),
            ("refobjid", OID),
            ("refobjsubid", I4),
            ("deptype", T),
        ],
        "pg_event_trigger" => &[
            ("oid", OID),
            ("evtname", T),
            ("evtevent", T),
            ("evtowner", OID),
            ("evtfoid", OID),
            ("evtenabled", T),
            ("evttags", T_ARRAY),
        ],
        // pg_partitioned_table
        _ => &[
            ("partrelid", OID),
            ("partstrat", T),
            ("partnatts", I2),
            ("partdefid", OID),
            ("partattrs", T),
            ("partclass", T),
            ("partcollation", T),
            ("partexprs", T),
        ],
    }
}

fn namespaces() -> Result<Relation> {
    relation(
        &[("oid", OID), ("nspname", T), ("nspowner", OID), ("nspacl", T)],
        SCHEMAS
            .iter()
            .map(|(oid, n)| vec![int(*oid), text(*n), int(ROLE_OID), N])
            .collect(),
    )
}

const CLASS_COLS: &[(&str, Ty)] = &[
    ("oid", OID),
    ("relname", T),
    ("relnamespace", OID),
    ("reltype", OID),
    ("reloftype", OID),
    ("relowner", OID),
    ("relam", OID),
    ("relfilenode", OID),
    ("reltablespace", OID),
    ("relpages", I4),
    ("reltuples", F8),
    ("relallvisible", I4),
    ("reltoastrelid", OID),
    ("relhasindex", B),
    ("relisshared", B),
    ("relpersistence", T),
    ("relkind", T),
    ("relnatts", I2),
    ("relchecks", I2),
    ("relhasrules", B),
    ("relhastriggers", B),
    ("relhassubclass", B),
    ("relrowsecurity", B),
    ("relforcerowsecurity", B),
    ("relispopulated", B),
    ("relreplident", T),
    ("relispartition", B),
    ("relrewrite", OID),
    ("relacl", T),
    ("reloptions", T_ARRAY),
    ("relpartbound", T),
];

/// One pg_class row: (oid, name, kind, access method, number of columns, has indexes).
fn class_row(oid: i64, name: &str, kind: &str, am: i64, natts: usize, has_index: bool) -> Vec<Value> {
    vec![
        int(oid),
        text(name),
        int(PUBLIC_NS),
        int(0),
        int(0),
        int(ROLE_OID),
        int(am),
        int(oid),
        int(0),
        Value::Int(0),
        Value::Float(-1.0),
        Value::Int(0),
        int(0),
        b(has_index),
        b(false),
        text("p"),
        text(kind),
        Value::Int(natts as i64),
        Value::Int(0),
        b(false),
        b(false),
        b(false),
        b(false),
        b(false),
        b(true),
        text(if kind == "r" { "d" } else { "n" }),
        b(false),
        int(0),
        N,
        N,
        N,
    ]
}

fn classes(s: &Snapshot) -> Result<Relation> {
    let mut rows = Vec::new();
    for t in &s.tables {
        let def = &t.def;
        let mut row = class_row(
            t.oid,
            &def.name,
            "r",
            AM_TABLE,
            def.columns.len(),
            !t.indexes.is_empty(),
        );
        row[18] = Value::Int(def.checks.len() as i64);
        row[20] = b(s.has_triggers(t));
        rows.push(row);
        for ix in &t.indexes {
            rows.push(class_row(
                ix.oid,
                &ix.name,
                "i",
                ix.am_oid(),
                ix.columns.len(),
                false,
            ));
        }
    }
    for v in &s.views {
        rows.push(class_row(
            view_oid(&v.name),
            &v.name,
            "v",
            0,
            v.columns.len(),
            false,
        ));
    }
    for q in &s.sequences {
        rows.push(class_row(sequence_oid(&q.name), &q.name, "S", 0, 3, false));
    }
    relation(CLASS_COLS, rows)
}

const ATTRIBUTE_COLS: &[(&str, Ty)] = &[
    ("attrelid", OID),
    ("attname", T),
    ("atttypid", OID),
    ("attstattarget", I4),
    ("attlen", I2),
    ("attnum", I2),
    ("attndims", I4),
    ("attcacheoff", I4),
    ("atttypmod", I4),
    ("attbyval", B),
    ("attalign", T),
    ("attstorage", T),
    ("attcompression", T),
    ("attnotnull", B),
    ("atthasdef", B),
    ("atthasmissing", B),
    ("attidentity", T),
    ("attgenerated", T),
    ("attisdropped", B),
    ("attislocal", B),
    ("attinhcount", I4),
    ("attcollation", OID),
    ("attacl", T),
    ("attoptions", T),
    ("attfdwoptions", T),
    ("attmissingval", T),
];

/// One pg_attribute row of relation `rel` for a column of type `ty`, numbered `num` (1-based).
fn attribute_row(
    rel: i64,
    name: &str,
    ty: DataType,
    num: usize,
    not_null: bool,
    has_def: bool,
) -> Vec<Value> {
    let (oid, typmod) = column_type(ty);
    let pt = super::types::by_oid(oid);
    vec![
        int(rel),
        text(name),
        int(oid),
        Value::Int(-1),
        Value::Int(pt.map_or(-1, |t| t.len)),
        Value::Int(num as i64),
        Value::Int(0),
        Value::Int(-1),
        Value::Int(typmod),
        b(pt.is_some_and(|t| t.byval)),
        text(pt.map_or("i", |t| t.align)),
        text(pt.map_or("x", |t| t.storage)),
        text(""),
        b(not_null),
        b(has_def),
        b(false),
        text(""),
        text(""),
        b(false),
        b(true),
        Value::Int(0),
        int(if pt.is_some_and(|t| t.collatable) { 100 } else { 0 }),
        N,
        N,
        N,
        N,
    ]
}

/// The user columns (attnum > 0) of every table and index; Augur has no system columns.
fn attributes(s: &Snapshot) -> Result<Relation> {
    let mut rows = Vec::new();
    for t in &s.tables {
        let def = &t.def;
        for (i, c) in def.columns.iter().enumerate() {
            let not_null = !c.nullable || def.primary_key.contains(&i);
            rows.push(attribute_row(
                t.oid,
                &c.name,
                c.ty,
                i + 1,
                not_null,
                c.default.is_some(),
            ));
        }
        for ix in &t.indexes {
            for (k, &c) in ix.columns.iter().enumerate() {
                let col = &def.columns[c];
                rows.push(attribute_row(ix.oid, &col.name, col.ty, k + 1, false, false));
            }
        }
    }
    for q in &s.sequences {
        let oid = sequence_oid(&q.name);
        rows.push(attribute_row(oid, "last_value", DataType::Int8, 1, true, false));
        rows.push(attribute_row(oid, "log_cnt", DataType::Int8, 2, true, false));
        rows.push(attribute_row(oid, "is_called", DataType::Bool, 3, true, false));
    }
    for v in &s.views {
        let oid = view_oid(&v.name);
        for (k, (name, ty)) in v.columns.iter().enumerate() {
            rows.push(attribute_row(oid, name, *ty, k + 1, false, false));
        }
    }
    relation(ATTRIBUTE_COLS, rows)
}

fn types() -> Result<Relation> {
    let cols: &[(&str, Ty)] = &[
        ("oid", OID),
        ("typname", T),
        ("typnamespace", OID),
        ("typowner", OID),
        ("typlen", I2),
        ("typbyval", B),
        ("typtype", T),
        ("typcategory", T),
        ("typispreferred", B),
        ("typisdefined", B),
        ("typdelim", T),
        ("typrelid", OID),
        ("typsubscript", T),
        ("typelem", OID),
        ("typarray", OID),
        ("typinput", T),
        ("typoutput", T),
        ("typreceive", T),
        ("typsend", T),
        ("typmodin", T),
        ("typmodout", T),
        ("typanalyze", T),
        ("typalign", T),
        ("typstorage", T),
        ("typnotnull", B),
        ("typbasetype", OID),
        ("typtypmod", I4),
        ("typndims", I4),
        ("typcollation", OID),
        ("typdefaultbin", T),
        ("typdefault", T),
        ("typacl", T),
    ];
    let rows = TYPES
        .iter()
        .map(|t| {
            let io = |f: &str| text(format!("{}{f}", t.io));
            let length_mod = matches!(t.oid, 1042 | 1043);
            vec![
                int(t.oid),
                text(t.name),
                int(PG_CATALOG_NS),
                int(ROLE_OID),
                Value::Int(t.len),
                b(t.byval),
                text("b"),
                text(t.category),
                b(t.preferred),
                b(true),
                text(","),
                int(0),
                text(if t.elem != 0 {
                    "array_subscript_handler"
                } else {
                    "-"
                }),
                int(t.elem),
                int(t.array),
                io("in"),
                io("out"),
                io("recv"),
                io("send"),
                text(if length_mod {
                    format!("{}typmodin", t.name)
                } else {
                    "-".into()
                }),
                text(if length_mod {
                    format!("{}typmodout", t.name)
                } else {
                    "-".into()
                }),
                text(if t.elem != 0 { "array_typanalyze" } else { "-" }),
                text(t.align),
                text(t.storage),
                b(false),
                int(0),
                Value::Int(-1),
                Value::Int(0),
                int(if t.collatable { 100 } else { 0 }),
                N,
                N,
                N,
            ]
        })
        .collect();
    relation(cols, rows)
}

fn indexes(s: &Snapshot) -> Result<Relation> {
    let cols: &[(&str, Ty)] = &[
        ("indexrelid", OID),
        ("indrelid", OID),
        ("indnatts", I2),
        ("indnkeyatts", I2),
        ("indisunique", B),
        ("indnullsnotdistinct", B),
        ("indisprimary", B),
        ("indisexclusion", B),
        ("indimmediate", B),
        ("indisclustered", B),
        ("indisvalid", B),
        ("indcheckxmin", B),
        ("indisready", B),
        ("indislive", B),
        ("indisreplident", B),
        ("indkey", T),
        ("indcollation", T),
        ("indclass", T),
        ("indoption", T),
        ("indexprs", T),
        ("indpred", T),
    ];
    let mut rows = Vec::new();
    for t in &s.tables {
        for ix in &t.indexes {
            let n = ix.columns.len();
            let zeros = text(vec!["0"; n].join(" "));
            rows.push(vec![
                int(ix.oid),
                int(t.oid),
                Value::Int(n as i64),
                Value::Int(n as i64),
                b(ix.unique),
                b(false),
                b(ix.primary),
                b(false),
                b(true),
                b(false),
                b(true),
                b(false),
                b(true),
                b(true),
                b(false),
                attnums(&ix.columns, false),
                zeros.clone(),
                zeros.clone(),
                zeros,
                N,
                N,
            ]);
        }
    }
    relation(cols, rows)
}

fn constraints(s: &Snapshot) -> Result<Relation> {
    let cols: &[(&str, Ty)] = &[
        ("oid", OID),
        ("conname", T),
        ("connamespace", OID),
        ("contype", T),
        ("condeferrable", B),
        ("condeferred", B),
        ("convalidated", B),
        ("conrelid", OID),
        ("contypid", OID),
        ("conindid", OID),
        ("conparentid", OID),
        ("confrelid", OID),
        ("confupdtype", T),
        ("confdeltype", T),
        ("confmatchtype", T),
        ("conislocal", B),
        ("coninhcount", I4),
        ("connoinherit", B),
        ("conkey", I2_ARRAY),
        ("confkey", I2_ARRAY),
        ("conpfeqop", T),
        ("conppeqop", T),
        ("conffeqop", T),
        ("confdelsetcols", T),
        ("conexclop", T),
        ("conbin", T),
    ];
    let mut rows = Vec::new();
    // One row: (oid, name, type, table, index, conkey) and, for a foreign key, (parent,
    // actions, confkey); for a CHECK, conbin.
    let row = |oid: i64, name: &str, ty: &str, rel: i64, index: i64, key: Value| {
        vec![
            int(oid),
            text(name),
            int(PUBLIC_NS),
            text(ty),
            b(false),
            b(false),
            b(true),
            int(rel),
            int(0),
            int(index),
            int(0),
            int(0),
            text(" "),
            text(" "),
            text(" "),
            b(true),
            Value::Int(0),
            b(ty != "c"),
            key,
            N,
            N,
            N,
            N,
            N,
            N,
            N,
        ]
    };
    for t in &s.tables {
        for ix in t.constraints() {
            let ty = if ix.primary { "p" } else { "u" };
            rows.push(row(
                ix.constraint_oid(),
                &ix.name,
                ty,
                t.oid,
                ix.oid,
                attnums(&ix.columns, true),
            ));
        }
        for (oid, c) in t.checks() {
            let cols = deparse::check_columns(&t.def, c);
            let key = if cols.is_empty() { N } else { attnums(&cols, true) };
            let mut r = row(oid, &c.name, "c", t.oid, 0, key);
            // conbin: the condition's text, which pg_get_expr(conbin, conrelid) returns.
            let def = deparse::check_def(&t.def, c, false);
            r[25] = text(&def["CHECK (".len()..def.len() - 1]);
            rows.push(r);
        }
    }
    for fk in s.foreign_keys() {
        let t = fk.table;
        let mut r = row(
            fk.oid,
            &fk.def.name,
            "f",
            t.oid,
            fk.parent_index.map_or(0, |i| i.oid),
            attnums(&fk.def.columns, true),
        );
        r[11] = int(fk.parent.map_or(0, |p| p.oid));
        r[12] = text(deparse::action_code(fk.def.on_update));
        r[13] = text(deparse::action_code(fk.def.on_delete));
        r[14] = text("s");
        r[19] = attnums(&fk.parent_columns, true);
        rows.push(r);
    }
    relation(cols, rows)
}

fn attrdefs(s: &Snapshot) -> Result<Relation> {
    let mut rows = Vec::new();
    for t in &s.tables {
        for (i, c) in t.def.columns.iter().enumerate() {
            if let Some(d) = &c.default {
                rows.push(vec![
                    int(t.attrdef_oid(i)),
                    int(t.oid),
                    Value::Int(i as i64 + 1),
                    text(d),
                ]);
            }
        }
    }
    // adbin is the expression's SQL text: pg_get_expr(adbin, adrelid) returns it.
    relation(
        &[("oid", OID), ("adrelid", OID), ("adnum", I2), ("adbin", T)],
        rows,
    )
}

fn databases() -> Result<Relation> {
    let cols: &[(&str, Ty)] = &[
        ("oid", OID),
        ("datname", T),
        ("datdba", OID),
        ("encoding", I4),
        ("datlocprovider", T),
        ("datistemplate", B),
        ("datallowconn", B),
        ("datconnlimit", I4),
        ("dattablespace", OID),
        ("datcollate", T),
        ("datctype", T),
        ("daticulocale", T),
        ("datcollversion", T),
        ("datacl", T),
    ];
    let row = vec![
        int(DATABASE_OID),
        text(DATABASE_NAME),
        int(ROLE_OID),
        Value::Int(6),
        text("c"),
        b(false),
        b(true),
        Value::Int(-1),
        int(1663),
        text("C"),
        text("C"),
        N,
        N,
        N,
    ];
    relation(cols, vec![row])
}

fn roles(authid: bool) -> Result<Relation> {
    let mut cols: Vec<(&str, Ty)> = vec![
        ("rolname", T),
        ("rolsuper", B),
        ("rolinherit", B),
        ("rolcreaterole", B),
        ("rolcreatedb", B),
        ("rolcanlogin", B),
        ("rolreplication", B),
        ("rolconnlimit", I4),
        ("rolpassword", T),
        ("rolvaliduntil", Ty::TimestampTz),
        ("rolbypassrls", B),
    ];
    let mut row = vec![
        text(ROLE_NAME),
        b(true),
        b(true),
        b(true),
        b(true),
        b(true),
        b(false),
        Value::Int(-1),
        if authid { N } else { text("********") },
        N,
        b(false),
    ];
    if authid {
        cols.insert(0, ("oid", OID));
        row.insert(0, int(ROLE_OID));
    } else {
        cols.extend([("rolconfig", T), ("oid", OID)]);
        row.extend([N, int(ROLE_OID)]);
    }
    relation(&cols, vec![row])
}

fn users() -> Result<Relation> {
    let cols: &[(&str, Ty)] = &[
        ("usename", T),
        ("usesysid", OID),
        ("usecreatedb", B),
        ("usesuper", B),
        ("userepl", B),
        ("usebypassrls", B),
        ("passwd", T),
        ("valuntil", Ty::TimestampTz),
        ("useconfig", T),
    ];
    let row = vec![
        text(ROLE_NAME),
        int(ROLE_OID),
        b(true),
        b(true),
        b(false),
        b(false),
        text("********"),
        N,
        N,
    ];
    relation(cols, vec![row])
}

fn settings(s: &Snapshot) -> Result<Relation> {
    let cols: &[(&str, Ty)] = &[
        ("name", T),
        ("setting", T),
        ("unit", T),
        ("category", T),
        ("short_desc", T),
        ("extra_desc", T),
        ("context", T),
        ("vartype", T),
        ("source", T),
        ("min_val", T),
        ("max_val", T),
        ("enumvals", T),
        ("boot_val", T),
        ("reset_val", T),
        ("sourcefile", T),
        ("sourceline", I4),
        ("pending_restart", B),
    ];
    let rows = s
        .settings
        .iter()
        .map(|(k, v)| {
            // Augur keeps settings by lower-case name; pg_settings spells a few in mixed case.
            let name = match k.as_str() {
                "datestyle" => "DateStyle",
                "intervalstyle" => "IntervalStyle",
                "timezone" => "TimeZone",
                k => k,
            };
            vec![
                text(name),
                text(v),
                N,
                text("Augur"),
                text(""),
                N,
                text("user"),
                text("string"),
                text("session"),
                N,
                N,
                N,
                text(v),
                text(v),
                N,
                N,
                b(false),
            ]
        })
        .collect();
    relation(cols, rows)
}

fn tables(s: &Snapshot) -> Result<Relation> {
    let cols: &[(&str, Ty)] = &[
        ("schemaname", T),
        ("tablename", T),
        ("tableowner", T),
        ("tablespace", T),
        ("hasindexes", B),
        ("hasrules", B),
        ("hastriggers", B),
        ("rowsecurity", B),
    ];
    let rows = s
        .tables
        .iter()
        .map(|t| {
            vec![
                text("public"),
                text(&t.def.name),
                text(ROLE_NAME),
                N,
                b(!t.indexes.is_empty()),
                b(false),
                b(false),
                b(false),
            ]
        })
        .collect();
    relation(cols, rows)
}

fn index_view(s: &Snapshot) -> Result<Relation> {
    let cols: &[(&str, Ty)] = &[
        ("schemaname", T),
        ("tablename", T),
        ("indexname", T),
        ("tablespace", T),
        ("indexdef", T),
    ];
    let mut rows = Vec::new();
    for t in &s.tables {
        for ix in &t.indexes {
            rows.push(vec![
                text("public"),
                text(&t.def.name),
                text(&ix.name),
                N,
                text(index_def(&t.def, ix)),
            ]);
        }
    }
    relation(cols, rows)
}

/// A sequence's type, from its bounds (Augur keeps the bounds, not the type).
pub fn sequence_type(max: i64) -> DataType {
    if max == i64::from(i16::MAX) {
        DataType::Int2
    } else if max == i64::from(i32::MAX) {
        DataType::Int4
    } else {
        DataType::Int8
    }
}

fn sequences(s: &Snapshot) -> Result<Relation> {
    let cols: &[(&str, Ty)] = &[
        ("seqrelid", OID),
        ("seqtypid", OID),
        ("seqstart", I8),
        ("seqincrement", I8),
        ("seqmax", I8),
        ("seqmin", I8),
        ("seqcache", I8),
        ("seqcycle", B),
    ];
    let rows = s
        .sequences
        .iter()
        .map(|q| {
            vec![
                int(sequence_oid(&q.name)),
                int(i64::from(sequence_type(q.max).pg_oid())),
                Value::Int(q.start),
                Value::Int(q.increment),
                Value::Int(q.max),
                Value::Int(q.min),
                Value::Int(1),
                b(q.cycle),
            ]
        })
        .collect();
    relation(cols, rows)
}

/// The database default (text compares byte-wise: the C collation) and C / POSIX.
fn collations() -> Result<Relation> {
    let cols: &[(&str, Ty)] = &[
        ("oid", OID),
        ("collname", T),
        ("collnamespace", OID),
        ("collowner", OID),
        ("collprovider", T),
        ("collisdeterministic", B),
        ("collencoding", I4),
        ("collcollate", T),
        ("collctype", T),
        ("colliculocale", T),
        ("collversion", T),
    ];
    let row = |oid: i64, name: &str, provider: &str, locale: Option<&str>| {
        let loc = || locale.map_or(N, text);
        vec![
            int(oid),
            text(name),
            int(PG_CATALOG_NS),
            int(ROLE_OID),
            text(provider),
            b(true),
            Value::Int(-1),
            loc(),
            loc(),
            N,
            N,
        ]
    };
    relation(
        cols,
        vec![
            row(100, "default", "d", None),
            row(950, "C", "c", Some("C")),
            row(951, "POSIX", "c", Some("POSIX")),
        ],
    )
}

fn access_methods() -> Result<Relation> {
    relation(
        &[("oid", OID), ("amname", T), ("amhandler", T), ("amtype", T)],
        vec![
            vec![int(AM_TABLE), text("augur"), text("-"), text("t")],
            vec![int(AM_BTREE), text("btree"), text("bthandler"), text("i")],
            vec![int(AM_ALEX), text("alex"), text("-"), text("i")],
        ],
    )
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
        assert_eq!(sequence_type(i64::from(i32::MAX)), DataType::Int4);
    }
}
