//! SQL text into a session on a scratch database: parse, plan, execute. Any error is fine; a
//! panic is a finding.
//!
//! Input: UTF-8 text. Without a NUL byte it runs as a simple query (`Session::execute`, every
//! statement). With NUL bytes, the text before the first NUL is prepared (`Session::prepare`) and
//! executed twice with parameters (the second run uses the cached plan); each NUL-separated piece
//! after it is one parameter, decoded as the server decodes Bind parameters
//! (`augur::server::values::decode_param`): empty = NULL, else its first byte picks text or binary
//! format and the client's declared type.
//!
//! Every execution starts from the same database state ([`super::scratch::SCHEMA`]): the
//! database is reset after any execution that changed it, so crashes reproduce from the input
//! alone.
//!
//! Shared with `tests/fuzz_regressions.rs` (included there by path): `augur` and `std` only.

use std::sync::Mutex;

use augur::server::values::decode_param;
use augur::{Database, Session, TableDef, Value};

use super::scratch;

struct State {
    db: Database,
    fingerprint: (u64, Vec<TableDef>),
}

fn fingerprint(db: &Database) -> (u64, Vec<TableDef>) {
    let mut defs: Vec<TableDef> = db.tables().iter().map(|t| (*t.def()).clone()).collect();
    defs.sort_by(|a, b| a.name.cmp(&b.name));
    (db.stats().commits, defs)
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

/// Client-declared parameter types a binary parameter may claim (0: none).
const OIDS: [u32; 12] = [0, 16, 17, 20, 21, 23, 25, 26, 700, 701, 1082, 1114];

fn params(pieces: &[&[u8]], types: &[augur::DataType]) -> Vec<augur::Result<Value>> {
    pieces
        .iter()
        .enumerate()
        .map(|(i, p)| match p.split_first() {
            None => decode_param(None, false, 0, types.get(i).copied()),
            Some((&sel, rest)) => {
                let binary = sel & 1 != 0;
                let oid = OIDS[(sel >> 1) as usize % OIDS.len()];
                decode_param(Some(rest), binary, oid, types.get(i).copied())
            }
        })
        .collect()
}

fn exec(db: &Database, data: &[u8]) {
    let mut parts = data.split(|&b| b == 0);
    let Ok(sql) = std::str::from_utf8(parts.next().unwrap_or_default()) else {
        return;
    };
    let mut s = Session::new(db.clone());
    if !data.contains(&0) {
        let _ = s.execute(sql, &[]);
        return;
    }
    let pieces: Vec<&[u8]> = parts.collect();
    let Ok(p) = s.prepare(sql) else {
        return;
    };
    // The server refuses a Bind whose parameters fail to decode before executing anything.
    let Ok(values) = params(&pieces, &p.param_types)
        .into_iter()
        .collect::<augur::Result<Vec<Value>>>()
    else {
        return;
    };
    let _ = s.execute_prepared(&p, &values);
    let _ = s.execute_prepared(&p, &values);
}

/// Runs one input on the process's scratch database.
pub fn run(data: &[u8]) {
    let mut g = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let st = g.get_or_insert_with(|| {
        let db = scratch::open("sql");
        scratch::reset(&db);
        State {
            fingerprint: fingerprint(&db),
            db,
        }
    });
    exec(&st.db, data);
    let truncated = data.windows(8).any(|w| w.eq_ignore_ascii_case(b"truncate"));
    if truncated || fingerprint(&st.db) != st.fingerprint {
        scratch::reset(&st.db);
        st.fingerprint = fingerprint(&st.db);
    }
}
