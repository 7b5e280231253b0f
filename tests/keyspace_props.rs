//! Properties of the distributed key layout (`augur::types::keyspace`, docs/DISTRIBUTED.md):
//! byte order equals the logical order of (table, kind, index, value, pk); no key is a proper
//! prefix of another; the prefix and bound helpers select exactly the keys a range scan over
//! them must return; decoding inverts encoding and accepts nothing else (arbitrary and mutated
//! bytes decode to an error or to a key that encodes back to the same bytes).
//!
//! The logical order is the model: table and index ids as integers, 'i' entries before 'r'
//! rows, then the values column by column with NULL first (the codec's order) and
//! `Value::sql_cmp` otherwise, then the primary key. Floats are drawn without negative NaNs,
//! which the codec orders below -Infinity (see docs/DISTRIBUTED.md, "Open questions").

use std::cmp::Ordering;
use std::ops::Bound;

use augur::types::codec::{decode_key_values, encode_key_values};
use augur::types::keyspace::{self, IndexShape, KeyKind, PkShape};
use augur::{Key, SqlState, Value};
use proptest::prelude::*;
use proptest::strategy::Union;

/// A column type as the keys see it.
#[derive(Clone, Copy, Debug)]
enum Col {
    Int,
    Float,
    Text,
    Bytes,
    Bool,
    Ts,
}

#[derive(Clone, Debug)]
enum PkSchema {
    /// `Key::Int`: one integer or timestamp column, or a hidden row identity.
    Int,
    /// `Key::Bytes`: the encoded values of these columns.
    Values(Vec<Col>),
}

#[derive(Clone, Debug)]
struct IndexSchema {
    id: u32,
    cols: Vec<Col>,
    unique: bool,
}

#[derive(Clone, Debug)]
struct TableSchema {
    id: u32,
    pk: PkSchema,
    indexes: Vec<IndexSchema>,
}

impl TableSchema {
    fn pk_shape(&self) -> PkShape {
        match &self.pk {
            PkSchema::Int => PkShape::Int,
            PkSchema::Values(c) => PkShape::Values(c.len()),
        }
    }
}

#[derive(Clone, Debug)]
enum Pk {
    Int(i64),
    Values(Vec<Value>),
}

impl Pk {
    fn key(&self) -> Key {
        match self {
            Pk::Int(i) => Key::Int(*i),
            // As TableDef::key_from_values builds it.
            Pk::Values(v) => Key::Bytes(encode_key_values(v)),
        }
    }
}

/// A logical key: what the encoding must order, delimit and give back.
#[derive(Clone, Debug)]
enum Logical {
    Row {
        table: u32,
        pk: Pk,
    },
    Index {
        table: u32,
        index: u32,
        unique: bool,
        value: Vec<Value>,
        pk: Pk,
    },
}

impl Logical {
    fn table(&self) -> u32 {
        match self {
            Logical::Row { table, .. } | Logical::Index { table, .. } => *table,
        }
    }

    fn encode(&self) -> Vec<u8> {
        match self {
            Logical::Row { table, pk } => keyspace::row_key(*table, &pk.key()),
            Logical::Index {
                table,
                index,
                unique,
                value,
                pk,
            } => keyspace::index_key(*table, *index, *unique, value, &pk.key()),
        }
    }

    /// The primary key when the key holds it (not for a unique entry without a NULL).
    fn pk_in_key(&self) -> Option<&Pk> {
        match self {
            Logical::Row { pk, .. } => Some(pk),
            Logical::Index {
                unique, value, pk, ..
            } => (!*unique || value.iter().any(Value::is_null)).then_some(pk),
        }
    }
}

fn cmp_value(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Null, Value::Null) => Ordering::Equal,
        (Value::Null, _) => Ordering::Less,
        (_, Value::Null) => Ordering::Greater,
        _ => a.sql_cmp(b).expect("values of one column have one type"),
    }
}

