"""The suite's shared fixtures: the demo data (seeded once, not per test), the language,
eager Celery, media and payment settings.

The demo data (``seed_demo``, what ``make run`` shows) is written once into an outer
transaction that stays open while the tests that ask for ``demo`` run: each of them runs
in a savepoint inside it, rolled back after the test, as Django's
``TestCase.setUpTestData`` does for one class. A test that does not ask for the demo data
closes that transaction first (rolled back: it sees an empty database); so that this
happens rarely, the tests asking for ``demo`` run first (``pytest_collection_modifyitems``
below). Tests on a transactional database (``transactional_db``, ``live_server``,
``django_db(transaction=True)``: real workers, browsers, races) commit what they write and
are flushed afterwards: for them ``demo`` runs ``seed_demo`` itself, committed.

``make test`` runs the suite with pytest-xdist on fresh test databases. Locally, keep the
test databases between runs (migrations only when they changed: ``--create-db`` rebuilds):
``.venv/bin/pytest -n 2 --reuse-db`` (or a file, ``-x -q --reuse-db tests/billing``).
"""

from __future__ import annotations

import copy
import importlib
import io
from collections.abc import Iterator
from typing import Any

import pytest
from django.apps import apps as django_apps
from django.core.management import call_command
from django.db import connection, transaction
from django.db.models.signals import post_migrate
from pytest_django.fixtures import validate_django_db

from tests import factories

#: Fixtures that make pytest-django run the test on a transactional database.
TRANSACTIONAL_FIXTURES = frozenset(
    {
        "transactional_db",
        "live_server",
        "django_db_reset_sequences",
        "django_db_serialized_rollback",
    }
)


def runs_in_a_transaction_of_its_own(item: pytest.Item | pytest.FixtureRequest) -> bool:
    """Whether pytest-django wraps the test in a transaction it rolls back (``db``), as
    opposed to a transactional database that is flushed after the test."""
    node = item.node if isinstance(item, pytest.FixtureRequest) else item
    names = set(getattr(item, "fixturenames", ()))
    marker = node.get_closest_marker("django_db")
    if marker is not None:
        transactional, reset_sequences, _dbs, serialized, _apps = validate_django_db(marker)
        if transactional or reset_sequences or serialized:
            return False
    return not names & TRANSACTIONAL_FIXTURES


def wants_seeded_demo(item: pytest.Item | pytest.FixtureRequest) -> bool:
    return "demo" in getattr(item, "fixturenames", ()) and runs_in_a_transaction_of_its_own(item)


class SeededDemo:
    """``seed_demo``'s rows in an outer transaction kept open across tests (see the module
    docstring), and the objects ``demo`` hands out, read once per seeding."""

    def __init__(self, blocker: Any) -> None:
        self._blocker = blocker
        self._atomic: Any = None
        self._objects: dict[str, Any] | None = None
        self.seedings = 0

    @property
    def active(self) -> bool:
        """The outer transaction is still the connection's outermost atomic block (a test
        that closed the connection, or anything else, leaves it inactive)."""
        return (
            self._atomic is not None
            and connection.in_atomic_block
            and bool(connection.atomic_blocks)
            and connection.atomic_blocks[0] is self._atomic
        )

    def enter(self) -> None:
        if self.active:
            return
        self._atomic = self._objects = None
        with self._blocker.unblock():
            atomic = transaction.atomic()
            atomic._from_testcase = True  # durable=True blocks inside are allowed, as in TestCase
            atomic.__enter__()
            self._atomic = atomic
            call_command("seed_demo", stdout=io.StringIO())
            # Its after-commit work never runs (as when a test seeded inside its own
            # transaction); nothing of it is left for the tests to capture.
            connection.run_on_commit = []
            self._objects = factories.demo_objects()
        self.seedings += 1

    def leave(self) -> None:
        if self.active:
            with self._blocker.unblock():
                transaction.set_rollback(True)
                self._atomic.__exit__(None, None, None)
        self._atomic = self._objects = None

    def objects(self) -> dict[str, Any]:
        """A copy for one test (it may change the instances in memory freely)."""
        assert self._objects is not None
        return copy.deepcopy(self._objects)


def _migrated_data_back(sender: Any, **kwargs: Any) -> None:
    """After a flush (a transactional test's teardown), put back what the data migrations
    wrote, so the next test sees a database as ``migrate`` leaves it: the standard dunning
    policy (``billing``'s squashed migration). The validation rules come back by their own
    ``post_migrate`` hook (``provisioning/apps.py``)."""
    if sender.label == "billing":
        migration = importlib.import_module("billing.migrations.0001_squashed_2026_12")
        migration.seed_dunning_policy(django_apps, None)


