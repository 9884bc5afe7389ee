"""Alembic (PyPI) migrations against a real `steady serve`, the way a project runs them: an
environment with transactional DDL (Alembic's default for PostgreSQL), migration scripts that
create tables, add columns with server defaults, add an index and rename a column; upgrade to
head, downgrade to base, and a migration that fails half-way, after it has added a column and
created a table, leaving the schema and `alembic_version` exactly as they were before it.

The reflected schema after the upgrade is what PostgreSQL 15 reflects after the same migrations
(checked against it when this module was written).
"""

import textwrap

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config

ENV = """
from alembic import context
from sqlalchemy import create_engine

engine = create_engine(context.config.get_main_option("sqlalchemy.url"))
with engine.connect() as connection:
    context.configure(connection=connection, target_metadata=None)
    with context.begin_transaction():
        context.run_migrations()
"""

MIGRATIONS = {
    "0001_tables": '''
        revision = "0001"
        down_revision = None

        def upgrade():
            op.create_table(
                "author",
                sa.Column("id", sa.Integer, primary_key=True),
                sa.Column("name", sa.String(100), nullable=False),
            )
            op.create_table(
                "book",
                sa.Column("id", sa.Integer, primary_key=True),
                sa.Column("title", sa.String(200), nullable=False),
                sa.Column("author_id", sa.Integer, sa.ForeignKey("author.id")),
            )

        def downgrade():
            op.drop_table("book")
            op.drop_table("author")
    ''',
    "0002_columns_and_index": '''
        revision = "0002"
        down_revision = "0001"

        def upgrade():
            op.add_column("book", sa.Column("pages", sa.Integer, server_default="0", nullable=False))
            op.add_column("author", sa.Column("active", sa.Boolean, server_default=sa.true()))
            op.create_index("ix_book_title", "book", ["title"])

        def downgrade():
            op.drop_index("ix_book_title", table_name="book")
            op.drop_column("author", "active")
            op.drop_column("book", "pages")
    ''',
    "0003_rename": '''
        revision = "0003"
        down_revision = "0002"

        def upgrade():
            op.alter_column("author", "name", new_column_name="full_name")

        def downgrade():
            op.alter_column("author", "full_name", new_column_name="name")
    ''',
}

FAILING = '''
    revision = "0004"
    down_revision = "0003"

    def upgrade():
        op.add_column("book", sa.Column("isbn", sa.String(13)))
        op.create_table("review", sa.Column("id", sa.Integer, primary_key=True))
        op.execute("UPDATE book SET pages = 1 / (pages - pages)")

    def downgrade():
        pass
'''


def url(dsn):
    parts = dict(part.split("=") for part in dsn.split())
    return (f"postgresql+psycopg://{parts['user']}@{parts['host']}:{parts['port']}"
            f"/{parts['dbname']}")


def write_migration(versions, name, body):
    header = "from alembic import op\nimport sqlalchemy as sa\n"
    (versions / f"{name}.py").write_text(header + textwrap.dedent(body))


@pytest.fixture
def alembic(server, tmp_path):
    versions = tmp_path / "versions"
    versions.mkdir()
    (tmp_path / "env.py").write_text(ENV)
    for name, body in MIGRATIONS.items():
        write_migration(versions, name, body)
    config = Config()
    config.set_main_option("script_location", str(tmp_path))
    config.set_main_option("sqlalchemy.url", url(server))
    engine = sa.create_engine(url(server))
    yield config, versions, engine
    command.downgrade(config, "base")
    engine.dispose()


def schema(engine):
    """Tables, their columns (name, type, nullable, default) and indexes, and the revision."""
    inspector = sa.inspect(engine)
    tables = {}
    for table in sorted(inspector.get_table_names()):
        columns = [(c["name"], str(c["type"]), c["nullable"], c["default"])
                   for c in inspector.get_columns(table)]
        indexes = sorted((i["name"], tuple(i["column_names"]))
                         for i in inspector.get_indexes(table))
        tables[table] = (columns, indexes)
    with engine.connect() as connection:
        revision = connection.execute(
            sa.text("SELECT version_num FROM alembic_version")).scalar()
    return tables, revision


def test_upgrade_and_downgrade(alembic):
    config, _, engine = alembic
    command.upgrade(config, "head")
    tables, revision = schema(engine)
    assert revision == "0003"
    assert tables["author"] == ([
        ("id", "INTEGER", False, "nextval('author_id_seq'::regclass)"),
        ("full_name", "VARCHAR(100)", False, None),
        ("active", "BOOLEAN", True, "true"),
    ], [])
    assert tables["book"] == ([
        ("id", "INTEGER", False, "nextval('book_id_seq'::regclass)"),
        ("title", "VARCHAR(200)", False, None),
        ("author_id", "INTEGER", True, None),
        ("pages", "INTEGER", False, "0"),
    ], [("ix_book_title", ("title",))])
    with engine.begin() as connection:
        connection.execute(sa.text("INSERT INTO author (full_name) VALUES ('Ann')"))
        connection.execute(sa.text(
            "INSERT INTO book (title, author_id) SELECT 'Notes', id FROM author"))
        row = connection.execute(sa.text(
            "SELECT a.full_name, a.active, b.pages FROM book b JOIN author a ON a.id = b.author_id"
        )).one()
    assert tuple(row) == ("Ann", True, 0)
    command.downgrade(config, "0001")
    tables, revision = schema(engine)
    assert revision == "0001"
    assert [c[0] for c in tables["author"][0]] == ["id", "name"]
    assert [c[0] for c in tables["book"][0]] == ["id", "title", "author_id"]
    assert tables["book"][1] == []


def test_a_failing_migration_leaves_the_schema_as_it_was(alembic):
    config, versions, engine = alembic
    command.upgrade(config, "head")
    with engine.begin() as connection:
        connection.execute(sa.text("INSERT INTO author (full_name) VALUES ('Ann')"))
        connection.execute(sa.text(
            "INSERT INTO book (title, author_id) SELECT 'Notes', id FROM author"))
    before = schema(engine)
    write_migration(versions, "0004_failing", FAILING)
    with pytest.raises(sa.exc.DataError, match="division by zero"):
        command.upgrade(config, "head")
    assert schema(engine) == before
    assert "review" not in before[0]
    with engine.connect() as connection:
        assert connection.execute(sa.text("SELECT count(*) FROM book")).scalar() == 1
