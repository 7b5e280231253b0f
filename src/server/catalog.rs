//! Answers the catalog queries that psql's backslash commands, pgbench and drivers send
//! (`pg_catalog.pg_class`, `pg_attribute`, `pg_index`, `pg_database`, ...) from Augur's own
//! catalog (`Database::tables()` / `Table::def()`).
//!
//! Augur has no pg_catalog tables; the SQL layer does not see these queries. Instead, each query
//! is recognized by the catalog relations it reads (its FROM list), the select list is split
//! into items, and every item is evaluated per relation / column / index by what it names
//! (`c.relname`, `pg_catalog.format_type(...)`, `a.attnotnull`, an alias like `"Owner"`, ...).
//! The set covered is what psql 15's `\d`, `\dt`, `\di`, `\d+`, `\d NAME`, `\l` send, pgbench's
//! partition probe, and queries on relations that never have rows in Augur (policies,
//! statistics objects, publications, inheritance, triggers, foreign keys), which answer with no
//! rows. Anything else is left to the SQL layer.
//!
//! OIDs: a table with id `n` is `16384 + 100 n`; its primary-key index is that + 1 and its
//! secondary indexes follow. They change when a table is rebuilt (TRUNCATE), as in PostgreSQL.

use std::sync::Arc;

use sqlparser::tokenizer::Token;

use crate::engine::{Database, Table, TableDef};
use crate::error::Result;
use crate::index::keyed::IndexKind;
use crate::sql::lexer::lex;
use crate::types::{DataType, Row, Value};

/// Rows of a catalog answer, as the SQL layer would return them.
#[derive(Debug, Clone)]
pub struct CatalogResult {
    pub columns: Vec<(String, DataType)>,
    pub rows: Vec<Row>,
}

impl CatalogResult {
    pub fn tag(&self) -> String {
        format!("SELECT {}", self.rows.len())
    }
}

/// Who is asking (for owner and database names).
#[derive(Debug, Clone)]
pub struct Ctx {
    pub user: String,
    pub database: String,
}

/// Cheap test run on every query before parsing it: does it read catalog relations?
pub fn mentions_catalog(sql: &str) -> bool {
    let b = sql.as_bytes();
    // "pg_" followed by one of the catalog names we answer, in any case.
    let lower_has = |needle: &[u8]| {
        b.windows(needle.len())
            .any(|w| w.iter().zip(needle).all(|(x, y)| x.to_ascii_lowercase() == *y))
    };
    lower_has(b"pg_catalog.") || lower_has(b"pg_class") || lower_has(b"pg_database")
}

const PUBLIC: &str = "public";

/// One relation as pg_class shows it.
#[derive(Clone)]
struct Rel {
    oid: i64,
    name: String,
    /// 'r' table, 'i' index.
    kind: char,
    table: Arc<Table>,
    def: Arc<TableDef>,
    /// For an index: its columns and flags.
    index: Option<Idx>,
}

#[derive(Clone)]
struct Idx {
    name: String,
    oid: i64,
    columns: Vec<usize>,
    unique: bool,
    primary: bool,
    method: &'static str,
}

fn table_oid(def: &TableDef) -> i64 {
    16384 + 100 * def.id as i64
}

fn indexes_of(t: &Arc<Table>, def: &TableDef) -> Vec<Idx> {
    let base = table_oid(def);
    let mut v = Vec::new();
    if def.has_primary_key() {
        v.push(Idx {
            name: def
                .pkey_name
                .clone()
                .unwrap_or_else(|| format!("{}_pkey", def.name)),
            oid: base + 1,
            columns: def.primary_key.clone(),
            unique: true,
            primary: true,
            method: match t.key_index_kind() {
                IndexKind::Alex => "alex",
                IndexKind::BTree => "btree",
            },
        });
    }
    for (i, ix) in def.indexes.iter().enumerate() {
        v.push(Idx {
            name: ix.name.clone(),
            oid: base + 2 + i as i64,
            columns: ix.columns.clone(),
            unique: ix.unique,
            primary: false,
            method: "btree",
        });
    }
    v
}

