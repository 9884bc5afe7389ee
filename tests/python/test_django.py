"""Django's ORM (PostgreSQL backend, psycopg 3) against a real `steady serve`: `migrate` of
django.contrib.auth and contenttypes, then a small app's tables (`django_shop`), and the model
operations applications use: create, filter, annotate, aggregate, select_related, update,
delete, bulk_create, F expressions, get_or_create, iterator() (server-side cursors) and
transactions (atomic blocks roll back).
"""

from datetime import date, datetime, timezone
from decimal import Decimal

import django
import pytest
from django.conf import settings


@pytest.fixture(scope="module")
def shop(server):
    params = dict(part.split("=") for part in server.split())
    settings.configure(
        DATABASES={
            "default": {
                "ENGINE": "django.db.backends.postgresql",
                "NAME": params["dbname"],
                "USER": params["user"],
                "HOST": params["host"],
                "PORT": params["port"],
                "OPTIONS": {"sslmode": "disable"},
            }
        },
        INSTALLED_APPS=["django.contrib.auth", "django.contrib.contenttypes", "django_shop"],
        USE_TZ=True,
        DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
    )
    django.setup()
    from django.core.management import call_command

    call_command("migrate", run_syncdb=True, verbosity=0)
    from django_shop import models

    return models


def test_migrations_and_auth(shop):
    from django.contrib.auth.models import Group, Permission, User
    from django.db import connection

    tables = set(connection.introspection.table_names())
    assert {"auth_user", "auth_group", "django_content_type", "django_shop_book"} <= tables
    assert Permission.objects.filter(codename="add_book").exists()
    user = User.objects.create_user("ada", "ada@example.com", "secret")
    group = Group.objects.create(name="editors")
    user.groups.add(group)
    assert User.objects.get(username="ada").check_password("secret")
    assert list(User.objects.filter(groups__name="editors").values_list("username", flat=True)) == [
        "ada"
    ]


def test_models_query_and_write(shop):
    from django.db import transaction
    from django.db.models import Avg, Count, F, Q, Sum

    Author, Book = shop.Author, shop.Book
    le_guin = Author.objects.create(name="Le Guin", born=date(1929, 10, 21))
    herbert = Author.objects.create(name="Herbert")
    when = datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    Book.objects.bulk_create(
        [
            Book(author=le_guin, title="The Dispossessed", price=Decimal("12.50"), published=when, pages=387),
            Book(author=le_guin, title="The Lathe of Heaven", price=Decimal("9.99"), published=when, pages=184),
            Book(author=herbert, title="Dune", price=Decimal("15.00"), published=when, pages=412),
        ]
    )
    assert Book.objects.count() == 3
    titles = Book.objects.filter(title__icontains="the", pages__gte=200).values_list("title", flat=True)
    assert list(titles) == ["The Dispossessed"]
    counts = dict(Author.objects.annotate(n=Count("books")).values_list("name", "n"))
    assert counts == {"Le Guin": 2, "Herbert": 1}
    totals = Book.objects.aggregate(total=Sum("price"), mean=Avg("pages"))
    assert totals["total"] == Decimal("37.49")
    assert float(totals["mean"]) == pytest.approx(983 / 3)
    book = Book.objects.select_related("author").get(title="Dune")
    assert book.author.name == "Herbert" and book.published == when
    assert Book.objects.filter(Q(author__name="Herbert") | Q(pages__lt=200)).count() == 2
    Book.objects.filter(author=le_guin).update(price=F("price") + 1)
    assert Book.objects.get(title="The Lathe of Heaven").price == Decimal("10.99")
    author, created = Author.objects.get_or_create(name="Herbert")
    assert not created and author.pk == herbert.pk

    with pytest.raises(RuntimeError):
        with transaction.atomic():
            Book.objects.filter(title="Dune").delete()
            raise RuntimeError("roll it back")
    assert Book.objects.filter(title="Dune").exists()
    with transaction.atomic():
        Book.objects.create(author=herbert, title="Children of Dune", price=Decimal("8"), published=when)
        with pytest.raises(RuntimeError), transaction.atomic():
            Book.objects.create(author=herbert, title="God Emperor", price=Decimal("9"), published=when)
            raise RuntimeError("the savepoint goes")
    assert sorted(herbert.books.values_list("title", flat=True)) == ["Children of Dune", "Dune"]
    # iterator() reads through a server-side cursor (DECLARE ... WITH HOLD in autocommit,
    # FETCH chunk by chunk), inside a transaction too.
    streamed = [b.title for b in Book.objects.order_by("title").iterator(chunk_size=1)]
    assert streamed == sorted(Book.objects.values_list("title", flat=True))
    with transaction.atomic():
        pages = list(Book.objects.order_by("pk").values_list("pages", flat=True).iterator(chunk_size=2))
    assert len(pages) == Book.objects.count()
    herbert.delete()
    assert Book.objects.count() == 2