fn cmp_values(a: &[Value], b: &[Value]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        match cmp_value(x, y) {
            Ordering::Equal => {}
            o => return o,
        }
    }
    a.len().cmp(&b.len())
}

fn cmp_pk(a: &Pk, b: &Pk) -> Ordering {
    match (a, b) {
        (Pk::Int(x), Pk::Int(y)) => x.cmp(y),
        (Pk::Values(x), Pk::Values(y)) => cmp_values(x, y),
        _ => panic!("keys of one table have one shape"),
    }
}

/// The model: the logical order of (table, kind, index, value, pk).
fn model_cmp(a: &Logical, b: &Logical) -> Ordering {
    use Logical::*;
    let kind = |l: &Logical| match l {
        Index { index, .. } => (0u8, *index),
        Row { .. } => (1u8, 0),
    };
    a.table()
        .cmp(&b.table())
        .then(kind(a).cmp(&kind(b)))
        .then_with(|| match (a, b) {
            (Index { value: va, .. }, Index { value: vb, .. }) => cmp_values(va, vb),
            _ => Ordering::Equal,
        })
        .then_with(|| match (a.pk_in_key(), b.pk_in_key()) {
            (Some(x), Some(y)) => cmp_pk(x, y),
            (None, None) => Ordering::Equal,
            _ => panic!("entries of one index with equal values have one form"),
        })
}

fn value_of(c: Col) -> BoxedStrategy<Value> {
    let int = prop_oneof![
        -3i64..3,
        Just(i64::MIN),
        Just(i64::MAX),
        Just(-(1i64 << 32)),
        Just(255),
        Just(256),
        any::<i64>()
    ];
    match c {
        Col::Int => int.prop_map(Value::Int).boxed(),
        Col::Ts => int.prop_map(Value::Timestamp).boxed(),
        Col::Float => prop_oneof![
            Just(f64::NEG_INFINITY),
            Just(-1.5),
            Just(-0.0),
            Just(0.0),
            Just(f64::MIN_POSITIVE),
            Just(2.5),
            Just(f64::INFINITY),
            Just(f64::NAN),
            any::<f64>().prop_filter("negative NaNs are an open codec question", |f| !f.is_nan()),
        ]
        .prop_map(Value::Float)
        .boxed(),
        // Characters and bytes around the escape (0x00, 0x01, 0xFF) and multi-byte UTF-8.
        Col::Text => prop::collection::vec(
            prop_oneof![
                Just('\0'),
                Just('\u{1}'),
                Just('a'),
                Just('b'),
                Just('\u{ff}'),
                Just('\u{10FFFF}')
            ],
            0..4,
        )
        .prop_map(|cs| Value::Text(cs.into_iter().collect()))
        .boxed(),
        Col::Bytes => prop::collection::vec(prop_oneof![Just(0u8), Just(1), Just(0xFF), Just(b'a')], 0..4)
            .prop_map(Value::Bytes)
            .boxed(),
        Col::Bool => any::<bool>().prop_map(Value::Bool).boxed(),
    }
}

/// Values of these columns; NULLs among them when `nullable` (index columns; key columns are
/// NOT NULL).
fn values_of(cols: &[Col], nullable: bool) -> BoxedStrategy<Vec<Value>> {
    let per_col: Vec<BoxedStrategy<Value>> = cols
        .iter()
        .map(|&c| {
            if nullable {
                prop_oneof![1 => Just(Value::Null), 4 => value_of(c)].boxed()
            } else {
                value_of(c)
            }
        })
        .collect();
    per_col.boxed()
}

fn col() -> impl Strategy<Value = Col> {
    prop_oneof![
        Just(Col::Int),
        Just(Col::Float),
        Just(Col::Text),
        Just(Col::Bytes),
        Just(Col::Bool),
        Just(Col::Ts)
    ]
}

