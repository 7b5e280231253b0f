//! Binding what reads the catalog: pg_catalog and information_schema relations as FROM items
//! (constant rows from one snapshot of Augur's catalog per statement, see `sql::catalog`),
//! the functions tools call over them (format_type, pg_get_indexdef, ...) and the reg* casts.
//! Functions over OIDs become CASE expressions over the snapshot's objects. Also what catalog
//! queries use of arrays: subscripts of the text-form array columns (functions in FROM, which
//! they use too, are in `from_fn.rs`).

use std::sync::Arc;

use sqlparser::ast as A;

use super::{ident, unsupported, Binder, Scope};
use crate::error::{Error, Result, SqlState};
use crate::sql::catalog::{self, types, Snapshot};
use crate::sql::expr::{ArOp, CmpOp, Expr, Func, Ty};
use crate::sql::plan::{Column, Plan};
use crate::types::Value;

/// A catalog relation as a FROM item: its rows as a plan, its columns, the name it goes by.
type CatalogFrom = (Plan, Vec<Column>, String);

/// The catalog relation (schema, name) an object name denotes, if any.
pub(super) fn catalog_name(name: &A::ObjectName) -> Option<(&'static str, &'static str)> {
    let mut parts = Vec::new();
    for p in &name.0 {
        let A::ObjectNamePart::Identifier(i) = p else {
            return None;
        };
        parts.push(ident(i));
    }
    catalog::resolve(&parts)
}

pub(super) fn lit_text(s: impl Into<String>) -> Expr {
    Expr::Lit(Value::Text(s.into()))
}

pub(super) fn lit_int(i: i64) -> Expr {
    Expr::Lit(Value::Int(i))
}

/// `CASE x WHEN k1 THEN v1 ... ELSE els END`.
pub(super) fn case_of(x: Expr, whens: Vec<(Expr, Expr)>, els: Expr) -> Expr {
    Expr::Case {
        operand: Some(Box::new(x)),
        whens,
        els: Some(Box::new(els)),
    }
}

/// `CASE WHEN x IS NULL THEN NULL ELSE e END`: functions of a NULL OID are NULL.
fn null_if_null(x: &Expr, e: Expr) -> Expr {
    Expr::Case {
        operand: None,
        whens: vec![(Expr::IsNull(Box::new(x.clone()), false), Expr::Lit(Value::Null))],
        els: Some(Box::new(e)),
    }
}

pub(super) fn as_text(x: Expr) -> Expr {
    Expr::Cast(Box::new(x), Ty::Text, None)
}

/// `e` with `f` applied to each value it can take, when those are all literals (a literal, or a
/// CASE whose results are); None otherwise.
fn map_literals(e: Expr, f: &dyn Fn(&Value) -> Value) -> Option<Expr> {
    match e {
        Expr::Lit(v) => Some(Expr::Lit(f(&v))),
        Expr::Case { operand, whens, els } => {
            let whens = whens
                .into_iter()
                .map(|(w, t)| Some((w, map_literals(t, f)?)))
                .collect::<Option<Vec<_>>>()?;
            let els = match els {
                Some(e) => Some(Box::new(map_literals(*e, f)?)),
                None => None,
            };
            Some(Expr::Case { operand, whens, els })
        }
        _ => None,
    }
}

/// The reg* type (regclass, regtype, regnamespace) `e` is cast to and the value cast, if it is
/// such a cast.
fn reg_cast(e: &A::Expr) -> Option<(&'static str, &A::Expr)> {
    match e {
        A::Expr::Nested(x) => reg_cast(x),
        A::Expr::Cast { data_type, expr, .. } => {
            let t = data_type.to_string().to_lowercase();
            let t = t.strip_prefix("pg_catalog.").unwrap_or(&t);
            let kind = ["regclass", "regtype", "regnamespace"]
                .into_iter()
                .find(|k| *k == t)?;
            Some((kind, expr))
        }
        _ => None,
    }
}

