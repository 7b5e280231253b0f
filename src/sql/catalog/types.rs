//! The built-in types pg_type lists: the ones Augur's columns have, the ones its catalog
//! relations' columns have in PostgreSQL (name, "char", oid), and their array types, with
//! PostgreSQL's OIDs, sizes and I/O function names; `format_type` over them.

use crate::types::DataType;

/// One pg_type row's facts (the other columns are the same for every built-in base type).
pub struct PgType {
    pub oid: i64,
    pub name: &'static str,
    /// What `format_type` prints (without a type modifier).
    pub display: &'static str,
    pub len: i64,
    pub byval: bool,
    pub category: &'static str,
    pub preferred: bool,
    /// The element type of an array type (0 otherwise).
    pub elem: i64,
    /// The array type of a base type (0 for an array type).
    pub array: i64,
    /// Prefix of the I/O functions: `{io}in`, `{io}out`, `{io}recv`, `{io}send`.
    pub io: &'static str,
    pub align: &'static str,
    pub storage: &'static str,
    pub collatable: bool,
}

#[allow(clippy::too_many_arguments)]
const fn base(
    oid: i64,
    name: &'static str,
    display: &'static str,
    len: i64,
    byval: bool,
    category: &'static str,
    array: i64,
    io: &'static str,
    align: &'static str,
) -> PgType {
    let varlena = len == -1;
    PgType {
        oid,
        name,
        display,
        len,
        byval,
        category,
        preferred: false,
        elem: 0,
        array,
        io,
        align,
        storage: if varlena { "x" } else { "p" },
        collatable: false,
    }
}

const fn array(
    oid: i64,
    name: &'static str,
    display: &'static str,
    elem: i64,
    align: &'static str,
) -> PgType {
    PgType {
        oid,
        name,
        display,
        len: -1,
        byval: false,
        category: "A",
        preferred: false,
        elem,
        array: 0,
        io: "array_",
        align,
        storage: "x",
        collatable: false,
    }
}

const fn preferred(mut t: PgType) -> PgType {
    t.preferred = true;
    t
}

const fn collatable(mut t: PgType) -> PgType {
    t.collatable = true;
    t
}

const fn storage(mut t: PgType, storage: &'static str) -> PgType {
    t.storage = storage;
    t
}

/// pg_type's rows, by OID.
pub const TYPES: &[PgType] = &[
    preferred(base(16, "bool", "boolean", 1, true, "B", 1000, "bool", "c")),
    base(17, "bytea", "bytea", -1, false, "U", 1001, "bytea", "i"),
    base(18, "char", "\"char\"", 1, true, "Z", 1002, "char", "c"),
    collatable(base(19, "name", "name", 64, false, "S", 1003, "name", "c")),
    base(20, "int8", "bigint", 8, true, "N", 1016, "int8", "d"),
    base(21, "int2", "smallint", 2, true, "N", 1005, "int2", "s"),
    base(23, "int4", "integer", 4, true, "N", 1007, "int4", "i"),
    preferred(collatable(base(
        25, "text", "text", -1, false, "S", 1009, "text", "i",
    ))),
    preferred(base(26, "oid", "oid", 4, true, "N", 1028, "oid", "i")),
    base(114, "json", "json", -1, false, "U", 199, "json_", "i"),
    array(199, "_json", "json[]", 114, "i"),
    preferred(base(
        701,
        "float8",
        "double precision",
        8,
        true,
        "N",
        1022,
        "float8",
        "d",
    )),
    // The type of an untyped literal (pg_typeof('x'), `'unknown'::regtype`).
    base(705, "unknown", "unknown", -2, false, "X", 0, "unknown", "c"),
    array(1000, "_bool", "boolean[]", 16, "i"),
    array(1001, "_bytea", "bytea[]", 17, "i"),
    array(1002, "_char", "\"char\"[]", 18, "i"),
    collatable(array(1003, "_name", "name[]", 19, "i")),
    array(1005, "_int2", "smallint[]", 21, "i"),
    array(1007, "_int4", "integer[]", 23, "i"),
    collatable(array(1009, "_text", "text[]", 25, "i")),
    collatable(array(1014, "_bpchar", "character[]", 1042, "i")),
    collatable(array(1015, "_varchar", "character varying[]", 1043, "i")),
    array(1016, "_int8", "bigint[]", 20, "d"),
    array(1022, "_float8", "double precision[]", 701, "d"),
    array(1028, "_oid", "oid[]", 26, "i"),
    collatable(base(
        1042,
        "bpchar",
        "character",
        -1,
        false,
        "S",
        1014,
        "bpchar",
        "i",
    )),
    collatable(base(
        1043,
        "varchar",
        "character varying",
        -1,
        false,
        "S",
        1015,
        "varchar",
        "i",
    )),
    base(1082, "date", "date", 4, true, "D", 1182, "date_", "i"),
    base(
        1083,
        "time",
        "time without time zone",
        8,
        true,
        "D",
        1183,
        "time_",
        "d",
    ),
    base(
        1114,
        "timestamp",
        "timestamp without time zone",
        8,
        true,
        "D",
        1115,
        "timestamp_",
        "d",
    ),
    array(1115, "_timestamp", "timestamp without time zone[]", 1114, "d"),
    array(1182, "_date", "date[]", 1082, "i"),
    array(1183, "_time", "time without time zone[]", 1083, "d"),
    preferred(base(
        1184,
        "timestamptz",
        "timestamp with time zone",
        8,
        true,
        "D",
        1185,
        "timestamptz_",
        "d",
    )),
    array(1185, "_timestamptz", "timestamp with time zone[]", 1184, "d"),
    preferred(base(
        1186,
        "interval",
        "interval",
        16,
        false,
        "T",
        1187,
        "interval_",
        "d",
    )),
    array(1187, "_interval", "interval[]", 1186, "d"),
    array(1231, "_numeric", "numeric[]", 1700, "i"),
    storage(
        base(1700, "numeric", "numeric", -1, false, "N", 1231, "numeric_", "i"),
        "m",
    ),
    base(2206, "regtype", "regtype", 4, true, "N", 2211, "regtype", "i"),
    array(2211, "_regtype", "regtype[]", 2206, "i"),
    base(2950, "uuid", "uuid", 16, false, "U", 2951, "uuid_", "c"),
    array(2951, "_uuid", "uuid[]", 2950, "i"),
    base(3802, "jsonb", "jsonb", -1, false, "U", 3807, "jsonb_", "i"),
    array(3807, "_jsonb", "jsonb[]", 3802, "i"),
];

