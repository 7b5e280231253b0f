#!/usr/bin/env python3
"""Writes fuzz/seeds/wire/*: captured-style PostgreSQL frontend messages for the wire target.
Byte 0 of each seed is the harness's mode (fuzz/src/wire.rs): 0 raw, 1 startup + raw,
2 startup + frames [type][len u8][body]."""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "wire")


def msg(t, body=b""):
    return t + struct.pack("!I", len(body) + 4) + body


def cstr(s):
    return s.encode() + b"\0"


def startup(params=(("user", "augur"), ("database", "augur"))):
    body = struct.pack("!I", 196608) + b"".join(cstr(k) + cstr(v) for k, v in params) + b"\0"
    return struct.pack("!I", len(body) + 4) + body


def q(sql):
    return msg(b"Q", cstr(sql))


def parse(name, sql, oids=()):
    return msg(b"P", cstr(name) + cstr(sql) + struct.pack("!H", len(oids)) + b"".join(struct.pack("!I", o) for o in oids))


def bind(portal, stmt, params, pfmt=(), rfmt=()):
    body = cstr(portal) + cstr(stmt) + struct.pack("!H", len(pfmt)) + b"".join(struct.pack("!H", f) for f in pfmt)
    body += struct.pack("!H", len(params))
    for p in params:
        body += struct.pack("!i", -1) if p is None else struct.pack("!I", len(p)) + p
    body += struct.pack("!H", len(rfmt)) + b"".join(struct.pack("!H", f) for f in rfmt)
    return msg(b"B", body)


def execute(portal="", n=0):
    return msg(b"E", cstr(portal) + struct.pack("!I", n))


SYNC = msg(b"S")
TERM = msg(b"X")

seeds = {
    "simple_query": b"\x01" + q("SELECT * FROM t ORDER BY id") + TERM,
    "multi_statement": b"\x01" + q("BEGIN; INSERT INTO h VALUES (5, 'e'); SELECT count(*) FROM h; COMMIT") + TERM,
    "error_then_query": b"\x01" + q("SELEC 1") + q("SELECT v FROM t WHERE id = 42") + TERM,
    "extended": b"\x01" + parse("", "SELECT * FROM t WHERE id = $1") + bind("", "", [b"1"]) + msg(b"D", b"P\0")
    + execute() + SYNC + TERM,
    "extended_named_binary": b"\x01" + parse("s1", "SELECT id, f, ts FROM t WHERE id >= $1", [20])
    + msg(b"D", b"Ss1\0") + bind("p1", "s1", [struct.pack("!q", 0)], [1], [1]) + execute("p1", 2) + execute("p1", 0)
    + msg(b"C", b"Pp1\0") + msg(b"C", b"Ss1\0") + SYNC + TERM,
    "extended_insert_params": b"\x01" + parse("", "INSERT INTO c VALUES ($1, $2, $3)", [23, 21, 17])
    + bind("", "", [struct.pack("!i", 9), struct.pack("!h", 1), b"\x00\x01"], [1]) + execute() + SYNC
    + parse("", "UPDATE t SET ts = $1 WHERE id = $2", [1114, 20])
    + bind("", "", [struct.pack("!q", 0), struct.pack("!q", 1)], [1]) + execute() + msg(b"H") + SYNC + TERM,
    "extended_date_param": b"\x01" + parse("", "SELECT $1::timestamp", [1082]) + bind("", "", [struct.pack("!i", 1)], [1])
    + execute() + SYNC + TERM,
    "copy_in": b"\x01" + q("COPY h FROM STDIN") + msg(b"d", b"7\tseven\n8\t\\N\n") + msg(b"c") + TERM,
    "copy_fail": b"\x01" + q("COPY h (x, y) FROM STDIN") + msg(b"d", b"1\tx\n") + msg(b"f", cstr("client gave up")) + TERM,
    "ssl_then_startup": b"\x00" + struct.pack("!II", 8, 80877103) + startup() + q("SHOW server_version") + TERM,
    "gss_then_startup": b"\x00" + struct.pack("!II", 8, 80877104) + startup() + TERM,
    "startup_options": b"\x00" + startup((("user", "augur"), ("database", "augur"), ("application_name", "fuzz"),
                                          ("client_encoding", "UTF8"), ("options", "-c search_path=public")))
    + q("SET datestyle = 'ISO'; SHOW datestyle") + TERM,
    "cancel_request": b"\x00" + struct.pack("!IIII", 16, 80877102, 1, 2),
    "old_protocol": b"\x00" + struct.pack("!II", 8, 131072),
    "framed_query": b"\x02" + b"Q" + bytes([len(b"SELECT 1\0")]) + b"SELECT 1\0" + b"S\x00" + b"X\x00",
    "framed_extended": b"\x02" + b"P\x10" + b"\0SELECT $1::int\0\0\0" + b"B\x0e" + b"\0\0\0\0\0\x01\0\0\0\x0212\0\0"
    + b"E\x05\0\0\0\0\0" + b"S\x00",
    "catalog_psql_dt": b"\x01" + q("SELECT n.nspname, c.relname FROM pg_catalog.pg_class c LEFT JOIN pg_catalog.pg_namespace n "
                                   "ON n.oid = c.relnamespace WHERE c.relkind IN ('r','p','') ORDER BY 1,2") + TERM,
}

os.makedirs(OUT, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
print(f"{len(seeds)} seeds in {OUT}")
