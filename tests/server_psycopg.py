"""psycopg 3 and psycopg2 against `augur serve` (driven by tests/server_drivers.rs).

Usage: python3 tests/server_psycopg.py PORT
Exits non-zero (with a traceback) on the first failed check.
"""
import datetime
import sys

PORT = int(sys.argv[1])
DSN = f"host=127.0.0.1 port={PORT} user=augur dbname=augur"
TS = datetime.datetime(2024, 1, 2, 3, 4, 5, 123456)


def check_psycopg3():
    import psycopg
    from psycopg import errors

    with psycopg.connect(DSN, autocommit=True) as conn:
        conn.execute(
            "create table py3 (id int primary key, name text, score float8, ok bool, at timestamp, raw bytea, "
            "small smallint, big bigint)"
        )
        # Server-side parameters (extended protocol), every type.
        conn.execute(
            "insert into py3 values (%s, %s, %s, %s, %s, %s, %s, %s)",
            (1, "one", 1.5, True, TS, b"\x00\x01\xff", 7, 2**40),
        )
        conn.execute("insert into py3 (id) values (%s)", (2,))
        want = (1, "one", 1.5, True, TS, b"\x00\x01\xff", 7, 2**40)
        row = conn.execute("select id, name, score, ok, at, raw, small, big from py3 where id = %s", (1,)).fetchone()
        assert row == want, row
        # Binary results.
        cur = conn.cursor(binary=True)
        cur.execute("select id, name, score, ok, at, raw, small, big from py3 where id = %s", (1,))
        assert cur.fetchone() == want
        cur.execute("select id, name, score, ok, at, raw, small, big from py3 where id = 2")
        assert cur.fetchone() == (2, None, None, None, None, None, None, None)
        # Binary parameters.
        cur = conn.cursor()
        cur.execute("select count(*) from py3 where raw = %b and ok = %b and at = %b", (b"\x00\x01\xff", True, TS))
        assert cur.fetchone()[0] == 1
        # Parameters in a WHERE with text and numbers.
        assert conn.execute("select name from py3 where name = %s and score > %s", ("one", 1.0)).fetchone() == ("one",)

    with psycopg.connect(DSN) as conn:  # not autocommit: psycopg opens a block per transaction
        conn.execute("insert into py3 (id, name) values (3, 'three')")
        conn.rollback()
        assert conn.execute("select count(*) from py3 where id = 3").fetchone()[0] == 0
        conn.rollback()
        with conn.transaction():
            conn.execute("insert into py3 (id, name) values (4, 'four')")
        assert conn.execute("select name from py3 where id = 4").fetchone() == ("four",)
        conn.commit()
        try:
            conn.execute("insert into py3 (id) values (1)")
            raise AssertionError("duplicate key accepted")
        except errors.UniqueViolation as e:
            assert e.sqlstate == "23505"
        conn.rollback()
        try:
            conn.execute("select * from nosuch")
            raise AssertionError("undefined table accepted")
        except errors.UndefinedTable as e:
            assert e.sqlstate == "42P01"
        conn.rollback()
        try:
            conn.execute("select 1/0")
            raise AssertionError("division by zero accepted")
        except errors.DivisionByZero:
            pass
        conn.rollback()
        # COPY FROM STDIN.
        with conn.cursor() as cur:
            with cur.copy("copy py3 (id, name, score) from stdin") as cp:
                cp.write_row((10, "ten", 10.5))
                cp.write_row((11, None, None))
        conn.commit()
        assert conn.execute("select id, name, score from py3 where id >= 10 order by id").fetchall() == [
            (10, "ten", 10.5),
            (11, None, None),
        ]
        conn.commit()
        # Nested transactions are savepoints (as SQLAlchemy's begin_nested and Django's atomic):
        # a failed inner block is rolled back to its savepoint and the outer one goes on.
        with conn.transaction():
            conn.execute("insert into py3 (id, name) values (20, 'outer')")
            try:
                with conn.transaction():
                    conn.execute("insert into py3 (id, name) values (21, 'inner')")
                    conn.execute("insert into py3 (id) values (1)")
                raise AssertionError("duplicate key accepted")
            except errors.UniqueViolation:
                pass
            with conn.transaction():
                conn.execute("insert into py3 (id, name) values (22, 'inner ok')")
        assert conn.execute("select id, name from py3 where id >= 20 order by id").fetchall() == [
            (20, "outer"),
            (22, "inner ok"),
        ]
        conn.commit()

    # date, timestamptz (aware datetimes) and serial keys, in text and binary.
    with psycopg.connect(DSN, autocommit=True) as conn:
        conn.execute("create table py3_dt (id serial primary key, d date, at timestamptz)")
        day = datetime.date(2026, 1, 2)
        at = datetime.datetime(2026, 1, 2, 3, 4, 5, 250000, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
        got = conn.execute("insert into py3_dt (d, at) values (%s, %s) returning id", (day, at)).fetchone()
        assert got == (1,), got
        conn.execute("insert into py3_dt (d, at) values (%b, %b)", (day, at))
        for binary in (False, True):
            cur = conn.cursor(binary=binary)
            rows = cur.execute("select id, d, at from py3_dt order by id").fetchall()
            assert [r[0] for r in rows] == [1, 2], rows
            for r in rows:
                assert r[1] == day and r[2] == at, (binary, r)
        assert conn.execute("select count(*) from py3_dt where at = %s", (at,)).fetchone()[0] == 2
        conn.execute("drop table py3_dt")

    # array_agg's arrays (int4[], text[], timestamp[], bool[], float8[]) in text and binary:
    # NULL elements, quoted elements, ORDER BY inside the call, NULL over no rows.
    with psycopg.connect(DSN, autocommit=True) as conn:
        conn.execute("create table py3_arr (id int primary key, g int, name text, at timestamp, ok bool, f float8)")
        conn.execute(
            "insert into py3_arr values (1, 1, 'a b', %s, true, 1.5), (2, 1, NULL, NULL, false, NULL), "
            "(3, 2, 'x\"y', %s, NULL, -2)",
            (TS, TS),
        )
        q = (
            "select g, array_agg(id order by id desc), array_agg(name order by id), array_agg(at order by id), "
            "array_agg(ok order by id), array_agg(f order by id) from py3_arr group by g order by g"
        )
        for binary in (False, True):
            cur = conn.cursor(binary=binary)
            rows = cur.execute(q).fetchall()
            assert rows == [
                (1, [2, 1], ["a b", None], [TS, None], [True, False], [1.5, None]),
                (2, [3], ['x"y'], [TS], [None], [-2.0]),
            ], (binary, rows)
            assert cur.execute("select array_agg(id) from py3_arr where id > 10").fetchone() == (None,)
        conn.execute("drop table py3_arr")


def check_psycopg2():
    import psycopg2
    import psycopg2.errorcodes

    conn = psycopg2.connect(DSN)
    cur = conn.cursor()
    cur.execute(
        "create table py2 (id int primary key, name text, score float8, ok bool, at timestamp, raw bytea, big bigint)"
    )
    conn.commit()
    cur.execute(
        "insert into py2 values (%s, %s, %s, %s, %s, %s, %s)",
        (1, "it's", 2.25, False, TS, psycopg2.Binary(b"\x00\x02"), 2**40),
    )
    cur.execute("insert into py2 (id) values (%s)", (2,))
    conn.commit()
    cur.execute("select id, name, score, ok, at, raw, big from py2 order by id")
    rows = cur.fetchall()
    assert rows[0][:5] == (1, "it's", 2.25, False, TS), rows
    assert bytes(rows[0][5]) == b"\x00\x02" and rows[0][6] == 2**40, rows
    assert rows[1] == (2, None, None, None, None, None, None), rows
    conn.rollback()
    cur.execute("insert into py2 (id) values (3)")
    conn.rollback()
    cur.execute("select count(*) from py2")
    assert cur.fetchone()[0] == 2
    conn.rollback()
    try:
        cur.execute("insert into py2 (id) values (1)")
        raise AssertionError("duplicate key accepted")
    except psycopg2.Error as e:
        assert e.pgcode == psycopg2.errorcodes.UNIQUE_VIOLATION, e.pgcode
    conn.rollback()
    conn.autocommit = True
    cur.execute("select %s::text, %s", ("x", 5))
    assert cur.fetchone() == ("x", 5)
    conn.close()


if __name__ == "__main__":
    which = sys.argv[2:] or ["psycopg", "psycopg2"]
    if "psycopg" in which:
        check_psycopg3()
        print("psycopg 3: ok")
    if "psycopg2" in which:
        check_psycopg2()
        print("psycopg2: ok")
