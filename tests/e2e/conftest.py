"""Browser fixtures for the end-to-end tests: Debian's Chromium driven by Playwright.

``playwright install`` cannot download browsers here, so the tests launch the system
Chromium (``apt-get install chromium``; ``scripts/system_deps.sh``, which ``make test``
runs, installs it). Without it the tests fail with a message saying so: they are part of
the normal suite and are never skipped.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",  # root in containers and CI
    "--disable-gpu",
    "--disable-background-networking",  # nothing outside the test is reached
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]
TIMEOUT_MS = 15_000
FINAL_SCREENSHOT = Path("/tmp/e2e-final.png")  # noqa: S108 - for humans, after every run

# Marks when the page was last busy: typing, a change, an htmx request or swap. Installed
# in every page before its own scripts run.
HTMX_WATCH = """
window.__e2eBusyAt = Date.now();
const busy = () => { window.__e2eBusyAt = Date.now(); };
for (const name of ['input', 'change', 'htmx:beforeRequest', 'htmx:afterRequest',
                    'htmx:afterSwap', 'htmx:afterSettle']) {
  document.addEventListener(name, busy, true);
}
"""

_REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    """Keep each phase's report on the item, so fixtures know whether the test failed."""
    report = yield
    item.stash.setdefault(_REPORTS, {})[report.when] = report
    return report


@pytest.fixture
def _orm_beside_playwright(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let the test use the ORM while Playwright runs.

    Playwright's sync API drives its own asyncio event loop in the test's thread (from a
    greenlet) and leaves it marked as running between calls; Django then sees "an async
    context" and refuses every query from the test with ``SynchronousOnlyOperation``.
    The test is plain synchronous code, so the check does not apply. Django reads the
    variable on every call: setting it for these tests only keeps the check on for the
    rest of the suite. (The live server answers the browser in threads of its own, with
    no event loop: unaffected.)
    """
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture
def browser(_orm_beside_playwright: None) -> Iterator[Any]:
    """Headless Debian Chromium; fails (never skips) when it or Playwright is missing."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(
            f"{CHROMIUM} is missing: the end-to-end tests need Debian's Chromium. Install it "
            "with `apt-get install chromium` (scripts/system_deps.sh, run by `make test`, "
            "does). `playwright install` cannot download browsers here.",
            pytrace=False,
        )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail(
            "Playwright is missing: `.venv/bin/pip install '.[dev]'` (make test does).",
            pytrace=False,
        )
    from django.db import connections

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield chromium
        finally:
            chromium.close()
            # While Playwright's loop is marked running, Django keeps the test's database
            # connections apart from the ones it has in plain sync code (asgiref's
            # Local), and its own teardown, which runs after this, never sees them: close
            # them here, or PostgreSQL refuses to drop the test database ("being accessed
            # by other users").
            connections.close_all()


@dataclass
class Pages:
    """Opens one browser context per user; remembers the server's 5xx answers."""

    browser: Any
    base_url: str
    opened: list[tuple[str, Any]] = field(default_factory=list)
    server_errors: list[str] = field(default_factory=list)
    #: What the browser refused under the Content-Security-Policy (each fails the test).
    csp_violations: list[str] = field(default_factory=list)

    def new(self, name: str) -> Any:
        context = self.browser.new_context(base_url=self.base_url, locale="en-US")
        context.set_default_timeout(TIMEOUT_MS)
        context.add_init_script(HTMX_WATCH)
        page = context.new_page()
        page.on("response", self._record_error)
        page.on("console", self._record_csp_violation)
        self.opened.append((name, page))
        return page

    def _record_error(self, response: Any) -> None:
        if response.status >= 500:
            self.server_errors.append(f"{response.status} {response.request.method} {response.url}")

    def _record_csp_violation(self, message: Any) -> None:
        if "Content Security Policy" in message.text:
            self.csp_violations.append(f"{message.location.get('url', '')}: {message.text}")

    def assert_no_server_errors(self) -> None:
        assert not self.server_errors, (
            f"The server answered with errors (traceback in the captured log): {self.server_errors}"
        )


@pytest.fixture
def pages(
    browser: Any, live_server: Any, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Pages]:
    """``pages.new("customer")``: a fresh context (cookies, session) on the live server.

    Afterwards the first page opened is saved to /tmp/e2e-final.png; on failure every
    open page is also saved, full length, in the test's tmp folder (the paths are
    printed with the failure).
    """
    opened = Pages(browser=browser, base_url=live_server.url)
    yield opened
    reports = request.node.stash.get(_REPORTS, {})
    failed = any(r.failed for r in reports.values())
    for position, (name, page) in enumerate(opened.opened):
        try:
            if position == 0:
                page.screenshot(path=str(FINAL_SCREENSHOT), full_page=True)
            if failed:
                path = tmp_path / f"{name}.png"
                page.screenshot(path=str(path), full_page=True)
                print(f"e2e: screenshot of the {name}'s page {page.url}: {path}")
        except Exception as exc:  # a screenshot must not hide the test's own failure
            print(f"e2e: no screenshot of the {name}'s page: {exc}")
        page.context.close()
    # Every page the test went through kept the Content-Security-Policy.
    assert not opened.csp_violations, "\n".join(opened.csp_violations)


@pytest.fixture
def settle_htmx() -> Callable[[Any], None]:
    """``settle_htmx(page)`` waits until htmx on the page is quiet: no request in flight,
    and nothing typed, changed, requested or swapped for a second. The configure form
    replaces itself on every change and debounces typing by 800 ms, so each field must
    be changed on the form the previous change brought."""

    def wait(page: Any) -> None:
        page.wait_for_function(
            "() => window.__e2eBusyAt !== undefined"
            " && !document.querySelector('.htmx-request')"
            " && Date.now() - window.__e2eBusyAt > 1000",
            polling=100,
        )

    return wait


@dataclass
class SentTask:
    name: str
    args: list[Any]
    kwargs: dict[str, Any]


IN_PLACE_TASKS = frozenset({"billing.tasks.document_render_estimate"})


@pytest.fixture
def celery_sent(monkeypatch: pytest.MonkeyPatch) -> list[SentTask]:
    """Tasks the live server enqueues (after commit), recorded instead of published
    (account emails are also run in place, as a worker would).

    The workers' side is tested in tests/integration; here nothing would consume the
    messages, which would stay in the shared Redis's real queues ("provisioning",
    "documents") for whatever worker connects next.
    """
    from celery.utils import uuid

    from portal.celery import app

    sent: list[SentTask] = []

    def send_task(
        name: str,
        args: Any = None,
        kwargs: Any = None,
        task_id: str | None = None,
        result_cls: Any = None,
        **options: Any,
    ) -> Any:
        sent.append(SentTask(name=name, args=list(args or ()), kwargs=dict(kwargs or {})))
        if name.startswith("accounts.tasks.") or name in IN_PLACE_TASKS:
            # Account emails and anonymous estimates: run them here as a worker would, so
            # the mail box and the estimate page have them.
            app.tasks[name].apply(args=args, kwargs=kwargs)
        return (result_cls or app.AsyncResult)(task_id or uuid())

    monkeypatch.setattr(app, "send_task", send_task)
    return sent