fn relations(db: &Database) -> Vec<Rel> {
    let mut out = Vec::new();
    for t in db.tables() {
        let def = t.def();
        out.push(Rel {
            oid: table_oid(&def),
            name: def.name.clone(),
            kind: 'r',
            table: t.clone(),
            def: def.clone(),
            index: None,
        });
        for ix in indexes_of(&t, &def) {
            out.push(Rel {
                oid: ix.oid,
                name: ix.name.clone(),
                kind: 'i',
                table: t.clone(),
                def: def.clone(),
                index: Some(ix),
            });
        }
    }
    out
}

/// Answers `sql` if it is a catalog query this module knows; None: not ours.
pub fn answer(sql: &str, db: &Database, cx: &Ctx) -> Option<Result<CatalogResult>> {
    if !mentions_catalog(sql) {
        return None;
    }
    let q = Query::new(sql)?;
    let from = q.from_lower.as_str();
    let r = if from.contains("pg_catalog.pg_partitioned_table") && q.lower.contains("c.relname = '") {
        pgbench_partitions(&q, db)
    } else if from.contains("pg_catalog.pg_database") {
        databases(&q, cx)
    } else if from.contains("pg_catalog.pg_attribute a") && q.lower.contains("a.attrelid = '") {
        attributes(&q, db)
    } else if from.starts_with("pg_catalog.pg_class c, pg_catalog.pg_class c2, pg_catalog.pg_index i") {
        table_indexes(&q, db)
    } else if from.starts_with("pg_catalog.pg_index i, pg_catalog.pg_class c, pg_catalog.pg_class c2") {
        index_info(&q, db)
    } else if from.starts_with("pg_catalog.pg_class c") && q.lower.contains("c.relchecks") {
        class_info(&q, db)
    } else if from.starts_with("pg_catalog.pg_class c") && q.lower.contains("c.relkind in (") {
        relation_list(&q, db, cx)
    } else if from.starts_with("pg_catalog.pg_class c") && q.lower.contains("operator(pg_catalog.~)") {
        relation_lookup(&q, db)
    } else if [
        "pg_catalog.pg_policy",
        "pg_catalog.pg_statistic_ext",
        "pg_catalog.pg_publication",
        "pg_catalog.pg_inherits",
        "pg_catalog.pg_trigger",
        "pg_catalog.pg_constraint",
        "pg_catalog.pg_rewrite",
        "pg_catalog.pg_foreign_table",
        "pg_catalog.pg_description",
        "pg_catalog.pg_sequence",
        "pg_catalog.pg_event_trigger",
    ]
    .iter()
    .any(|t| from.contains(t))
    {
        Some(empty(&q))
    } else {
        None
    }?;
    Some(Ok(r))
}

/// A catalog query: its text, lower-cased text, select items and FROM clause.
struct Query {
    lower: String,
    /// (expression, lower-cased expression, output name)
    items: Vec<(String, String, String)>,
    from_lower: String,
}

impl Query {
    fn new(sql: &str) -> Option<Query> {
        let lower = sql.to_ascii_lowercase();
        let mask = mask(sql)?;
        let sel = find_word(&mask, "select", 0)?;
        let from = find_word(&mask, "from", sel)?;
        // End of the FROM list: the next top-level WHERE / ORDER / GROUP / UNION / LIMIT.
        let end = ["where", "order", "group", "union", "limit"]
            .iter()
            .filter_map(|k| find_word(&mask, k, from))
            .min()
            .unwrap_or(lower.len());
        let from_lower = normalize_ws(&lower[from + 4..end]);
        let mut items = Vec::new();
        let mut start = sel + 6;
        let list_end = from;
        for (i, c) in mask[..list_end].char_indices().skip(start) {
            if c == ',' {
                items.push(item(&sql[start..i], &lower[start..i], &mask[start..i]));
                start = i + 1;
            }
        }
        items.push(item(
            &sql[start..list_end],
            &lower[start..list_end],
            &mask[start..list_end],
        ));
        Some(Query {
            lower,
            items,
            from_lower,
        })
    }

