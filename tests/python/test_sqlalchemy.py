"""SQLAlchemy 2 (psycopg 3 driver) against a real `steady serve`: declarative models with a
relationship, a uuid key, a jsonb column and a timestamptz column; create_all and reflection;
lazy and eager loads; a CTE; a window function; a bulk insert; an upsert; drop_all; an enum
column, whose type create_all creates (CREATE TYPE ... AS ENUM) and drop_all drops.

The reflected columns, keys, unique constraints, foreign keys and indexes are what PostgreSQL 15
reflects for the same models (checked against it when this module was written).
"""

import enum
import uuid
from datetime import datetime, timezone

import pytest
from sqlalchemy import (
    Enum as SqlEnum,
    ForeignKey,
    Index,
    String,
    create_engine,
    func,
    insert,
    inspect,
    select,
)
from sqlalchemy.dialects.postgresql import JSONB, insert as pg_insert
from sqlalchemy.orm import (
    DeclarativeBase,
    Mapped,
    Session,
    joinedload,
    mapped_column,
    relationship,
    selectinload,
)
from sqlalchemy.types import DateTime, Uuid


class Base(DeclarativeBase):
    pass


class Author(Base):
    __tablename__ = "author"
    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    name: Mapped[str] = mapped_column(String(50), unique=True)
    joined: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    books: Mapped[list["Book"]] = relationship(back_populates="author", order_by="Book.id")


class Book(Base):
    __tablename__ = "book"
    id: Mapped[int] = mapped_column(primary_key=True)
    author_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("author.id"))
    title: Mapped[str] = mapped_column(String(100))
    pages: Mapped[int | None]
    meta: Mapped[dict] = mapped_column(JSONB, default=dict)
    author: Mapped[Author] = relationship(back_populates="books")
    __table_args__ = (Index("book_title", "title"),)


@pytest.fixture(scope="module")
def engine(server):
    url = "postgresql+psycopg://" + "&".join(
        "=".join(p) for p in (part.split("=") for part in server.split())
    ).replace("host=", "?host=", 1)
    engine = create_engine(url)
    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)
    yield engine
    Base.metadata.drop_all(engine)
    assert not inspect(engine).has_table("book")
    engine.dispose()


def test_reflection_matches_postgresql(engine):
    inspector = inspect(engine)
    assert set(inspector.get_table_names()) >= {"author", "book"}
    columns = {c["name"]: c for c in inspector.get_columns("book")}
    assert list(columns) == ["id", "author_id", "title", "pages", "meta"]
    assert [str(columns[n]["type"]) for n in columns] == [
        "INTEGER", "UUID", "VARCHAR(100)", "INTEGER", "JSONB",
    ]
    assert [columns[n]["nullable"] for n in columns] == [False, False, False, True, False]
    assert columns["id"]["autoincrement"] is True
    assert "nextval" in (columns["id"]["default"] or "")
    joined = {c["name"]: c for c in inspector.get_columns("author")}["joined"]
    assert str(joined["type"]) == "TIMESTAMP" and joined["type"].timezone
    assert joined["default"] == "now()"
    assert inspector.get_pk_constraint("book")["constrained_columns"] == ["id"]
    unique = inspector.get_unique_constraints("author")
    assert [u["column_names"] for u in unique] == [["name"]]
    (fk,) = inspector.get_foreign_keys("book")
    assert (fk["constrained_columns"], fk["referred_table"], fk["referred_columns"]) == (
        ["author_id"], "author", ["id"],
    )
    include = {"postgresql_include": []}
    assert inspector.get_indexes("book") == [
        {"name": "book_title", "unique": False, "column_names": ["title"],
         "dialect_options": include},
    ]
    assert inspector.get_indexes("author") == [
        {"name": "author_name_key", "unique": True, "column_names": ["name"],
         "duplicates_constraint": "author_name_key", "dialect_options": include},
    ]


