"""SQLAlchemy 2.1 over psycopg 3 against `augur serve` (driven by tests/server_drivers.rs): what
an application does first (create_all, which asks pg_catalog whether each table exists; the
ORM's add / query / rollback; begin_nested savepoints) and the inspector's table list, columns,
primary keys, unique constraints, indexes, foreign keys and CHECK constraints, answered by
Augur's pg_catalog relations (the primary key, unique constraint and index queries read
`array_agg(... ORDER BY ...)` results as arrays). Every inspector answer asserted here is what
the same script gets from PostgreSQL 15.

Usage: python3 tests/server_sqlalchemy.py PORT
Exits non-zero (with a traceback) on the first failed check.
"""
import sys

from sqlalchemy import CheckConstraint, ForeignKey, Index, String, create_engine, inspect, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

PORT = int(sys.argv[1])
engine = create_engine(f"postgresql+psycopg://augur@127.0.0.1:{PORT}/augur")


class Base(DeclarativeBase):
    pass


class Item(Base):
    __tablename__ = "sa_items"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(40), unique=True)


class Tag(Base):
    __tablename__ = "sa_tags"
    label: Mapped[str] = mapped_column(String(20), primary_key=True)


class Line(Base):
    __tablename__ = "sa_lines"
    __table_args__ = (
        CheckConstraint("qty > 0 AND qty < 1000", name="sa_lines_qty"),
        Index("sa_lines_item_qty", "item_id", "qty"),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("sa_items.id", ondelete="CASCADE"))
    tag: Mapped[str | None] = mapped_column(ForeignKey("sa_tags.label"))
    qty: Mapped[int]


Base.metadata.create_all(engine)
# A second create_all finds the tables (has_table reads pg_class) and creates nothing.
Base.metadata.create_all(engine)

insp = inspect(engine)
names = insp.get_table_names()
assert sorted(names) == ["sa_items", "sa_lines", "sa_tags"], names
assert insp.has_table("sa_items")
assert not insp.has_table("sa_nosuch")
cols = insp.get_columns("sa_items")
got = [(c["name"], str(c["type"]), c["nullable"]) for c in cols]
assert got == [("id", "INTEGER", False), ("name", "VARCHAR(40)", False)], cols
assert cols[0]["autoincrement"] is True and "sa_items_id_seq" in cols[0]["default"], cols
# Primary keys, unique constraints and indexes: array_agg(attname ORDER BY position) arrays.
for table, pk in [("sa_items", "id"), ("sa_tags", "label"), ("sa_lines", "id")]:
    got = insp.get_pk_constraint(table)
    assert got["constrained_columns"] == [pk] and got["name"] == f"{table}_pkey", got
uniques = insp.get_unique_constraints("sa_items")
assert [(u["name"], u["column_names"]) for u in uniques] == [("sa_items_name_key", ["name"])], uniques
assert insp.get_unique_constraints("sa_lines") == []
indexes = insp.get_indexes("sa_items")
got = [(i["name"], i["unique"], i["column_names"], i.get("duplicates_constraint")) for i in indexes]
assert got == [("sa_items_name_key", True, ["name"], "sa_items_name_key")], indexes
indexes = insp.get_indexes("sa_lines")
got = [(i["name"], i["unique"], i["column_names"], i.get("duplicates_constraint")) for i in indexes]
assert got == [("sa_lines_item_qty", False, ["item_id", "qty"], None)], indexes
assert insp.get_indexes("sa_tags") == []
# Foreign keys and CHECK constraints: pg_get_constraintdef's text, which SQLAlchemy parses.
fks = sorted(insp.get_foreign_keys("sa_lines"), key=lambda f: f["name"])
got = [
    (f["name"], f["constrained_columns"], f["referred_table"], f["referred_columns"], f["options"])
    for f in fks
]
assert got == [
    ("sa_lines_item_id_fkey", ["item_id"], "sa_items", ["id"], {"ondelete": "CASCADE"}),
    ("sa_lines_tag_fkey", ["tag"], "sa_tags", ["label"], {}),
], fks
checks = insp.get_check_constraints("sa_lines")
assert [(c["name"], c["sqltext"]) for c in checks] == [
    ("sa_lines_qty", "qty > 0 AND qty < 1000")
], checks
assert insp.get_foreign_keys("sa_items") == []

with Session(engine) as s:
    s.add(Item(name="first"))
    s.flush()
    s.add(Item(name="second"))
    s.commit()
    got = s.scalars(select(Item.name).order_by(Item.id)).all()
    assert got == ["first", "second"], got
    # A nested transaction (SAVEPOINT) rolled back undoes only its own writes.
    s.add(Tag(label="kept"))
    nested = s.begin_nested()
    s.add(Tag(label="undone"))
    s.flush()
    nested.rollback()
    s.commit()
    assert s.scalars(select(Tag.label)).all() == ["kept"]
    # A rolled-back transaction leaves nothing.
    s.add(Item(name="rolled back"))
    s.flush()
    s.rollback()
    assert s.scalars(select(Item.name).where(Item.name == "rolled back")).all() == []

Base.metadata.drop_all(engine)
assert inspect(engine).get_table_names() == []
print("sqlalchemy: ok")