    /// The first quoted OID literal after `key` (e.g. `c.oid = '16384'`).
    fn oid_after(&self, key: &str) -> Option<i64> {
        self.lower.match_indices(key).find_map(|(i, _)| {
            let rest = &self.lower[i + key.len()..];
            let rest = rest
                .trim_start()
                .strip_prefix('=')?
                .trim_start()
                .strip_prefix('\'')?;
            let end = rest.find('\'')?;
            rest[..end].parse().ok()
        })
    }

    /// The pattern of `c.relname OPERATOR(pg_catalog.~) '^(...)$'`, if any.
    fn name_pattern(&self) -> Option<String> {
        let key = "c.relname operator(pg_catalog.~) '";
        let i = self.lower.find(key)? + key.len();
        let rest = &self.lower[i..];
        let end = rest.find('\'')?;
        Some(rest[..end].to_string())
    }

    fn columns(&self, ty: impl Fn(&str) -> DataType) -> Vec<(String, DataType)> {
        self.items
            .iter()
            .map(|(_, l, name)| (name.clone(), ty(l)))
            .collect()
    }
}

fn item(orig: &str, lower: &str, mask: &str) -> (String, String, String) {
    let orig = orig.trim();
    let lower = lower.trim();
    let mask = mask.trim();
    let name = match mask.rfind(" as ") {
        Some(i) => orig[i + 4..].trim().trim_matches('"').to_string(),
        None => {
            let head = mask.split('(').next().unwrap_or(mask);
            let last = head.rsplit('.').next().unwrap_or(head).trim();
            if lower.contains('(') && !head.trim().is_empty() {
                last.to_string()
            } else if head.trim().is_empty() || last.starts_with('_') || last.starts_with('\'') {
                "?column?".to_string()
            } else {
                last.to_string()
            }
        }
    };
    (orig.to_string(), lower.to_string(), name)
}

/// The text lower-cased, with quoted strings, quoted identifiers and parenthesized parts
/// replaced by `_` and whitespace and comments by spaces (byte for byte, so positions match the
/// text): top-level keywords and commas can then be found by plain search. None if the SQL
/// lexer rejects the text (it is then no catalog query of ours).
fn mask(sql: &str) -> Option<String> {
    let l = lex(sql).ok()?;
    let mut out = String::with_capacity(sql.len());
    let mut depth = 0usize;
    for (t, r) in l.tokens.iter().zip(&l.ranges) {
        let text = &sql[r.clone()];
        let paren = match t.token {
            Token::LParen => {
                depth += 1;
                true
            }
            Token::RParen => {
                depth = depth.saturating_sub(1);
                true
            }
            _ => false,
        };
        let quoted = text.contains(['\'', '"']) || matches!(t.token, Token::DollarQuotedString(_));
        if paren || quoted || depth > 0 {
            out.extend(std::iter::repeat_n('_', text.len()));
        } else if matches!(t.token, Token::Whitespace(_)) {
            out.extend(std::iter::repeat_n(' ', text.len()));
        } else {
            out.push_str(&text.to_ascii_lowercase());
        }
    }
    Some(out)
}

fn find_word(mask: &str, word: &str, from: usize) -> Option<usize> {
    let b = mask.as_bytes();
    let mut i = from;
    while let Some(p) = mask.get(i..)?.find(word) {
        let s = i + p;
        let e = s + word.len();
        let before = s == 0 || !(b[s - 1].is_ascii_alphanumeric() || b[s - 1] == b'_' || b[s - 1] == b'.');
        let after = e >= b.len() || !(b[e].is_ascii_alphanumeric() || b[e] == b'_');
        if before && after {
            return Some(s);
        }
        i = e;
    }
    None
}