def test_orm_loads_queries_and_writes(engine):
    with Session(engine) as session:
        ada = Author(name="ada")
        bob = Author(name="bob")
        ada.books = [
            Book(title="notes", pages=10, meta={"tags": ["math"], "year": 1843}),
            Book(title="letters", pages=None, meta={"tags": []}),
        ]
        bob.books = [Book(title="recipes", pages=200, meta={"tags": ["food", "math"]})]
        session.add_all([ada, bob])
        session.commit()
        ada_id = ada.id

    with Session(engine) as session:
        author = session.get(Author, ada_id)
        assert [b.title for b in author.books] == ["notes", "letters"]  # lazy load
        assert author.joined.tzinfo is not None
        assert author.joined <= datetime.now(timezone.utc)

        eager = session.scalars(
            select(Author).options(selectinload(Author.books)).order_by(Author.name)
        ).all()
        assert [(a.name, len(a.books)) for a in eager] == [("ada", 2), ("bob", 1)]
        joined = session.scalars(
            select(Book).options(joinedload(Book.author)).order_by(Book.id)
        ).all()
        assert [(b.title, b.author.name) for b in joined] == [
            ("notes", "ada"), ("letters", "ada"), ("recipes", "bob"),
        ]

        math = session.scalars(
            select(Book.title).where(Book.meta.contains({"tags": ["math"]})).order_by(Book.title)
        ).all()
        assert math == ["notes", "recipes"]
        year = session.scalar(select(Book.meta["year"].as_integer()).where(Book.title == "notes"))
        assert year == 1843

        per_author = (
            select(Book.author_id, func.count().label("n")).group_by(Book.author_id).cte("per_author")
        )
        counts = session.execute(
            select(Author.name, per_author.c.n)
            .join(per_author, per_author.c.author_id == Author.id)
            .order_by(Author.name)
        ).all()
        assert counts == [("ada", 2), ("bob", 1)]

        ranked = session.execute(
            select(
                Book.title,
                func.row_number()
                .over(partition_by=Book.author_id, order_by=Book.title)
                .label("rank"),
            ).order_by(Book.title)
        ).all()
        assert ranked == [("letters", 1), ("notes", 2), ("recipes", 1)]

        session.execute(
            insert(Book),
            [
                {"author_id": ada_id, "title": f"bulk {i}", "pages": i, "meta": {"i": i}}
                for i in range(50)
            ],
        )
        upsert = pg_insert(Book).values(id=1, author_id=ada_id, title="notes, 2nd", meta={})
        upsert = upsert.on_conflict_do_update(
            index_elements=[Book.id], set_={"title": upsert.excluded.title}
        )
        session.execute(upsert)
        session.commit()

        assert session.scalar(select(func.count()).select_from(Book)) == 53
        assert session.scalar(select(Book.title).where(Book.id == 1)) == "notes, 2nd"
        assert session.scalar(select(func.sum(Book.pages)).where(Book.title.like("bulk%"))) == 1225


class Level(enum.Enum):
    low = "low"
    medium = "medium"
    high = "high"


class EnumBase(DeclarativeBase):
    pass


class Ticket(EnumBase):
    __tablename__ = "ticket"
    id: Mapped[int] = mapped_column(primary_key=True)
    level: Mapped[Level] = mapped_column(SqlEnum(Level, name="ticket_level"))


def test_enum_columns_create_their_type_and_order_by_declaration(engine):
    EnumBase.metadata.create_all(engine)
    try:
        (level,) = [c for c in inspect(engine).get_columns("ticket") if c["name"] == "level"]
        assert level["type"].name == "ticket_level"
        assert list(level["type"].enums) == ["low", "medium", "high"]
        with Session(engine) as session:
            session.add_all(
                [Ticket(id=i, level=lv) for i, lv in enumerate([Level.high, Level.low, Level.medium])]
            )
            session.commit()
            ordered = session.scalars(select(Ticket.level).order_by(Ticket.level)).all()
            assert ordered == [Level.low, Level.medium, Level.high]
            above = session.scalars(select(Ticket.id).where(Ticket.level > Level.low).order_by(Ticket.id))
            assert above.all() == [0, 2]
    finally:
        EnumBase.metadata.drop_all(engine)
    with engine.connect() as connection:
        assert connection.exec_driver_sql(
            "SELECT count(*) FROM pg_type WHERE typname = 'ticket_level'"
        ).scalar() == 0
