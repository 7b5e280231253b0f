#!/usr/bin/env python3
"""Deterministic test data for the SLT sources.

Rewrites, in place, every block of a tests/slt/src/*.sql-slt file delimited by
    # @datagen begin NAME
    ...
    # @datagen end NAME
(`# @datagen begin NAME TABLE` inserts the same rows into another table) with multi-row INSERT ... VALUES statements for data set NAME, built from a seeded PRNG
(random.Random with a fixed seed per data set), so the data is reproducible and the
corpus needs no generate_series.  Run it, then scripts/slt-regen.
"""
import random
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
         "india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa"]


def sql_lit(v):
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return "'" + str(v).replace("'", "''") + "'"


def pr_int():
    rng = random.Random(1001)
    ids = rng.sample(range(1, 3001), 300)
    rows = []
    for i in ids:
        score = None if rng.random() < 0.1 else rng.randint(0, 1000)
        rows.append((i, rng.randint(0, 9), rng.choice(WORDS), score))
    return "pr_int (id, grp, val, score)", rows


def pr_big():
    rng = random.Random(1002)
    ids = set([-9223372036854775808, 9223372036854775807, 0, -1, 1,
               2147483647, 2147483648, -2147483648, -2147483649,
               4294967296, 1000000000000])
    while len(ids) < 200:
        ids.add(rng.randint(-9 * 10**15, 9 * 10**15))
    ids = sorted(ids)
    rng.shuffle(ids)
    return "pr_big (id, v)", [(i, rng.randint(-100, 100)) for i in ids]


def pr_neg():
    rng = random.Random(1003)
    ids = set([-1000, -1, 0, 1, 1000])
    while len(ids) < 250:
        ids.add(rng.randint(-1000, 1000))
    ids = list(ids)
    rng.shuffle(ids)
    return "pr_neg (id, v)", [(i, rng.randint(0, 50)) for i in ids]


def pr_text():
    rng = random.Random(1004)
    keys = set(["a", "aa", "ab", "b", "ba", "z", "zz", "Apple", "apple", "APPLE",
                "a1", "A", "0", "09", "9", "abc", "abd", "abcd", "b_c", "b%c"])
    while len(keys) < 200:
        n = rng.randint(1, 7)
        keys.add("".join(rng.choice("abcdefghij") for _ in range(n)))
    keys = sorted(keys)
    rng.shuffle(keys)
    return "pr_text (k, n)", [(k, rng.randint(1, 99)) for k in keys]


def pr_comp():
    rng = random.Random(1005)
    pairs = set()
    while len(pairs) < 150:
        pairs.add((rng.randint(1, 20), rng.randint(1, 15)))
    pairs = sorted(pairs)
    rng.shuffle(pairs)
    return "pr_comp (a, b, note)", [(a, b, rng.choice(WORDS[:6])) for a, b in pairs]


def ag_sales():
    rng = random.Random(2001)
    regions = ["north", "south", "east", "west", "central"]
    products = ["bolt", "nut", "gear", "lever", "pulley", "screw", "spring", "wheel"]
    rows = []
    for i in range(1, 161):
        qty = None if rng.random() < 0.08 else rng.randint(1, 40)
        price = None if rng.random() < 0.05 else rng.randint(1, 400) / 4.0
        region = None if i % 37 == 0 else rng.choice(regions)
        rows.append((i, region, rng.choice(products), qty, price))
    return "ag_sales (id, region, product, qty, price)", rows


def jn_orders():
    rng = random.Random(3001)
    rows = []
    for i in range(1, 201):
        cust = None if rng.random() < 0.04 else rng.randint(1, 45)  # 41..45 do not exist
        rows.append((i, cust, rng.randint(1, 12), rng.randint(1, 9)))
    return "jn_orders (id, customer_id, product_id, qty)", rows


def jn_customers():
    rng = random.Random(3002)
    cities = ["Oslo", "Lima", "Kyiv", "Pune", "Nice", "Bern"]
    rows = []
    for i in range(1, 41):
        city = None if i % 13 == 0 else rng.choice(cities)
        rows.append((i, "cust" + str(i).zfill(2), city))
    return "jn_customers (id, name, city)", rows


DATASETS = {f.__name__: f for f in
            [pr_int, pr_big, pr_neg, pr_text, pr_comp, ag_sales, jn_orders, jn_customers]}


def inserts(name, table=None, per_stmt=100, per_line=6):
    target, rows = DATASETS[name]()
    if table:
        target = table + target[target.index(" "):]
    out = []
    for s in range(0, len(rows), per_stmt):
        chunk = rows[s:s + per_stmt]
        out.append("statement ok")
        out.append(f"INSERT INTO {target} VALUES")
        lines = []
        for l in range(0, len(chunk), per_line):
            lines.append(", ".join("(" + ", ".join(sql_lit(v) for v in r) + ")"
                                   for r in chunk[l:l + per_line]))
        out.append(",\n".join(lines))
        out.append("")
    return "\n".join(out)


def main():
    pat = re.compile(r"^# @datagen begin (\w+)( \w+)?\n.*?^# @datagen end \1$", re.S | re.M)
    for path in sorted(HERE.glob("*.sql-slt")):
        text = path.read_text()
        new = pat.sub(lambda m: f"# @datagen begin {m.group(1)}{m.group(2) or ''}\n\n"
                                f"{inserts(m.group(1), (m.group(2) or '').strip() or None)}\n"
                                f"# @datagen end {m.group(1)}", text)
        if new != text:
            path.write_text(new)
            print(f"updated {path.name}")


if __name__ == "__main__":
    main()