fn normalize_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn text(s: impl Into<String>) -> Value {
    Value::Text(s.into())
}

fn t_text(_: &str) -> DataType {
    DataType::Text(None)
}

/// Matches psql's name patterns: `^(...)$` with `.`, `*`, `+`, `?` and `\` escapes.
fn pattern_matches(pattern: &str, name: &str) -> bool {
    let p = pattern
        .strip_prefix("^(")
        .and_then(|p| p.strip_suffix(")$"))
        .unwrap_or(pattern);
    if p.contains('|') || p.contains('[') {
        return false;
    }
    // Atoms with an optional quantifier.
    let mut atoms: Vec<(Option<char>, char)> = Vec::new();
    let mut it = p.chars();
    while let Some(c) = it.next() {
        let atom = match c {
            '\\' => Some(it.next().unwrap_or('\\')),
            '.' => None,
            '*' | '+' | '?' if !atoms.is_empty() => {
                let last = atoms.len() - 1;
                atoms[last].1 = c;
                continue;
            }
            c => Some(c),
        };
        atoms.push((atom, ' '));
    }
    fn m(atoms: &[(Option<char>, char)], s: &[char]) -> bool {
        let Some(((a, q), rest)) = atoms.split_first() else {
            return s.is_empty();
        };
        let ok = |c: char| a.is_none_or(|a| a == c);
        match q {
            '*' | '?' | '+' => {
                let max = if *q == '?' { 1 } else { s.len() };
                let min = usize::from(*q == '+');
                let mut n = 0;
                while n < max && n < s.len() && ok(s[n]) {
                    n += 1;
                }
                (min..=n).rev().any(|k| m(rest, &s[k..]))
            }
            _ => !s.is_empty() && ok(s[0]) && m(rest, &s[1..]),
        }
    }
    let s: Vec<char> = name.chars().collect();
    m(&atoms, &s)
}

fn relkind_filter(q: &Query) -> Vec<char> {
    let key = "c.relkind in (";
    let Some(i) = q.lower.find(key) else {
        return vec!['r', 'i'];
    };
    let rest = &q.lower[i + key.len()..];
    let end = rest.find(')').unwrap_or(rest.len());
    rest[..end]
        .split(',')
        .filter_map(|s| s.trim().trim_matches('\'').chars().next())
        .collect()
}

/// `\d`, `\dt`, `\di`, `\dt+`, ...: one row per relation.
fn relation_list(q: &Query, db: &Database, cx: &Ctx) -> Option<CatalogResult> {
    let kinds = relkind_filter(q);
    let pat = q.name_pattern();
    let mut rels: Vec<Rel> = relations(db)
        .into_iter()
        .filter(|r| kinds.contains(&r.kind))
        .filter(|r| pat.as_deref().is_none_or(|p| pattern_matches(p, &r.name)))
        .collect();
    rels.sort_by(|a, b| a.name.cmp(&b.name));
    let rows = rels
        .iter()
        .map(|r| {
            q.items
                .iter()
                .map(|(_, l, name)| match name.as_str() {
                    "Schema" => text(PUBLIC),
                    "Name" => text(&r.name),
                    "Type" => text(if r.kind == 'i' { "index" } else { "table" }),
                    "Owner" => text(&cx.user),
                    "Table" => text(&r.def.name),
                    "Persistence" => text("permanent"),
                    "Access method" => text(match &r.index {
                        Some(ix) => ix.method,
                        None => "augur",
                    }),
                    "Size" => match &r.index {
                        Some(ix) if ix.primary => text(pretty_size(r.table.index_heap_bytes() as u64)),
                        _ => Value::Null,
                    },
                    _ if l.contains("relname") => text(&r.name),
                    _ => Value::Null,
                })
                .collect()
        })
        .collect();
    Some(CatalogResult {
        columns: q.columns(t_text),
        rows,
    })
}