/// Ids around byte boundaries, and ids whose bytes equal the kind bytes.
const IDS: [u32; 8] = [0, 1, 0x69, 0x72, 0xFF, 0x100, 0x7269_0000, u32::MAX];

fn schema() -> impl Strategy<Value = Vec<TableSchema>> {
    let pk = prop_oneof![
        Just(PkSchema::Int),
        prop::collection::vec(col(), 1..=3).prop_map(PkSchema::Values)
    ];
    let index = (prop::collection::vec(col(), 1..=3), any::<bool>());
    let table = (
        pk,
        prop::sample::subsequence(IDS.to_vec(), 1..=2),
        prop::collection::vec(index, 2),
    )
        .prop_map(|(pk, ids, ix)| {
            let indexes = ids
                .into_iter()
                .zip(ix)
                .map(|(id, (cols, unique))| IndexSchema { id, cols, unique })
                .collect();
            (pk, indexes)
        });
    (
        prop::sample::subsequence(IDS.to_vec(), 2..=3),
        prop::collection::vec(table, 3),
    )
        .prop_map(|(ids, tables)| {
            ids.into_iter()
                .zip(tables)
                .map(|(id, (pk, indexes))| TableSchema { id, pk, indexes })
                .collect()
        })
}

fn pk_of(t: &TableSchema) -> BoxedStrategy<Pk> {
    match &t.pk {
        PkSchema::Int => prop_oneof![-3i64..3, Just(i64::MIN), Just(i64::MAX), any::<i64>()]
            .prop_map(Pk::Int)
            .boxed(),
        PkSchema::Values(cols) => values_of(cols, false).prop_map(Pk::Values).boxed(),
    }
}

/// Logical keys conforming to the schema: rows and index entries of every table and index.
fn keys_of(tables: &[TableSchema]) -> BoxedStrategy<Vec<Logical>> {
    let mut kinds: Vec<BoxedStrategy<Logical>> = Vec::new();
    for t in tables {
        let table = t.id;
        kinds.push(pk_of(t).prop_map(move |pk| Logical::Row { table, pk }).boxed());
        for ix in &t.indexes {
            let (index, unique) = (ix.id, ix.unique);
            kinds.push(
                (values_of(&ix.cols, true), pk_of(t))
                    .prop_map(move |(value, pk)| Logical::Index {
                        table,
                        index,
                        unique,
                        value,
                        pk,
                    })
                    .boxed(),
            );
        }
    }
    prop::collection::vec(Union::new(kinds), 1..24).boxed()
}

fn schema_and_keys() -> impl Strategy<Value = (Vec<TableSchema>, Vec<Logical>)> {
    schema().prop_flat_map(|s| {
        let keys = keys_of(&s);
        (Just(s), keys)
    })
}

fn pk_eq(a: &Key, b: &Pk) -> bool {
    *a == b.key()
}

/// A bound drawn from a generated value: unbounded, included or excluded.
fn bound_from<T: Clone>(choice: u8, v: &T) -> Bound<T> {
    match choice % 3 {
        0 => Bound::Unbounded,
        1 => Bound::Included(v.clone()),
        _ => Bound::Excluded(v.clone()),
    }
}

/// Which logical keys a prefix must hold.
type Membership = Box<dyn Fn(&Logical) -> bool>;

fn slice(b: &Bound<Vec<Value>>) -> Bound<&[Value]> {
    b.as_ref().map(|v| v.as_slice())
}

fn within<T>(x: &T, lo: &Bound<T>, hi: &Bound<T>, cmp: impl Fn(&T, &T) -> Ordering) -> bool {
    let above = match lo {
        Bound::Unbounded => true,
        Bound::Included(l) => cmp(x, l) != Ordering::Less,
        Bound::Excluded(l) => cmp(x, l) == Ordering::Greater,
    };
    let below = match hi {
        Bound::Unbounded => true,
        Bound::Included(h) => cmp(x, h) != Ordering::Greater,
        Bound::Excluded(h) => cmp(x, h) == Ordering::Less,
    };
    above && below
}