pub fn by_oid(oid: i64) -> Option<&'static PgType> {
    TYPES.iter().find(|t| t.oid == oid)
}

/// The type a `::regtype` literal names (`integer`, `int4`, `character varying`, ...).
pub fn by_name(name: &str) -> Option<&'static PgType> {
    let n = name.trim().to_ascii_lowercase();
    let n = n.strip_prefix("pg_catalog.").unwrap_or(&n);
    // An unquoted `char` is SQL's character (bpchar), as PostgreSQL's type-name grammar reads
    // it; only `"char"` is the one-byte type.
    if n == "char" {
        return by_oid(1042);
    }
    if let Some(t) = TYPES.iter().find(|t| t.name == n || t.display == n) {
        return Some(t);
    }
    let oid = match n {
        "\"char\"" => 18,
        "int" => 23,
        "boolean" => 16,
        "double precision" | "float" => 701,
        "timestamp without time zone" => 1114,
        "timestamp with time zone" => 1184,
        "time without time zone" => 1083,
        _ => DataType::from_sql_name(n, None).ok()?.pg_oid() as i64,
    };
    by_oid(oid)
}

/// The OID and type modifier of a column of type `t` (`varchar(n)` and `varchar(n)[]`: n + 4, `numeric(p, s)`
/// and `numeric(p, s)[]`: ((p << 16) | s) + 4, as PostgreSQL).
pub fn column_type(t: DataType) -> (i64, i64) {
    (t.pg_oid() as i64, i64::from(t.typmod()))
}

/// `format_type(oid, typmod)`: PostgreSQL's SQL name for a type, with its length.
pub fn format_type(oid: i64, typmod: Option<i64>) -> String {
    let Some(t) = by_oid(oid) else {
        return "???".into();
    };
    match (oid, typmod) {
        (1042 | 1043, Some(m)) if m >= 4 => format!("{}({})", t.display, m - 4),
        (1014 | 1015, Some(m)) if m >= 4 => format!("{}({})[]", t.display.trim_end_matches("[]"), m - 4),
        (1700, Some(m)) if m >= 4 => format!("numeric({},{})", ((m - 4) >> 16) & 0xffff, (m - 4) & 0xffff),
        (1231, Some(m)) if m >= 4 => format!("numeric({},{})[]", ((m - 4) >> 16) & 0xffff, (m - 4) & 0xffff),
        // time(p): the modifier is p itself.
        (1083, Some(m)) if m >= 0 => format!("time({m}) without time zone"),
        (1183, Some(m)) if m >= 0 => format!("time({m}) without time zone[]"),
        _ => t.display.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_and_elements_agree() {
        for t in TYPES {
            if t.elem != 0 {
                assert_eq!(by_oid(t.elem).map(|e| e.array), Some(t.oid), "{}", t.name);
            }
            if t.array != 0 {
                assert_eq!(by_oid(t.array).map(|a| a.elem), Some(t.oid), "{}", t.name);
            }
        }
    }

    #[test]
    fn names() {
        assert_eq!(format_type(1043, Some(24)), "character varying(20)");
        assert_eq!(format_type(1043, Some(-1)), "character varying");
        assert_eq!(format_type(23, None), "integer");
        assert_eq!(format_type(9999, None), "???");
        assert_eq!(by_name("int4").map(|t| t.oid), Some(23));
        assert_eq!(by_name("integer").map(|t| t.oid), Some(23));
        assert_eq!(by_name("character varying").map(|t| t.oid), Some(1043));
        assert_eq!(by_name("timestamptz").map(|t| t.oid), Some(1184));
        assert_eq!(format_type(1700, Some(((10 << 16) | 2) + 4)), "numeric(10,2)");
        assert_eq!(format_type(1700, Some(-1)), "numeric");
        assert_eq!(
            column_type(DataType::Numeric(Some((10, 2)))),
            (1700, ((10 << 16) | 2) + 4)
        );
        let n52 = DataType::array_keeping_typmod(DataType::Numeric(Some((5, 2)))).unwrap();
        let (oid, typmod) = column_type(n52);
        assert_eq!(format_type(oid, Some(typmod)), "numeric(5,2)[]");
        assert_eq!(format_type(1231, Some(-1)), "numeric[]");
        assert_eq!(by_name("decimal").map(|t| t.oid), Some(1700));
        assert_eq!(by_name("uuid").map(|t| t.oid), Some(2950));
        // PostgreSQL 15: 'char'::regtype is character (1042), '"char"'::regtype 18.
        assert_eq!(
            by_name("char").map(|t| (t.oid, t.display)),
            Some((1042, "character"))
        );
        assert_eq!(by_name("\"char\"").map(|t| t.oid), Some(18));
        assert_eq!(by_name("pg_catalog.char").map(|t| t.oid), Some(1042));
    }
}