fn pretty_size(b: u64) -> String {
    match b {
        b if b < 10 * 1024 => format!("{b} bytes"),
        b if b < 10 * 1024 * 1024 => format!("{} kB", (b + 512) / 1024),
        b if b < 10 * 1024 * 1024 * 1024 => format!("{} MB", (b + (1 << 19)) >> 20),
        b => format!("{} GB", (b + (1 << 29)) >> 30),
    }
}

/// `\d NAME` step 1: which relations match the pattern.
fn relation_lookup(q: &Query, db: &Database) -> Option<CatalogResult> {
    let pat = q.name_pattern()?;
    let mut rels: Vec<Rel> = relations(db)
        .into_iter()
        .filter(|r| pattern_matches(&pat, &r.name))
        .collect();
    rels.sort_by(|a, b| a.name.cmp(&b.name));
    let rows = rels
        .iter()
        .map(|r| {
            q.items
                .iter()
                .map(|(_, l, _)| {
                    if l.ends_with("oid") {
                        Value::Int(r.oid)
                    } else if l.contains("nspname") {
                        text(PUBLIC)
                    } else if l.contains("relname") {
                        text(&r.name)
                    } else {
                        Value::Null
                    }
                })
                .collect()
        })
        .collect();
    Some(CatalogResult {
        columns: q.columns(|l| {
            if l.ends_with("oid") {
                DataType::Int8
            } else {
                DataType::Text(None)
            }
        }),
        rows,
    })
}

fn rel_by_oid(db: &Database, oid: i64) -> Option<Rel> {
    relations(db).into_iter().find(|r| r.oid == oid)
}

/// `\d NAME` step 2: pg_class flags of one relation.
fn class_info(q: &Query, db: &Database) -> Option<CatalogResult> {
    let oid = q.oid_after("c.oid")?;
    let rows = match rel_by_oid(db, oid) {
        None => vec![],
        Some(r) => vec![q
            .items
            .iter()
            .map(|(_, l, _)| match l.as_str() {
                "c.relchecks" => Value::Int(0),
                "c.relkind" => text(r.kind.to_string()),
                "c.relhasindex" => Value::Bool(r.kind == 'r' && !indexes_of(&r.table, &r.def).is_empty()),
                "c.relpersistence" => text("p"),
                "c.relreplident" => text("d"),
                "am.amname" => match &r.index {
                    Some(ix) => text(ix.method),
                    None => text("augur"),
                },
                "c.reltablespace" => Value::Int(0),
                l if l.starts_with("case when c.reloftype") => text(""),
                l if l.starts_with("c.relhas") || l.starts_with("c.rel") || l.starts_with("false") => {
                    Value::Bool(false)
                }
                "''" => text(""),
                l if l.contains("array_to_string") => text(""),
                _ => Value::Null,
            })
            .collect()],
    };
    Some(CatalogResult {
        columns: q.columns(|l| match l {
            "c.relchecks" | "c.reltablespace" => DataType::Int8,
            l if l.starts_with("c.relhas") || l.starts_with("c.relrow") || l.starts_with("c.relforce") => {
                DataType::Bool
            }
            "false as relhasoids" | "c.relispartition" => DataType::Bool,
            _ => DataType::Text(None),
        }),
        rows,
    })
}

fn column_name(def: &TableDef, i: usize) -> String {
    def.columns.get(i).map(|c| c.name.clone()).unwrap_or_default()
}

fn storage(t: DataType) -> &'static str {
    match t {
        DataType::Text(_) | DataType::Bytea => "x",
        _ => "p",
    }
}

