//! pg_database, pg_roles / pg_authid, pg_user and pg_settings: the one database, the one
//! role, and the session's settings.

use super::{b, Ty, B, I4, N, OID, T};
use crate::error::Result;
use crate::sql::catalog::{
    int, relation, text, Relation, Snapshot, DATABASE_NAME, DATABASE_OID, ROLE_NAME, ROLE_OID,
};
use crate::types::Value;

pub(super) fn databases() -> Result<Relation> {
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

pub(super) fn roles(authid: bool) -> Result<Relation> {
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

pub(super) fn users() -> Result<Relation> {
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

pub(super) fn settings(s: &Snapshot) -> Result<Relation> {
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
