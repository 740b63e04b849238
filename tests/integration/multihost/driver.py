"""The load: customer journeys and visitors against the load balancer, in plain Python
(``http.client``, one keep-alive connection per client, like a browser or an SDK).

A journey is what an engineer with an API key does (README: the customer API): the
landing page, availability, a firm quote, an SSH key, accept, keys and terms on the order,
the bank transfer's details (the transfer itself is a line on the bank statement, which
the back office marks paid), then the order polled until it is ready, its access details
and its invoice PDF. A visitor reads the landing page and availability over and over.
Every request also times ``/healthz`` (the trivial view) through the same stack, the floor
of the ratios.

Each request carries an X-Request-ID (the load balancer logs it). A request that fails (no
answer, or a 5xx) is counted and sent again as a client would, a POST with the same
Idempotency-Key, so a journey goes on.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

SHENZHEN = ZoneInfo("Asia/Shanghai")
NODE_TYPE = "h100-8x-nvlink"


def ssh_public_key() -> str:
    key = Ed25519PrivateKey.generate().public_key()
    return key.public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    ).decode()


@dataclass
class Sample:
    page: str
    method: str
    status: int  # 0: no answer
    ms: float
    request_id: str
    at: float  # time.time() when sent
    error: str = ""

    @property
    def failed(self) -> bool:
        return self.status == 0 or self.status >= 500


@dataclass
class Journey:
    index: int
    key: str
    nodes: int
    quote: str = ""
    order: str = ""  # set once the accept was answered: the order was accepted
    invoice: str = ""
    reference: str = ""
    status: str = ""
    delivered: bool = False
    pdf_bytes: int = 0
    error: str = ""


@dataclass
class Load:
    """Every sample of a run, thread-safe."""

    samples: list[Sample] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, sample: Sample) -> None:
        with self.lock:
            self.samples.append(sample)

    def failed(self) -> list[Sample]:
        with self.lock:
            return [s for s in self.samples if s.failed]


class Client:
    """One keep-alive connection to the load balancer, re-opened after an error."""

    def __init__(self, host: str, load: Load, *, key: str = "", timeout: float = 90.0) -> None:
        self.host, self.load, self.key, self.timeout = host, load, key, timeout
        self.conn: http.client.HTTPConnection | None = None

    def _once(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str]
    ) -> tuple[int, bytes]:
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, 80, timeout=self.timeout)
        self.conn.request(method, path, body=body, headers=headers)
        response = self.conn.getresponse()
        data = response.read()
        if response.getheader("Connection", "").lower() == "close":
            self.close()
        return response.status, data

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
        self.conn = None

    def call(
        self,
        page: str,
        method: str,
        path: str,
        payload: dict[str, Any] | None = None,
        *,
        ok: tuple[int, ...] = (200, 201),
        tries: int = 8,
    ) -> tuple[int, bytes]:
        """Send until answered below 500 (each failure recorded); a POST keeps its
        Idempotency-Key across tries. Raises when every try failed or the answer is not
        one of ``ok``."""
        headers = {"Host": self.host, "Accept": "application/json", "Accept-Language": "en"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        body = None
        if method == "POST":
            headers["Idempotency-Key"] = str(uuid.uuid4())
            headers["Content-Type"] = "application/json"
            body = json.dumps(payload or {}).encode()
        for attempt in range(tries):
            request_id = uuid.uuid4().hex
            headers["X-Request-ID"] = request_id
            sent, t0 = time.time(), time.perf_counter()
            try:
                status, data = self._once(method, path, body, headers)
                error = ""
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                status, data, error = 0, b"", f"{type(exc).__name__}: {exc}"
            sample = Sample(
                page, method, status, (time.perf_counter() - t0) * 1000, request_id, sent, error
            )
            self.load.add(sample)
            if not sample.failed:
                if status not in ok:
                    raise RuntimeError(f"{method} {path}: {status} {data[:500]!r}")
                return status, data
            time.sleep(min(0.25 * 2**attempt, 3))
        raise RuntimeError(f"{method} {path}: failed {tries} times, last {status} {error}")

    def json(
        self, page: str, method: str, path: str, payload: dict[str, Any] | None = None, **kw: Any
    ) -> Any:
        return json.loads(self.call(page, method, path, payload, **kw)[1])

    def floor(self) -> None:
        """The trivial view, timed under the same load."""
        self.call("healthz", "GET", "/healthz")


def start_date() -> date:
    return datetime.now(SHENZHEN).date() + timedelta(days=7)


def browse(client: Client) -> None:
    """What a visitor reads: the landing page and a week's availability."""
    client.call("catalog", "GET", "/en/", ok=(200,))
    client.floor()
    start = datetime.combine(start_date(), datetime.min.time(), SHENZHEN)
    query = urlencode(
        {
            "site": "SZ",
            "node_type": NODE_TYPE,
            "count": 1,
            "start": start.isoformat(),
            "end": (start + timedelta(days=7)).isoformat(),
        }
    )
    client.call("availability", "GET", f"/api/v1/availability/?{query}")
    client.floor()