/// `\d NAME` step 3: the columns of a table (or the key columns of an index).
fn attributes(q: &Query, db: &Database) -> Option<CatalogResult> {
    let oid = q.oid_after("a.attrelid")?;
    let rel = rel_by_oid(db, oid);
    let cols: Vec<usize> = match &rel {
        None => vec![],
        Some(r) => match &r.index {
            Some(ix) => ix.columns.clone(),
            None => (0..r.def.columns.len()).collect(),
        },
    };
    let rows = match &rel {
        None => vec![],
        Some(r) => cols
            .iter()
            .map(|&c| {
                let col = &r.def.columns[c];
                let not_null = !col.nullable || r.def.primary_key.contains(&c);
                q.items
                    .iter()
                    .map(|(_, l, name)| {
                        if l == "a.attname" {
                            text(&col.name)
                        } else if l.contains("format_type") {
                            text(col.ty.sql_name())
                        } else if l.contains("pg_attrdef") {
                            col.default.clone().map_or(Value::Null, Value::Text)
                        } else if l == "a.attnotnull" {
                            Value::Bool(not_null)
                        } else if name == "is_key" {
                            text("yes")
                        } else if name == "indexdef" {
                            text(&col.name)
                        } else if l == "a.attstorage" {
                            text(storage(col.ty))
                        } else if l == "a.attidentity" || l == "a.attgenerated" || name == "attcompression" {
                            text("")
                        } else {
                            Value::Null
                        }
                    })
                    .collect()
            })
            .collect(),
    };
    Some(CatalogResult {
        columns: q.columns(|l| {
            if l == "a.attnotnull" {
                DataType::Bool
            } else {
                DataType::Text(None)
            }
        }),
        rows,
    })
}

fn index_def(r: &Rel, ix: &Idx) -> String {
    let cols: Vec<String> = ix.columns.iter().map(|&c| column_name(&r.def, c)).collect();
    format!(
        "CREATE {}INDEX {} ON {PUBLIC}.{} USING {} ({})",
        if ix.unique { "UNIQUE " } else { "" },
        ix.name,
        r.def.name,
        ix.method,
        cols.join(", ")
    )
}

/// `\d TABLE` step 4: the indexes of a table.
fn table_indexes(q: &Query, db: &Database) -> Option<CatalogResult> {
    let oid = q.oid_after("c.oid")?;
    let rows = match rel_by_oid(db, oid) {
        Some(r) if r.kind == 'r' => indexes_of(&r.table, &r.def)
            .iter()
            .map(|ix| {
                let cols: Vec<String> = ix.columns.iter().map(|&c| column_name(&r.def, c)).collect();
                q.items
                    .iter()
                    .map(|(_, l, _)| match l.as_str() {
                        "c2.relname" => text(&ix.name),
                        "i.indisprimary" => Value::Bool(ix.primary),
                        "i.indisunique" => Value::Bool(ix.unique),
                        "i.indisvalid" => Value::Bool(true),
                        "contype" if ix.primary => text("p"),
                        "c2.reltablespace" => Value::Int(0),
                        l if l.starts_with("pg_catalog.pg_get_indexdef") => text(index_def(&r, ix)),
                        l if l.starts_with("pg_catalog.pg_get_constraintdef") && ix.primary => {
                            text(format!("PRIMARY KEY ({})", cols.join(", ")))
                        }
                        l if l.starts_with("i.indis") || l.starts_with("conde") => Value::Bool(false),
                        _ => Value::Null,
                    })
                    .collect()
            })
            .collect(),
        _ => vec![],
    };
    Some(CatalogResult {
        columns: q.columns(|l| {
            if l.starts_with("i.indis") || l.starts_with("conde") {
                DataType::Bool
            } else {
                DataType::Text(None)
            }
        }),
        rows,
    })
}