impl Binder<'_> {
    /// The statement's snapshot of the catalog (taken once; the statement is then re-planned
    /// on every run, see `PlannedStmt::valid`).
    fn snapshot(&mut self) -> Result<Arc<Snapshot>> {
        if let Some(s) = &self.catalog {
            return Ok(s.clone());
        }
        let s = Arc::new(Snapshot::take(self.engine()?, self.settings)?);
        self.catalog = Some(s.clone());
        Ok(s)
    }

    /// A FROM item naming a catalog relation: its rows as a plan, its columns and the name it
    /// goes by without an alias. None if the name is no catalog relation.
    pub(super) fn catalog_relation(&mut self, name: &A::ObjectName) -> Result<Option<CatalogFrom>> {
        let Some((schema, rel)) = catalog_name(name) else {
            return Ok(None);
        };
        let snap = self.snapshot()?;
        let r = catalog::build(schema, rel, &snap)?;
        let plan = if r.rows.is_empty() {
            // A plan's width is its first row's: an empty relation is a row filtered out.
            Plan::Filter(
                Box::new(Plan::Values(vec![vec![Expr::Lit(Value::Null); r.cols.len()]])),
                Expr::Lit(Value::Bool(false)),
            )
        } else {
            Plan::Values(
                r.rows
                    .into_iter()
                    .map(|row| row.into_iter().map(Expr::Lit).collect())
                    .collect(),
            )
        };
        Ok(Some((plan, r.cols, rel.to_string())))
    }

    /// An OID argument as int8 (oid values are int8 in Augur).
    pub(super) fn oid_arg(&mut self, (e, t): (Expr, Ty), name: &str) -> Result<Expr> {
        // A regtype (`'int4'::regtype`, `$1::regtype`) is its type's OID here.
        if !(t.is_int() || matches!(t, Ty::Unknown | Ty::RegType)) {
            return Err(Error::new(
                SqlState::UNDEFINED_FUNCTION,
                format!("function {name}({}) does not exist", t.name()),
            ));
        }
        self.coerce(e, t, Ty::Int8)
    }

    /// A value as json_build_object writes it: its `to_json` text, `null` for NULL.
    pub(super) fn json_value(&mut self, (e, t): (Expr, Ty)) -> Result<Expr> {
        let j = self.json_of((e, t))?;
        Ok(Expr::Func(
            Func::Coalesce,
            vec![as_text(j), lit_text("null")],
            Ty::Text,
        ))
    }

    /// The catalog functions tools call; None if `name` is none of them (with that many
    /// arguments).
    pub(super) fn catalog_func(&mut self, name: &str, args: &[(Expr, Ty)]) -> Result<Option<(Expr, Ty)>> {
        let n = args.len();
        let r = match (name, n) {
            // The argument's type as PostgreSQL names it (`unknown` for an untyped literal),
            // a regtype.
            ("pg_typeof", 1) => return Ok(Some((lit_text(args[0].1.name()), Ty::RegType))),
            ("format_type", 2) => {
                let oid = self.oid_arg(args[0].clone(), name)?;
                let m = self.oid_arg(args[1].clone(), name)?;
                if let (Expr::Lit(o), Expr::Lit(tm)) = (&oid, &m) {
                    let v = match (o, tm) {
                        (Value::Int(o), Value::Int(tm)) => Value::Text(types::format_type(*o, Some(*tm))),
                        (Value::Int(o), _) => Value::Text(types::format_type(*o, None)),
                        _ => Value::Null,
                    };
                    return Ok(Some((Expr::Lit(v), Ty::Text)));
                }
                let whens = types::TYPES
                    .iter()
                    .map(|t| {
                        let shown = if matches!(t.oid, 1042 | 1043 | 1014 | 1015) {
                            // display(typmod - 4) when a length is given (`character
                            // varying(n)[]` for the array types).
                            let array = matches!(t.oid, 1014 | 1015);
                            let with_len = Expr::Concat(
                                Box::new(lit_text(format!("{}(", t.display.trim_end_matches("[]")))),
                                Box::new(Expr::Concat(
                                    Box::new(as_text(Expr::Arith(
                                        ArOp::Sub,
                                        Box::new(m.clone()),
                                        Box::new(lit_int(4)),
                                        Ty::Int8,
                                    ))),
                                    Box::new(lit_text(if array { ")[]" } else { ")" })),
                                )),
                            );
                            Expr::Case {
                                operand: None,
                                whens: vec![(
                                    Expr::Cmp(CmpOp::Ge, Box::new(m.clone()), Box::new(lit_int(4))),
                                    with_len,
                                )],
                                els: Some(Box::new(lit_text(t.display))),
                            }
                        } else if matches!(t.oid, 1700 | 1231) {
                            // numeric(p,s) (numeric(p,s)[]) when a modifier ((p << 16) | s) + 4
                            // is given.
                            let close = if t.oid == 1231 { ")[]" } else { ")" };
                            let cat = |a: Expr, b: Expr| Expr::Concat(Box::new(a), Box::new(b));
                            let arith = |op: ArOp, a: Expr, b: i64| {
                                Expr::Arith(op, Box::new(a), Box::new(lit_int(b)), Ty::Int8)
                            };
                            let packed = arith(ArOp::Sub, m.clone(), 4);
                            let with_mod = cat(
                                cat(
                                    lit_text("numeric("),
                                    as_text(arith(ArOp::Div, packed.clone(), 65536)),
                                ),
                                cat(
                                    lit_text(","),
                                    cat(as_text(arith(ArOp::Mod, packed, 65536)), lit_text(close)),
                                ),
                            );
                            Expr::Case {
                                operand: None,
                                whens: vec![(
                                    Expr::Cmp(CmpOp::Ge, Box::new(m.clone()), Box::new(lit_int(4))),
                                    with_mod,
                                )],
                                els: Some(Box::new(lit_text(t.display))),
                            }
                        } else if matches!(t.oid, 1083 | 1183) {
                            // time(p) (time(p)[]): the modifier is p itself.
                            let close = if t.oid == 1183 {
                                ") without time zone[]"
                            } else {
                                ") without time zone"
                            };
                            let with_p = Expr::Concat(
                                Box::new(lit_text("time(")),
                                Box::new(Expr::Concat(
                                    Box::new(as_text(m.clone())),
                                    Box::new(lit_text(close)),
                                )),
                            );
                            Expr::Case {
                                operand: None,
                                whens: vec![(
                                    Expr::Cmp(CmpOp::Ge, Box::new(m.clone()), Box::new(lit_int(0))),
                                    with_p,
                                )],
                                els: Some(Box::new(lit_text(t.display))),
                            }
                        } else {
                            lit_text(t.display)
                        };
                        (lit_int(t.oid), shown)
                    })
                    .collect();
                let e = case_of(oid.clone(), whens, lit_text("???"));
                (null_if_null(&oid, e), Ty::Text)
            }
            ("pg_get_expr", 2 | 3) => {
                let (e, t) = args[0].clone();
                if !matches!(t, Ty::Text | Ty::Unknown) {
                    return Ok(None);
                }
                // adbin holds the expression's SQL text.
                (self.coerce(e, t, Ty::Text)?, Ty::Text)
            }
            ("pg_get_indexdef", 1 | 3) => {
                let oid = self.oid_arg(args[0].clone(), name)?;
                let col = if n == 3 {
                    Some(self.oid_arg(args[1].clone(), name)?)
                } else {
                    None
                };
                let snap = self.snapshot()?;
                let mut whens = Vec::new();
                for t in &snap.tables {
                    for ix in &t.indexes {
                        let full = lit_text(catalog::index_def(&t.def, ix));
                        let v = match &col {
                            None => full,
                            Some(c) => {
                                let mut cw = vec![(lit_int(0), full)];
                                for (k, &ci) in ix.columns.iter().enumerate() {
                                    cw.push((lit_int(k as i64 + 1), lit_text(&t.def.columns[ci].name)));
                                }
                                case_of(c.clone(), cw, lit_text(""))
                            }
                        };
                        whens.push((lit_int(ix.oid), v));
                    }
                }
                (case_of(oid, whens, Expr::Lit(Value::Null)), Ty::Text)
            }
            ("pg_get_constraintdef", 1 | 2) => {
                let oid = self.oid_arg(args[0].clone(), name)?;
                let pretty = match args.get(1) {
                    Some((e, t)) => Some(self.require_bool(e.clone(), *t, name)?),
                    None => None,
                };
                let snap = self.snapshot()?;
                let mut whens = Vec::new();
                for t in &snap.tables {
                    for ix in t.constraints() {
                        whens.push((
                            lit_int(ix.constraint_oid()),
                            lit_text(catalog::constraint_def(&t.def, ix)),
                        ));
                    }
                    for (oid, c) in t.checks() {
                        let plain = lit_text(catalog::deparse::check_def(&t.def, c, false));
                        let v = match &pretty {
                            None => plain,
                            Some(p) => Expr::Case {
                                operand: None,
                                whens: vec![(
                                    p.clone(),
                                    lit_text(catalog::deparse::check_def(&t.def, c, true)),
                                )],
                                els: Some(Box::new(plain)),
                            },
                        };
                        whens.push((lit_int(oid), v));
                    }
                }
                for fk in snap.foreign_keys() {
                    whens.push((lit_int(fk.oid), lit_text(fk.text())));
                }
                (case_of(oid, whens, Expr::Lit(Value::Null)), Ty::Text)
            }
            (
                "pg_get_triggerdef"
                | "pg_get_ruledef"
                | "pg_get_statisticsobjdef"
                | "pg_get_statisticsobjdef_columns"
                | "pg_get_partkeydef",
                1 | 2,
            ) => {
                // Augur has no triggers, rules, statistics objects or partitioned tables: the
                // definition of an OID that names none is NULL, as in PostgreSQL.
                self.oid_arg(args[0].clone(), name)?;
                if let Some(p) = args.get(1) {
                    self.require_bool(p.0.clone(), p.1, name)?;
                }
                (Expr::Lit(Value::Null), Ty::Text)
            }
            ("pg_relation_is_publishable", 1) => {
                // A table is; a catalog relation is not; an OID that names no relation: NULL.
                let oid = self.oid_arg(args[0].clone(), name)?;
                let snap = self.snapshot()?;
                let whens = snap
                    .tables
                    .iter()
                    .map(|t| (t.oid, true))
                    .chain(snap.relations().into_iter().map(|(o, _)| (o, false)))
                    .map(|(o, b)| (lit_int(o), Expr::Lit(Value::Bool(b))))
                    .collect();
                (case_of(oid, whens, Expr::Lit(Value::Null)), Ty::Bool)
            }
            ("pg_partition_ancestors", 1) => {
                // Augur has no partitions: a relation's only "ancestor" is itself.
                (self.oid_arg(args[0].clone(), name)?, Ty::Int8)
            }
            ("json_build_object", _) if n.is_multiple_of(2) => {
                // PostgreSQL's json output form (`{"a" : 1, "b" : "x"}`), as json.
                let mut parts = vec![lit_text("{")];
                for (i, pair) in args.chunks(2).enumerate() {
                    if i > 0 {
                        parts.push(lit_text(", "));
                    }
                    parts.push(self.json_value(pair[0].clone())?);
                    parts.push(lit_text(" : "));
                    parts.push(self.json_value(pair[1].clone())?);
                }
                parts.push(lit_text("}"));
                let text = Expr::Func(Func::Concat, parts, Ty::Text);
                (Expr::Cast(Box::new(text), Ty::Json, None), Ty::Json)
            }
            ("pg_get_serial_sequence", 2) => {
                let (t, tt) = args[0].clone();
                let (c, ct) = args[1].clone();
                if !matches!(tt, Ty::Text | Ty::Unknown) || !matches!(ct, Ty::Text | Ty::Unknown) {
                    return Ok(None);
                }
                let t = self.coerce(t, tt, Ty::Text)?;
                let c = self.coerce(c, ct, Ty::Text)?;
                let snap = self.snapshot()?;
                let eq =
                    |x: &Expr, v: String| Expr::Cmp(CmpOp::Eq, Box::new(x.clone()), Box::new(lit_text(v)));
                let whens = snap
                    .sequences
                    .iter()
                    .filter_map(|s| {
                        let (table, column) = s.owned_by.as_ref()?;
                        let table_is = Expr::Or(
                            Box::new(eq(&t, table.clone())),
                            Box::new(eq(&t, format!("public.{table}"))),
                        );
                        let cond = Expr::And(Box::new(table_is), Box::new(eq(&c, column.clone())));
                        Some((cond, lit_text(format!("public.{}", s.name))))
                    })
                    .collect();
                let e = Expr::Case {
                    operand: None,
                    whens,
                    els: Some(Box::new(Expr::Lit(Value::Null))),
                };
                (e, Ty::Text)
            }
            ("pg_table_is_visible", 1) => {
                // Every relation but information_schema's is in public or pg_catalog, both on
                // the search path.
                let oid = self.oid_arg(args[0].clone(), name)?;
                let hidden: Vec<Expr> = catalog::info_schema_oids().into_iter().map(lit_int).collect();
                (Expr::InList(Box::new(oid), hidden, true), Ty::Bool)
            }
            ("pg_type_is_visible" | "pg_collation_is_visible", 1) => {
                // Every type is in pg_catalog, on the search path.
                let oid = self.oid_arg(args[0].clone(), name)?;
                (null_if_null(&oid, Expr::Lit(Value::Bool(true))), Ty::Bool)
            }
            ("pg_get_userbyid", 1) => {
                let oid = self.oid_arg(args[0].clone(), name)?;
                let unknown = Expr::Concat(
                    Box::new(lit_text("unknown (OID=")),
                    Box::new(Expr::Concat(
                        Box::new(as_text(oid.clone())),
                        Box::new(lit_text(")")),
                    )),
                );
                let e = case_of(
                    oid.clone(),
                    vec![(lit_int(catalog::ROLE_OID), lit_text(catalog::ROLE_NAME))],
                    unknown,
                );
                (null_if_null(&oid, e), Ty::Text)
            }
            ("obj_description", 1 | 2) | ("col_description", 2) | ("shobj_description", 2) => {
                // Augur keeps no comments (pg_description is empty).
                (Expr::Lit(Value::Null), Ty::Text)
            }
            ("current_schemas", 1) => {
                let (e, t) = args[0].clone();
                let b = self.require_bool(e, t, "current_schemas")?;
                let e = Expr::Case {
                    operand: None,
                    whens: vec![(b, lit_text("{pg_catalog,public}"))],
                    els: Some(Box::new(lit_text("{public}"))),
                };
                (e, Ty::Array(&Ty::Text))
            }
            (
                "has_table_privilege"
                | "has_schema_privilege"
                | "has_database_privilege"
                | "has_sequence_privilege"
                | "has_column_privilege"
                | "has_any_column_privilege",
                2..=4,
            ) => {
                // One role, which owns everything.
                (Expr::Lit(Value::Bool(true)), Ty::Bool)
            }
            ("pg_encoding_to_char", 1) => {
                let e = self.oid_arg(args[0].clone(), name)?;
                (
                    case_of(e, vec![(lit_int(6), lit_text("UTF8"))], lit_text("")),
                    Ty::Text,
                )
            }
            ("pg_table_size" | "pg_relation_size" | "pg_total_relation_size" | "pg_indexes_size", 1) => {
                // What Augur knows of sizes: a primary-key index's memory (NULL for the rest).
                let oid = self.oid_arg(args[0].clone(), name)?;
                let snap = self.snapshot()?;
                let whens = snap
                    .tables
                    .iter()
                    .flat_map(|t| t.indexes.iter().filter(|i| i.primary))
                    .filter_map(|i| Some((lit_int(i.oid), lit_int(i64::try_from(i.heap_bytes?).ok()?))))
                    .collect();
                (case_of(oid, whens, Expr::Lit(Value::Null)), Ty::Int8)
            }
            ("pg_size_pretty", 1) => {
                let (e, t) = args[0].clone();
                if !(t.is_num() || t == Ty::Unknown) {
                    return Ok(None);
                }
                let pretty = |v: &Value| match v {
                    Value::Int(b) => Value::Text(catalog::size_pretty(*b)),
                    Value::Float(b) => Value::Text(catalog::size_pretty(*b as i64)),
                    _ => Value::Null,
                };
                let Some(e) = map_literals(e, &pretty) else {
                    return Err(Error::unsupported(
                        "pg_size_pretty of a value computed per row is not supported by Augur",
                    ));
                };
                (e, Ty::Text)
            }
            ("array_to_string", 2 | 3) => {
                // Arrays are held in their text form `{a,b}` (typed, or text in the catalog's
                // array columns).
                let texty = |t: Ty| matches!(t, Ty::Text | Ty::Unknown);
                if !(texty(args[0].1) || matches!(args[0].1, Ty::Array(_)))
                    || !args[1..].iter().all(|a| texty(a.1))
                {
                    return Ok(None);
                }
                let mut exprs = Vec::with_capacity(args.len());
                for (e, t) in args.iter().cloned() {
                    exprs.push(self.coerce(e, t, Ty::Text)?);
                }
                (Expr::Func(Func::ArrayToString, exprs, Ty::Text), Ty::Text)
            }
            ("to_regclass", 1) => {
                let Expr::Lit(Value::Text(s)) = &args[0].0 else {
                    return Ok(None);
                };
                let snap = self.snapshot()?;
                let v = snap.regclass(s).map_or(Value::Null, Value::Int);
                (Expr::Lit(v), Ty::Int8)
            }
            _ => return Ok(None),
        };
        Ok(Some(r))
    }

    /// `a[i]` of a text-form array (pg_constraint.conkey, pg_index.indkey, ...): the element as
    /// an untyped value, which takes the type of what it is compared with (the catalog's arrays
    /// hold column numbers).
    pub(super) fn bind_subscript(
        &mut self,
        root: &A::Expr,
        chain: &[A::AccessExpr],
        scope: &Scope,
    ) -> Result<(Expr, Ty)> {
        // `t.col[i]` parses as `t` with `.col` then `[i]`: the dots name the array's column.
        let (index, dots) = match chain.split_last() {
            Some((A::AccessExpr::Subscript(A::Subscript::Index { index }), dots)) => (Some(index), dots),
            _ => (None, chain),
        };
        let mut parts = Vec::new();
        if !dots.is_empty() {
            let A::Expr::Identifier(r) = root else {
                return Err(unsupported(format!("field access of {root}")));
            };
            parts.push(r.clone());
            for d in dots {
                match d {
                    A::AccessExpr::Dot(A::Expr::Identifier(i)) => parts.push(i.clone()),
                    _ => return Err(unsupported(format!("field access {d}"))),
                }
            }
        }
        let compound = A::Expr::CompoundIdentifier(parts);
        let root = if dots.is_empty() { root } else { &compound };
        let Some(index) = index else {
            return Err(unsupported(format!(
                "array access {}",
                A::Expr::CompoundFieldAccess {
                    root: Box::new(root.clone()),
                    access_chain: chain.to_vec(),
                }
            )));
        };
        let (a, at) = self.bind_elements(root, scope)?;
        if !matches!(at, Ty::Text | Ty::Array(_)) {
            return Err(Error::new(
                SqlState::DATATYPE_MISMATCH,
                format!(
                    "cannot subscript type {} because it does not support subscripting",
                    at.name()
                ),
            ));
        }
        let (i, it) = self.bind_expr(index, scope)?;
        if !(it.is_int() || it == Ty::Unknown) {
            return Err(Error::new(
                SqlState::DATATYPE_MISMATCH,
                "array subscript must have type integer",
            ));
        }
        let i = self.coerce(i, it, Ty::Int8)?;
        // A typed array's element has the element type, with the array's type modifier (which
        // its elements already fit: `numeric(10,2)[]`'s is a `numeric(10,2)`).
        let len = self.expr_len(&a, scope);
        let elem = Expr::Func(Func::ArrayElem, vec![a, i], Ty::Unknown);
        Ok(match at {
            Ty::Array(t) => (Expr::Cast(Box::new(elem), *t, len), *t),
            _ => (elem, Ty::Unknown),
        })
    }

    /// An OID of a `kind` (regclass, regtype, regnamespace) shown as the object's name (its
    /// number if there is none).
    pub(super) fn oid_name(&mut self, kind: &str, x: Expr) -> Result<Expr> {
        let names: Vec<(i64, String)> = match kind {
            "regclass" => self.snapshot()?.relations(),
            "regtype" => types::TYPES
                .iter()
                .map(|t| (t.oid, t.display.to_string()))
                .collect(),
            _ => catalog::SCHEMAS
                .iter()
                .map(|(o, n)| (*o, n.to_string()))
                .collect(),
        };
        // OID 0 (none) prints as `-`.
        let whens = std::iter::once((0, "-".to_string()))
            .chain(names)
            .map(|(o, n)| (lit_int(o), lit_text(n)))
            .collect();
        Ok(case_of(x.clone(), whens, as_text(x)))
    }

    /// `x::regclass`, `::regtype`, `::regnamespace` (a name to its OID; an OID to its name),
    /// `::oid`, `::name`, `::"char"`, `::regproc`; None for any other type.
    pub(super) fn catalog_cast(
        &mut self,
        e: &A::Expr,
        dt: &A::DataType,
        scope: &Scope,
    ) -> Result<Option<(Expr, Ty)>> {
        let full = dt.to_string().to_lowercase();
        let ty = full.strip_prefix("pg_catalog.").unwrap_or(&full).to_string();
        if matches!(ty.as_str(), "text" | "name" | "varchar" | "character varying") {
            if let Some((kind, inner)) = reg_cast(e) {
                // `'t'::regclass::text`, `conrelid::regclass::text`: the name of the object the
                // reg* value denotes.
                let (x, xt) = self.bind_expr(inner, scope)?;
                let oid = if xt.is_int() {
                    self.coerce(x, xt, Ty::Int8)?
                } else {
                    let (x, xt) = self.bind_expr(e, scope)?;
                    self.coerce(x, xt, Ty::Int8)?
                };
                return Ok(Some((self.oid_name(kind, oid)?, Ty::Text)));
            }
        }
        if !matches!(
            ty.as_str(),
            "oid" | "name" | "\"char\"" | "regproc" | "regclass" | "regtype" | "regnamespace"
        ) {
            if ty.len() == full.len() {
                return Ok(None);
            }
            // `x::pg_catalog.text`, as psql writes casts.
            let (to, len) = super::type_of_name(&ty)?;
            let (x, xt) = self.bind_expr(e, scope)?;
            return Ok(Some(self.cast_expr(x, xt, Ty::from_dt(to), len)?));
        }
        let (x, xt) = self.bind_expr(e, scope)?;
        let r = match ty.as_str() {
            "oid" => self.cast_expr(x, xt, Ty::Int8, None)?,
            "name" | "\"char\"" | "regproc" => self.cast_expr(x, xt, Ty::Text, None)?,
            "regtype" if xt == Ty::RegType => (x, xt),
            _ if xt == Ty::RegType => {
                let x = self.coerce(x, xt, Ty::Int8)?;
                (self.oid_name(&ty, x)?, Ty::Text)
            }
            _ if xt.is_int() => {
                let x = self.coerce(x, xt, Ty::Int8)?;
                // `23::regtype` is a regtype (its name); the other reg* casts of an OID text.
                let t = if ty == "regtype" { Ty::RegType } else { Ty::Text };
                (self.oid_name(&ty, x)?, t)
            }
            _ if !matches!(x, Expr::Lit(_)) => {
                // A name known only when the statement runs (a parameter, a column): looked up
                // among the snapshot's names, NULL if none (PostgreSQL: an error).
                if !matches!(xt, Ty::Text | Ty::Unknown) {
                    return Err(Error::new(
                        SqlState("42846"),
                        format!("cannot cast type {} to {ty}", xt.name()),
                    ));
                }
                let names: Vec<(String, i64)> = match ty.as_str() {
                    "regclass" => self
                        .snapshot()?
                        .relations()
                        .into_iter()
                        .flat_map(|(o, n)| [(format!("public.{n}"), o), (n, o)])
                        .collect(),
                    "regtype" => types::TYPES
                        .iter()
                        .flat_map(|t| [(t.name.to_string(), t.oid), (t.display.to_string(), t.oid)])
                        .collect(),
                    _ => catalog::SCHEMAS
                        .iter()
                        .map(|(o, n)| (n.to_string(), *o))
                        .collect(),
                };
                // A parameter cast to regtype is typed regtype, as PostgreSQL infers it (its
                // value is the type's name, in either wire format).
                let x = match x {
                    Expr::Param(i, Ty::Unknown) if ty == "regtype" => {
                        self.params[i] = Ty::RegType;
                        Expr::Cast(Box::new(Expr::Param(i, Ty::RegType)), Ty::Text, None)
                    }
                    x => self.coerce(x, xt, Ty::Text)?,
                };
                if ty == "regtype" {
                    // A regtype: the type's name as PostgreSQL prints it (NULL for none).
                    return Ok(Some((super::regtype::to_regtype(x, Ty::Text)?, Ty::RegType)));
                }
                let whens = names
                    .into_iter()
                    .map(|(n, o)| (lit_text(n), lit_int(o)))
                    .collect();
                (case_of(x, whens, Expr::Lit(Value::Null)), Ty::Int8)
            }
            _ => {
                let Expr::Lit(v) = &x else {
                    return Err(Error::internal("catalog cast of a literal"));
                };
                let s = match v {
                    Value::Null if ty == "regtype" => return Ok(Some((Expr::Lit(Value::Null), Ty::RegType))),
                    Value::Null => return Ok(Some((Expr::Lit(Value::Null), Ty::Int8))),
                    Value::Text(s) => s.clone(),
                    _ => {
                        return Err(Error::new(
                            SqlState("42846"),
                            format!("cannot cast type {} to {ty}", xt.name()),
                        ))
                    }
                };
                let oid = match (ty.as_str(), s.trim().parse::<i64>()) {
                    (_, Ok(n)) => n,
                    ("regclass", _) => self.snapshot()?.regclass(&s)?,
                    ("regtype", _) => types::by_name(&s).map(|t| t.oid).ok_or_else(|| {
                        Error::new(SqlState::UNDEFINED_OBJECT, format!("type \"{s}\" does not exist"))
                    })?,
                    _ => catalog::SCHEMAS
                        .iter()
                        .find(|(_, n)| *n == s.trim())
                        .map(|(o, _)| *o)
                        .ok_or_else(|| {
                            Error::new(SqlState("3F000"), format!("schema \"{s}\" does not exist"))
                        })?,
                };
                if ty == "regtype" {
                    // `'int4'::regtype` is a regtype, printed as its name (`integer`), as in
                    // PostgreSQL; it meets an OID as the type's OID.
                    return Ok(Some((
                        super::regtype::to_regtype(lit_int(oid), Ty::Int8)?,
                        Ty::RegType,
                    )));
                }
                (lit_int(oid), Ty::Int8)
            }
        };
        Ok(Some(r))
    }
}