def journey_order(
    journey: Journey, client: Client, *, on_accepted: Callable[[Journey], None] | None = None
) -> None:
    """The customer shops: from the landing page to an accepted order with its SSH keys
    and terms, and the bank transfer's details."""
    browse(client)
    config = {
        "site": "SZ",
        "node_type": NODE_TYPE,
        "node_count": journey.nodes,
        "term": "month",
        "duration": 1,
        "start_date": start_date().isoformat(),
    }
    quote = client.json("quote_create", "POST", "/api/v1/quotes/", config)
    journey.quote = quote["number"]
    client.floor()
    key = client.json(
        "ssh_key_add",
        "POST",
        "/api/v1/ssh-keys/",
        {"name": f"journey-{journey.index}", "public_key": ssh_public_key()},
    )
    order = client.json(
        "quote_accept",
        "POST",
        f"/api/v1/quotes/{journey.quote}/accept/",
        {"name": f"Engineer {journey.index}"},
    )
    journey.order = order["number"]
    if on_accepted:
        on_accepted(journey)
    client.floor()
    base = f"/api/v1/orders/{journey.order}"
    client.json("order_keys", "POST", f"{base}/ssh-keys/", {"ssh_key_ids": [key["id"]]})
    client.json("order_terms", "POST", f"{base}/terms/", {"name": f"Engineer {journey.index}"})
    transfer = client.json("bank_transfer", "GET", f"{base}/bank-transfer/")
    journey.invoice = transfer["invoice"]
    journey.reference = transfer["reference"]
    client.floor()


def journey_pay(
    journey: Journey,
    client: Client,
    *,
    statement: Path,
    statement_lock: threading.Lock,
    delivered_timeout: float,
) -> None:
    """The customer pays by bank transfer (a line on the bank statement, which the back
    office marks paid), waits for the order to be ready, reads its access details and
    downloads the invoice."""
    with statement_lock, statement.open("a") as bank:
        bank.write(f"{journey.invoice} {journey.reference}\n")
    base = f"/api/v1/orders/{journey.order}"
    deadline = time.monotonic() + delivered_timeout
    while True:
        detail = client.json("order_detail", "GET", f"{base}/")
        journey.status = detail["status"]
        if journey.status == "ready":
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"order {journey.order} still {journey.status}")
        time.sleep(1.0)
        client.floor()
    journey.delivered = True
    client.json("order_access", "GET", f"{base}/access/")
    deadline = time.monotonic() + 60
    while True:  # rendered by the documents queue: 202 until it is there
        status, data = client.call(
            "invoice_pdf", "GET", f"/api/v1/invoices/{journey.invoice}/pdf/", ok=(200, 202)
        )
        if status == 200 and data.startswith(b"%PDF"):
            journey.pdf_bytes = len(data)
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"invoice {journey.invoice} PDF: {status}")
        time.sleep(1.0)
    client.floor()


class Driver:
    """Journeys (``concurrency`` at a time) and visitors, in threads, until stopped."""

    def __init__(
        self,
        lb_host: str,
        keys: list[str],
        visitor_keys: list[str],
        *,
        statement: Path,
        nodes: Callable[[int], int],
        concurrency: int,
        delivered_timeout: float,
    ) -> None:
        self.load = Load()
        self.lb_host = lb_host
        self.journeys = [Journey(i, k, nodes(i)) for i, k in enumerate(keys)]
        self.visitor_keys = visitor_keys
        self.statement, self.statement_lock = statement, threading.Lock()
        self.concurrency = concurrency
        self.delivered_timeout = delivered_timeout
        self.accepted = threading.Event()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._finished = threading.Event()

    def _each(self, step: Callable[[Journey, Client], None], journeys: list[Journey]) -> None:
        """``step`` for each journey, ``concurrency`` at a time."""
        queue = list(journeys)
        lock = threading.Lock()

        def loop() -> None:
            while True:
                with lock:
                    if not queue:
                        return
                    journey = queue.pop(0)
                if journey.error:
                    continue
                client = Client(self.lb_host, self.load, key=journey.key)
                try:
                    step(journey, client)
                except Exception as error:
                    journey.error = f"{type(error).__name__}: {error}"
                finally:
                    client.close()

        threads = [threading.Thread(target=loop, daemon=True) for _ in range(self.concurrency)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def _journeys(self) -> None:
        """Every customer shops first, then every one pays and waits for delivery (the
        back office raises the lead time when the first transfer arrives: see ops.py)."""
        self._each(
            lambda j, c: journey_order(j, c, on_accepted=lambda _j: self.accepted.set()),
            self.journeys,
        )
        self._each(
            lambda j, c: journey_pay(
                j,
                c,
                statement=self.statement,
                statement_lock=self.statement_lock,
                delivered_timeout=self.delivered_timeout,
            ),
            self.journeys,
        )
        self._finished.set()

    def _visitor_loop(self, key: str) -> None:
        client = Client(self.lb_host, self.load, key=key)
        while not self._stop.is_set():
            try:
                browse(client)
            except Exception:  # recorded as samples; a visitor just goes on
                time.sleep(0.5)
            self._stop.wait(0.3)  # a reader, not a flood (the API's rate limit per key)
        client.close()

    def start(self) -> Driver:
        self._threads.append(threading.Thread(target=self._journeys, daemon=True))
        for key in self.visitor_keys:
            self._threads.append(
                threading.Thread(target=self._visitor_loop, args=(key,), daemon=True)
            )
        for thread in self._threads:
            thread.start()
        return self

    def journeys_done(self) -> bool:
        return self._finished.is_set()

    def stop(self, timeout: float) -> None:
        self._stop.set()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.1, deadline - time.monotonic()))