/// Whether a decoded key is one the encoder could have produced for this shape (a `Key::Bytes`
/// holds exactly `n` encoded values, nothing after them).
fn well_formed(k: &Key, shape: PkShape) -> bool {
    match (k, shape) {
        (Key::Int(_), PkShape::Int) => true,
        (Key::Bytes(b), PkShape::Values(n)) => decode_key_values(b, n).is_ok_and(|(_, used)| used == b.len()),
        _ => false,
    }
}

/// Every way `bytes` decodes under some shape gives back exactly `bytes` when re-encoded, and
/// every primary key it yields is well formed.
fn decodes_canonically(bytes: &[u8]) -> Result<(), TestCaseError> {
    let pk_shapes = [
        PkShape::Int,
        PkShape::Values(1),
        PkShape::Values(2),
        PkShape::Values(3),
    ];
    for pk in pk_shapes {
        if let Ok((t, k)) = keyspace::decode_row_key(bytes, pk) {
            prop_assert!(well_formed(&k, pk), "{:?} from {:02x?}", k, bytes);
            prop_assert_eq!(keyspace::row_key(t, &k), bytes);
        }
        if let Ok(k) = keyspace::decode_pk(bytes, pk) {
            prop_assert!(well_formed(&k, pk), "{:?} from {:02x?}", k, bytes);
            let mut again = Vec::new();
            keyspace::encode_pk(&k, &mut again);
            prop_assert_eq!(again, bytes);
        }
        for columns in 1..=3 {
            for unique in [false, true] {
                let shape = IndexShape { columns, unique };
                if let Ok(e) = keyspace::decode_index_key(bytes, shape, pk) {
                    prop_assert_eq!(e.pk.is_some(), keyspace::entry_has_pk(unique, &e.value));
                    prop_assert!(
                        e.pk.as_ref().is_none_or(|k| well_formed(k, pk)),
                        "{:?} from {:02x?}",
                        e,
                        bytes
                    );
                    let pk = e.pk.clone().unwrap_or(Key::Int(0));
                    prop_assert_eq!(
                        keyspace::index_key(e.table, e.index, unique, &e.value, &pk),
                        bytes
                    );
                }
            }
        }
    }
    for n in 1..=3 {
        if let Ok((vals, used)) = decode_key_values(bytes, n) {
            prop_assert_eq!(vals.len(), n);
            prop_assert_eq!(encode_key_values(&vals), &bytes[..used]);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Byte order of the encoded keys is the model's order, for every pair.
    #[test]
    fn byte_order_is_logical_order((_, keys) in schema_and_keys()) {
        let enc: Vec<Vec<u8>> = keys.iter().map(Logical::encode).collect();
        for (a, ea) in keys.iter().zip(&enc) {
            for (b, eb) in keys.iter().zip(&enc) {
                prop_assert_eq!(ea.cmp(eb), model_cmp(a, b), "{:?} vs {:?}: {:02x?} vs {:02x?}", a, b, ea, eb);
            }
        }
    }

    /// No encoded key is a proper prefix of another's.
    #[test]
    fn no_key_is_a_prefix_of_another((_, keys) in schema_and_keys()) {
        let enc: Vec<Vec<u8>> = keys.iter().map(Logical::encode).collect();
        for ea in &enc {
            for eb in &enc {
                prop_assert!(ea == eb || !eb.starts_with(ea), "{:02x?} is a prefix of {:02x?}", ea, eb);
            }
        }
    }

    /// The prefixes of a table, of its rows, of an index and of an index's leading values hold
    /// exactly the keys the model puts there, and `prefix_bounds` is the same set as a range.
    #[test]
    fn prefixes_hold_exactly_their_keys((tables, keys) in schema_and_keys(), pick in any::<prop::sample::Index>(), lead in 1usize..=3) {
        let enc: Vec<Vec<u8>> = keys.iter().map(Logical::encode).collect();
        let mut prefixes: Vec<(Vec<u8>, Membership)> = Vec::new();
        for t in &tables {
            let id = t.id;
            prefixes.push((keyspace::table_prefix(id).to_vec(), Box::new(move |k| k.table() == id)));
            prefixes.push((keyspace::rows_prefix(id).to_vec(), Box::new(move |k| matches!(k, Logical::Row { table, .. } if *table == id))));
            for ix in &t.indexes {
                let ixid = ix.id;
                prefixes.push((keyspace::index_prefix(id, ixid).to_vec(), Box::new(move |k| matches!(k, Logical::Index { table, index, .. } if *table == id && *index == ixid))));
            }
        }
        // The leading values of one generated index entry.
        if let Logical::Index { table, index, value, .. } = pick.get(&keys).clone() {
            let m = lead.min(value.len());
            let leading = value[..m].to_vec();
            let p = keyspace::index_value_prefix(table, index, &leading);
            prefixes.push((p, Box::new(move |k| matches!(k, Logical::Index { table: t, index: i, value: v, .. }
                if *t == table && *i == index && cmp_values(&v[..m], &leading) == Ordering::Equal))));
        }
        for (p, member) in &prefixes {
            let bounds = keyspace::prefix_bounds(p);
            for (k, e) in keys.iter().zip(&enc) {
                prop_assert_eq!(e.starts_with(p), member(k), "prefix {:02x?}, key {:?}", p, k);
                prop_assert_eq!(keyspace::in_bounds(e, &bounds), member(k), "bounds of {:02x?}, key {:?}", p, k);
            }
        }
    }

    /// `prefix_end` is the tightest exclusive end of a prefix, for arbitrary bytes (0xFF runs,
    /// all-0xFF and empty prefixes included).
    #[test]
    fn prefix_end_bounds_exactly_the_prefix(
        p in prop::collection::vec(prop_oneof![Just(0u8), Just(0xFE), Just(0xFF), any::<u8>()], 0..5),
        x in prop::collection::vec(prop_oneof![Just(0u8), Just(0xFE), Just(0xFF), any::<u8>()], 0..7),
        glue in any::<bool>(),
    ) {
        let x = if glue { [p.clone(), x].concat() } else { x };
        let inside = keyspace::in_bounds(&x, &keyspace::prefix_bounds(&p));
        prop_assert_eq!(inside, x.starts_with(&p), "prefix {:02x?}, key {:02x?}", p, x);
        if let Some(end) = keyspace::prefix_end(&p) {
            prop_assert!(end.as_slice() > p.as_slice());
            prop_assert!(!end.starts_with(&p));
        } else {
            prop_assert!(p.iter().all(|&b| b == 0xFF));
        }
    }

    /// `row_bounds` selects the rows of one table whose primary key is within the bounds.
    #[test]
    fn row_bounds_select_the_range((tables, keys) in schema_and_keys(), a in any::<prop::sample::Index>(), b in any::<prop::sample::Index>(), lo_c in any::<u8>(), hi_c in any::<u8>()) {
        let rows: Vec<(u32, Pk)> = keys.iter().filter_map(|k| match k { Logical::Row { table, pk } => Some((*table, pk.clone())), _ => None }).collect();
        prop_assume!(!rows.is_empty());
        let (table, lo_pk) = a.get(&rows).clone();
        let same: Vec<&Pk> = rows.iter().filter(|(t, _)| *t == table).map(|(_, pk)| pk).collect();
        let hi_pk = same[b.index(same.len())].clone();
        let (lo, hi) = (bound_from(lo_c, &lo_pk), bound_from(hi_c, &hi_pk));
        let (lo_k, hi_k) = (bound_from(lo_c, &lo_pk.key()), bound_from(hi_c, &hi_pk.key()));
        let bounds = keyspace::row_bounds(table, lo_k.as_ref(), hi_k.as_ref());
        prop_assert!(tables.iter().any(|t| t.id == table));
        for k in &keys {
            let want = matches!(k, Logical::Row { table: t, pk } if *t == table && within(pk, &lo, &hi, cmp_pk));
            prop_assert_eq!(keyspace::in_bounds(&k.encode(), &bounds), want, "{:?} in {:?}..{:?}", k, lo, hi);
        }
    }

    /// `index_bounds` selects the entries of one index whose leading columns are within the
    /// bounds (each bound compares as many leading columns as it has values).
    #[test]
    fn index_bounds_select_the_range((_, keys) in schema_and_keys(), a in any::<prop::sample::Index>(), b in any::<prop::sample::Index>(), lo_c in any::<u8>(), hi_c in any::<u8>(), lo_n in 1usize..=3, hi_n in 1usize..=3) {
        let entries: Vec<(u32, u32, Vec<Value>)> = keys.iter().filter_map(|k| match k { Logical::Index { table, index, value, .. } => Some((*table, *index, value.clone())), _ => None }).collect();
        prop_assume!(!entries.is_empty());
        let (table, index, lo_v) = a.get(&entries).clone();
        let same: Vec<&Vec<Value>> = entries.iter().filter(|e| e.0 == table && e.1 == index).map(|e| &e.2).collect();
        let hi_v = same[b.index(same.len())].clone();
        let lo_v = lo_v[..lo_n.min(lo_v.len())].to_vec();
        let hi_v = hi_v[..hi_n.min(hi_v.len())].to_vec();
        let (lo, hi) = (bound_from(lo_c, &lo_v), bound_from(hi_c, &hi_v));
        let bounds = keyspace::index_bounds(table, index, slice(&lo), slice(&hi));
        for k in &keys {
            let want = match k {
                Logical::Index { table: t, index: i, value, .. } if *t == table && *i == index => {
                    let lead = |n: usize| value[..n].to_vec();
                    let lo_ok = match &lo { Bound::Unbounded => true, Bound::Included(v) | Bound::Excluded(v) => within(&lead(v.len()), &lo, &Bound::Unbounded, |x, y| cmp_values(x, y)) };
                    let hi_ok = match &hi { Bound::Unbounded => true, Bound::Included(v) | Bound::Excluded(v) => within(&lead(v.len()), &Bound::Unbounded, &hi, |x, y| cmp_values(x, y)) };
                    lo_ok && hi_ok
                }
                _ => false,
            };
            prop_assert_eq!(keyspace::in_bounds(&k.encode(), &bounds), want, "{:?} in {:?}..{:?}", k, lo, hi);
        }
    }

    /// Decoding gives back the logical key (and its header), under the table's shapes.
    #[test]
    fn decode_inverts_encode((tables, keys) in schema_and_keys()) {
        for k in &keys {
            let e = k.encode();
            let t = tables.iter().find(|t| t.id == k.table()).expect("a key of a table in the schema");
            match k {
                Logical::Row { table, pk } => {
                    prop_assert_eq!(keyspace::decode_header(&e)?, (*table, KeyKind::Row));
                    let (dt, dk) = keyspace::decode_row_key(&e, t.pk_shape())?;
                    prop_assert_eq!(dt, *table);
                    prop_assert!(pk_eq(&dk, pk), "{:?} decoded as {:?}", pk, dk);
                    let mut pk_bytes = Vec::new();
                    keyspace::encode_pk(&pk.key(), &mut pk_bytes);
                    prop_assert!(pk_eq(&keyspace::decode_pk(&pk_bytes, t.pk_shape())?, pk));
                    let as_entry = keyspace::decode_index_key(&e, IndexShape { columns: 1, unique: false }, t.pk_shape());
                    prop_assert!(as_entry.is_err());
                }
                Logical::Index { table, index, unique, value, pk } => {
                    prop_assert_eq!(keyspace::decode_header(&e)?, (*table, KeyKind::Index(*index)));
                    let ix = t.indexes.iter().find(|i| i.id == *index).expect("an index of the table");
                    let d = keyspace::decode_index_key(&e, IndexShape { columns: ix.cols.len(), unique: *unique }, t.pk_shape())?;
                    prop_assert_eq!((d.table, d.index), (*table, *index));
                    prop_assert_eq!(&d.value, value);
                    match (&d.pk, k.pk_in_key()) {
                        (Some(dk), Some(pk)) => prop_assert!(pk_eq(dk, pk), "{:?} decoded as {:?}", pk, dk),
                        (None, None) => {}
                        (got, want) => prop_assert!(false, "pk {:?}, expected {:?}", got, want.map(|_| pk)),
                    }
                    prop_assert!(keyspace::decode_row_key(&e, t.pk_shape()).is_err());
                }
            }
        }
    }

    /// Valid keys cut short, extended by a byte, or with any one byte changed to a boundary
    /// value decode to an error or to a key that encodes back to exactly those bytes; so do
    /// arbitrary bytes.
    #[test]
    fn decoding_accepts_only_canonical_keys((_, keys) in schema_and_keys(), pick in any::<prop::sample::Index>(), byte in any::<u8>(), noise in prop::collection::vec(any::<u8>(), 0..40)) {
        let e = pick.get(&keys).encode();
        for i in 0..=e.len() {
            decodes_canonically(&e[..i])?;
        }
        decodes_canonically(&[&e[..], &[byte]].concat())?;
        for i in 0..e.len() {
            for b in [0u8, 1, 2, 0xFE, 0xFF, byte] {
                let mut m = e.clone();
                m[i] = b;
                decodes_canonically(&m)?;
            }
        }
        decodes_canonically(&noise)?;
    }
}

/// Malformed keys and key values fail with XX001 (data corrupted), never a panic.
#[test]
fn malformed_keys_are_errors() {
    let int = PkShape::Int;
    let two = PkShape::Values(2);
    let ix = IndexShape {
        columns: 1,
        unique: false,
    };
    let uix = IndexShape {
        columns: 1,
        unique: true,
    };
    let row = |pk: &[u8]| [&[0, 0, 0, 7, b'r'][..], pk].concat();
    let entry = |rest: &[u8]| [&[0, 0, 0, 7, b'i', 0, 0, 0, 1][..], rest].concat();
    let int_value = [&[0x20u8][..], &[0x80, 0, 0, 0, 0, 0, 0, 5]].concat();
    let cases: Vec<(&str, Result<(), augur::Error>)> = vec![
        ("empty", keyspace::decode_header(&[]).map(drop)),
        ("table id only", keyspace::decode_header(&[0, 0, 0, 7]).map(drop)),
        (
            "unknown kind",
            keyspace::decode_header(&[0, 0, 0, 7, b'x', 1]).map(drop),
        ),
        (
            "index id cut short",
            keyspace::decode_header(&[0, 0, 0, 7, b'i', 0, 0]).map(drop),
        ),
        (
            "int key of 7 bytes",
            keyspace::decode_row_key(&row(&[0x80, 0, 0, 0, 0, 0, 1]), int).map(drop),
        ),
        (
            "int key of 9 bytes",
            keyspace::decode_row_key(&row(&[0x80, 0, 0, 0, 0, 0, 0, 1, 0]), int).map(drop),
        ),
        (
            "no key columns",
            keyspace::decode_pk(&[], PkShape::Values(0)).map(drop),
        ),
        (
            "one of two key columns",
            keyspace::decode_row_key(&row(&int_value), two).map(drop),
        ),
        (
            "bytes after the key",
            keyspace::decode_row_key(&row(&[&int_value[..], &int_value, &[0]].concat()), two).map(drop),
        ),
        (
            "text not UTF-8",
            keyspace::decode_pk(&[0x40, 0xC3, 0x28, 0x00, 0x01], PkShape::Values(1)).map(drop),
        ),
        (
            "bad escape",
            keyspace::decode_pk(&[0x40, b'a', 0x00, 0x02], PkShape::Values(1)).map(drop),
        ),
        (
            "unterminated text",
            keyspace::decode_pk(&[0x40, b'a'], PkShape::Values(1)).map(drop),
        ),
        (
            "bool byte 2",
            keyspace::decode_pk(&[0x10, 2], PkShape::Values(1)).map(drop),
        ),
        (
            "-0.0",
            keyspace::decode_pk(
                &[&[0x30u8][..], &(!(-0.0f64).to_bits()).to_be_bytes()].concat(),
                PkShape::Values(1),
            )
            .map(drop),
        ),
        (
            "unknown value tag",
            keyspace::decode_pk(&[0x70, 0], PkShape::Values(1)).map(drop),
        ),
        (
            "non-unique entry without pk",
            keyspace::decode_index_key(&entry(&int_value), ix, int).map(drop),
        ),
        (
            "unique entry with bytes after",
            keyspace::decode_index_key(&entry(&[&int_value[..], &[1]].concat()), uix, int).map(drop),
        ),
        (
            "unique NULL entry without pk",
            keyspace::decode_index_key(&entry(&[0x00]), uix, int).map(drop),
        ),
        (
            "index of no columns",
            keyspace::decode_index_key(
                &entry(&int_value),
                IndexShape {
                    columns: 0,
                    unique: false,
                },
                int,
            )
            .map(drop),
        ),
        (
            "row key as index key",
            keyspace::decode_index_key(&row(&[0x80, 0, 0, 0, 0, 0, 0, 1]), ix, int).map(drop),
        ),
        (
            "index key as row key",
            keyspace::decode_row_key(
                &entry(&[&int_value[..], &[0x80, 0, 0, 0, 0, 0, 0, 1]].concat()),
                int,
            )
            .map(drop),
        ),
    ];
    for (what, r) in cases {
        match r {
            Ok(()) => panic!("{what}: decoded"),
            Err(e) => assert_eq!(e.sqlstate(), SqlState::DATA_CORRUPTED, "{what}: {e}"),
        }
    }
    // The same entries well formed decode.
    let pk = [0x80, 0, 0, 0, 0, 0, 0, 1];
    assert!(keyspace::decode_index_key(&entry(&[&int_value[..], &pk].concat()), ix, int).is_ok());
    assert!(keyspace::decode_index_key(&entry(&int_value), uix, int).is_ok());
    assert!(keyspace::decode_index_key(&entry(&[&[0x00][..], &pk].concat()), uix, int).is_ok());
}

/// The layout the module documents, byte for byte, so a change to it is a visible decision.
#[test]
fn layout_is_as_documented() {
    assert_eq!(
        keyspace::row_key(0x0102_0304, &Key::Int(-1)),
        [1, 2, 3, 4, b'r', 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
    );
    let pk = Key::Bytes(encode_key_values(&[Value::Text("a\0".into())]));
    assert_eq!(
        keyspace::index_key(7, 9, false, &[Value::Int(5)], &pk),
        [
            &[0, 0, 0, 7, b'i', 0, 0, 0, 9, 0x20, 0x80, 0, 0, 0, 0, 0, 0, 5][..],
            &[0x40, b'a', 0x00, 0xFF, 0x00, 0x01]
        ]
        .concat()
    );
    assert_eq!(
        keyspace::index_key(7, 9, true, &[Value::Int(5)], &pk),
        [0, 0, 0, 7, b'i', 0, 0, 0, 9, 0x20, 0x80, 0, 0, 0, 0, 0, 0, 5]
    );
    assert_eq!(keyspace::prefix_end(&[1, 0xFF, 0xFF]), Some(vec![2]));
    assert_eq!(keyspace::prefix_end(&[0xFF, 0xFF]), None);
    assert_eq!(keyspace::prefix_end(&[]), None);
}