def _sql_flush_by_deleting_rows(original: Any) -> Any:
    """PostgreSQL's ``sql_flush`` for the suite: the rows deleted (``DELETE FROM`` each
    table, its foreign keys checked at the commit, when every row is gone) instead of one
    ``TRUNCATE`` of every table. What a transactional test leaves is the same (empty
    tables, the sequences where they were: Django's flush does not restart them either),
    but TRUNCATE makes new files for each of the ~120 tables and their indexes, whether
    they held rows or not: 3 to 6 s a flush on a busy machine against under 1 s for the
    DELETEs (a dozen tables hold a few rows each), after every transactional test.
    Resetting the sequences (``reset_sequences``) keeps Django's own statement."""

    def sql_flush(
        self: Any,
        style: Any,
        tables: list[str],
        *,
        reset_sequences: bool = False,
        allow_cascade: bool = False,
    ) -> list[str]:
        if not tables or reset_sequences:
            return original(
                self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
            )
        # Django creates every foreign key DEFERRABLE INITIALLY DEFERRED; said again so
        # that the order of the tables cannot matter.
        return [
            "SET CONSTRAINTS ALL DEFERRED",
            *(f"DELETE FROM {self.quote_name(table)}" for table in tables),  # noqa: S608
        ]

    return sql_flush


@pytest.fixture(autouse=True, scope="session")
def _flush_deletes_rows() -> Iterator[None]:
    from django.db.backends.postgresql.operations import DatabaseOperations

    original = DatabaseOperations.sql_flush
    DatabaseOperations.sql_flush = _sql_flush_by_deleting_rows(original)  # type: ignore[method-assign]
    yield
    DatabaseOperations.sql_flush = original  # type: ignore[method-assign]


@pytest.fixture(autouse=True, scope="session")
def _data_migrations_survive_flushes() -> Iterator[None]:
    post_migrate.connect(_migrated_data_back, dispatch_uid="tests-migrated-data-back")
    yield
    post_migrate.disconnect(dispatch_uid="tests-migrated-data-back")


@pytest.fixture(scope="session")
def seeded_demo(django_db_setup: None, django_db_blocker: Any) -> Iterator[SeededDemo]:
    seeded = SeededDemo(django_db_blocker)
    yield seeded
    seeded.leave()


@pytest.fixture
def _demo_outer_transaction(request: pytest.FixtureRequest, seeded_demo: SeededDemo) -> None:
    """Before pytest-django opens the test's own transaction: the seeded outer one for a
    test that asks for ``demo``, none (an empty database) for any other."""
    if wants_seeded_demo(request):
        seeded_demo.enter()
    else:
        seeded_demo.leave()


@pytest.fixture
def _django_db_helper(_demo_outer_transaction: None, _django_db_helper: None) -> None:
    """pytest-django's database set-up for a test (behind ``db``, ``transactional_db`` and
    the ``django_db`` mark), after the demo's outer transaction is settled."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests that use the seeded demo data first (otherwise in their order), so that
    the data is seeded about once per test process."""
    items.sort(key=lambda item: not wants_seeded_demo(item))


@pytest.fixture
def media(settings, tmp_path):
    """Stored documents go to a folder of this test's own."""
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def demo(request: pytest.FixtureRequest, db: None, media, seeded_demo: SeededDemo) -> dict:
    """The demo data of ``make run`` (``seed_demo``), by short name: sites ``sz``/``hk``,
    node types ``h100``/``a100``/``e5``, users ``sales``/``manager``/``admin``/``customer``,
    the customer organisation ``org``, a start date a week ahead and more
    (``factories.demo_objects``)."""
    if seeded_demo.active:
        objects = seeded_demo.objects()
        objects["start"] = factories.demo_start(objects["sz"])
        return objects
    # A transactional database (or ``demo`` asked for late, by getfixturevalue).
    call_command("seed_demo", stdout=io.StringIO())
    return factories.demo_objects()


@pytest.fixture
def demo_sz(demo: dict):
    """The demo data's Shenzhen site."""
    return demo["sz"]


@pytest.fixture(autouse=True)
def english() -> Iterator[None]:
    """Services raise messages in the active language; tests read them in English.
    (Requests still pick their language from the URL, as in production.)"""
    from django.utils import translation

    with translation.override("en"):
        yield


@pytest.fixture
def eager_celery() -> Iterator[None]:
    """Tasks run in place, at once (``task_always_eager``)."""
    from portal.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = before


@pytest.fixture
def online_payments(settings):
    """Stripe keys are set (offline values): card, Alipay and WeChat Pay are offered."""
    settings.STRIPE_SECRET_KEY = "sk_test_offline"
    settings.STRIPE_PUBLISHABLE_KEY = "pk_test_offline"
    settings.STRIPE_PAYMENT_METHODS = ["card", "alipay", "wechat_pay"]
    return settings


@pytest.fixture
def sz(db):
    return factories.site("SZ")


@pytest.fixture
def h100(db):
    return factories.node_type("h100-8x")


@pytest.fixture(autouse=True)
def _shop_data_from_the_database():
    """Each test reads the shop's sites and price books from its own data: the memo of
    ``billing.pricing.shop_data`` outlives the rolled-back transaction of the test before."""
    from billing.pricing import shop_data
    from inventory import availability_generation

    shop_data.forget()
    availability_generation.forget()  # and no instant quote kept by the test before


@pytest.fixture(autouse=True, scope="session")
def _empty_task_queues_at_the_end():
    """Tests that run on-commit callbacks without an eager Celery leave task messages in
    the suite's Redis database, where no worker consumes them: drop them at the end."""
    yield
    import redis
    from django.conf import settings

    from core import queues

    if settings.CELERY_BROKER_URL.startswith("redis://"):
        client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
        client.delete(*queues.ALL)
        client.close()