/// `\d INDEX` step 4: the index's flags and table.
fn index_info(q: &Query, db: &Database) -> Option<CatalogResult> {
    let oid = q.oid_after("c.oid")?;
    let rows = match rel_by_oid(db, oid) {
        Some(Rel {
            index: Some(ix), def, ..
        }) => vec![q
            .items
            .iter()
            .map(|(_, l, name)| match l.as_str() {
                "i.indisunique" => Value::Bool(ix.unique),
                "i.indisprimary" => Value::Bool(ix.primary),
                "i.indisvalid" => Value::Bool(true),
                "a.amname" => text(ix.method),
                "c2.relname" => text(&def.name),
                _ if name == "condeferrable" || name == "condeferred" || l.starts_with("i.ind") => {
                    Value::Bool(false)
                }
                _ => Value::Null,
            })
            .collect()],
        _ => vec![],
    };
    Some(CatalogResult {
        columns: q.columns(|l| {
            if l.starts_with("i.ind") || l.contains("condefer") {
                DataType::Bool
            } else {
                DataType::Text(None)
            }
        }),
        rows,
    })
}

/// `\l`: the one database.
fn databases(q: &Query, cx: &Ctx) -> Option<CatalogResult> {
    let row = q
        .items
        .iter()
        .map(|(_, l, name)| match name.as_str() {
            "Name" => text(&cx.database),
            "Owner" => text(&cx.user),
            "Encoding" => text("UTF8"),
            "Collate" | "Ctype" => text("C"),
            "Locale Provider" => text("libc"),
            _ if l == "d.datname" || name == "datname" => text(&cx.database),
            _ => Value::Null,
        })
        .collect();
    Some(CatalogResult {
        columns: q.columns(t_text),
        rows: vec![row],
    })
}

/// pgbench's probe for a partitioned pgbench_accounts: (search-path position, strategy, count).
fn pgbench_partitions(q: &Query, db: &Database) -> Option<CatalogResult> {
    let key = "c.relname = '";
    let i = q.lower.find(key)? + key.len();
    let name = &q.lower[i..i + q.lower[i..].find('\'')?];
    let rows = if db.table(name).is_ok() {
        vec![vec![Value::Int(1), Value::Null, Value::Int(0)]]
    } else {
        vec![]
    };
    Some(CatalogResult {
        columns: vec![
            ("n".into(), DataType::Int4),
            ("partstrat".into(), DataType::Text(None)),
            ("count".into(), DataType::Int8),
        ],
        rows,
    })
}

/// Relations that never have rows in Augur.
fn empty(q: &Query) -> CatalogResult {
    CatalogResult {
        columns: q.columns(t_text),
        rows: vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns() {
        assert!(pattern_matches("^(t)$", "t"));
        assert!(!pattern_matches("^(t)$", "tt"));
        assert!(pattern_matches("^(t.*)$", "tab"));
        assert!(pattern_matches("^(pgbench_.*)$", "pgbench_accounts"));
        assert!(pattern_matches("^(t.b)$", "tab"));
        assert!(!pattern_matches("^(t.b)$", "tb"));
        assert!(pattern_matches("^(a\\.b)$", "a.b"));
    }

    #[test]
    fn select_items() {
        let q = Query::new(
            "SELECT n.nspname as \"Schema\",\n  c.relname as \"Name\",\n  CASE c.relkind WHEN 'r' THEN 'table' END as \"Type\"\nFROM pg_catalog.pg_class c\n     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace\nWHERE c.relkind IN ('r','p','')\nORDER BY 1,2;",
        )
        .unwrap();
        let names: Vec<&str> = q.items.iter().map(|i| i.2.as_str()).collect();
        assert_eq!(names, ["Schema", "Name", "Type"]);
        assert!(q.from_lower.starts_with("pg_catalog.pg_class c left join"));
        assert_eq!(relkind_filter(&q), vec!['r', 'p']);
        let q = Query::new("SELECT c.relchecks, c.relkind FROM pg_catalog.pg_class c WHERE c.oid = '16484';")
            .unwrap();
        assert_eq!(q.oid_after("c.oid"), Some(16484));
        assert_eq!(q.items[1].2, "relkind");
    }
}
