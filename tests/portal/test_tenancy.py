"""Tenancy: every URL that shows an organisation's object answers 404 to a member of
another organisation.

The walk discovers the routes from ``django.urls.get_resolver()``: every named route that
takes a parameter must either be listed in ``ORG_ROUTES`` (how to fill it with
organisation A's objects, and what a stranger gets), live in the admin (staff only), or
be on ``NOT_ORG_SCOPED`` with the reason. A new parameterised route that is none of these
fails ``test_every_parameterised_route_is_walked_or_allowed``, so whoever adds it decides
how it is scoped and the walk covers it from then on.

A is the demo organisation with an accepted order (awaiting payment), its invoice, a sent
quote, a member and an open invitation; B is a second organisation whose owner walks A's
URLs in both languages, with GET and POST. A's owner then opens the same URLs, so the
404s are not vacuous.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.apps import apps
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone, translation

from accounts import api_keys, webhooks
from accounts.models import Invitation, MemberRole, Membership, Organisation
from billing.credits import services as credit_services
from billing.models import CreditNote, Invoice, Order, Quote
from billing.orders import acceptance
from billing.quotes import services as qs
from inventory.models import NodeType, Site
from portal.support import services as support_services
from provisioning.models import ValidationRun, ValidationRunStatus

pytestmark = pytest.mark.django_db

User = get_user_model()
LANGUAGES = [code for code, _name in settings.LANGUAGES]

# --- The routes -------------------------------------------------------------------------

# Parameterised routes that do not show an organisation's object, and why.
NOT_ORG_SCOPED: dict[str, str] = {
    "dashboard_acceptance_raw": (
        "one node's raw outputs of a run: the run is looked up among the member's own "
        "orders exactly as dashboard_acceptance_report (walked here) before any node; the "
        "walk's run has no node results, so A's owner would get 404 too"
    ),
    "accounts:verify": "a signed, expiring token for the user's own email address",
    "accounts:invitation": (
        "an invitation's unguessable token; its own rules (open, for the invited address) "
        "are tested in tests/portal/test_accounts.py"
    ),
    "accounts:password_reset_confirm": "Django's password-reset token for one user",
    "estimate_status": (
        "an anonymous estimate's key (a SHA-256): a configuration and prices, no "
        "organisation, customer or holds in it"
    ),
    "estimate_pdf": "the same anonymous estimate's PDF: no organisation's data in it",
    "status_site": (
        "a site's public status page: components and incidents, no customer, order or "
        "node named (tests/portal/test_support.py)"
    ),
    "maintenance_feed": (
        "an organisation's maintenance calendar at a signed address (the signature is "
        "the organisation's own; tests/portal/test_operations_maintenance.py shows another "
        "organisation's address holding none of its windows and a forged one a 404)"
    ),
    "telemetry_simulated_metrics": (
        "Prometheus' scrape of a simulated node's exporter, behind the telemetry bearer "
        "token (tests/provisioning/test_telemetry.py): hardware series, no organisation"
    ),
}

# Which of organisation A's objects fill a route's parameters.
Kwargs = dict[str, Any]


@dataclass
class World:
    org_a: Organisation
    org_b: Organisation
    owner_a: Any
    owner_b: Any
    sales: Any
    order: Order
    invoice: Invoice
    quote_accepted: Quote
    quote_open: Quote
    membership: Membership
    invitation: Invitation
    acceptance_run: ValidationRun
    credit_note: CreditNote
    api_key_id: int
    webhook_endpoint_id: int
    webhook_endpoint_to_delete_id: int
    webhook_delivery_id: int
    ticket_id: int


FILLERS: dict[str, Callable[[World], list[Kwargs]]] = {
    "order": lambda w: [{"number": w.order.number}],
    "invoice": lambda w: [{"number": w.invoice.number}],
    "credit_note": lambda w: [{"number": w.credit_note.number}],
    "quote_token": lambda w: [{"token": w.quote_open.token}, {"token": w.quote_accepted.token}],
    "quote_pk": lambda w: [{"pk": w.quote_open.pk}, {"pk": w.quote_accepted.pk}],
    "membership_pk": lambda w: [{"pk": w.membership.pk}],
    "invitation_pk": lambda w: [{"pk": w.invitation.pk}],
    # Staff pages refuse non-staff before any lookup: any ids do.
    "run": lambda w: [{"run_id": 1}],
    "run_step": lambda w: [{"run_id": 1, "step_id": 1}],
    "run_node": lambda w: [{"run_id": 1, "node_id": 1}],
    "maintenance_plan": lambda w: [{"plan_id": 1}],
    "order_metric": lambda w: [{"number": w.order.number, "metric": "sm"}],
    "order_export": lambda w: [
        {"number": w.order.number, "fmt": "csv"},
        {"number": w.order.number, "fmt": "json"},
    ],
    "order_incident": lambda w: [{"number": w.order.number, "incident_id": 1}],
    "acceptance_run": lambda w: [{"number": w.order.number, "run_id": w.acceptance_run.pk}],
    "api_key": lambda w: [{"key_id": w.api_key_id}],
    "webhook_endpoint": lambda w: [{"endpoint_id": w.webhook_endpoint_id}],
    "webhook_endpoint_to_delete": lambda w: [{"endpoint_id": w.webhook_endpoint_to_delete_id}],
    "webhook_delivery": lambda w: [{"delivery_id": w.webhook_delivery_id}],
    "ticket": lambda w: [{"ticket_id": w.ticket_id}],
    # Support's staff pages refuse customers before any lookup: any ids do.
    "staff_ticket": lambda w: [{"ticket_id": w.ticket_id}],
    "staff_incident": lambda w: [{"incident_id": 1}],
}

NOT_FOUND = frozenset({404})
# Routes whose POST removes the object they name.
DELETIONS = frozenset({"dashboard_webhook_delete"})
# The sales pages refuse customers outright (403) before looking anything up.
STAFF_ONLY = frozenset({403, 404})

# Route → (which object fills it, what a member of another organisation gets).
ORG_ROUTES: dict[str, tuple[str, frozenset[int]]] = {
    # The quote's token pages (billing/orders/urls.py).
    "quote_public": ("quote_token", NOT_FOUND),
    "quote_public_pdf": ("quote_token", NOT_FOUND),
    "quote_public_accept": ("quote_token", NOT_FOUND),
    "quote_public_reject": ("quote_token", NOT_FOUND),
    # Paying an order (billing/payments/urls.py).
    "order_pay": ("order", NOT_FOUND),
    "order_pay_card": ("order", NOT_FOUND),
    "order_pay_return": ("order", NOT_FOUND),
    # The dashboard (portal/dashboard/urls.py).
    "dashboard_order": ("order", NOT_FOUND),
    "dashboard_quote_pdf": ("order", NOT_FOUND),
    "dashboard_invoice_pdf": ("invoice", NOT_FOUND),
    "dashboard_credit_note_pdf": ("credit_note", NOT_FOUND),
    "dashboard_order_usage": ("order", NOT_FOUND),
    "dashboard_order_progress": ("order", NOT_FOUND),
    "dashboard_order_access": ("order", NOT_FOUND),
    "dashboard_order_cancel": ("order", NOT_FOUND),
    # Provisioning runs (provisioning/urls.py, staff).
    "provisioning_run": ("run", STAFF_ONLY),
    "provisioning_step_retry": ("run_step", STAFF_ONLY),
    "provisioning_node_swap": ("run_node", STAFF_ONLY),
    "provisioning_run_cancel": ("run", STAFF_ONLY),
    # The operations console (staff).
    "operations:maintenance_detail": ("maintenance_plan", STAFF_ONLY),
    "operations:maintenance_cancel": ("maintenance_plan", STAFF_ONLY),
    "operations:maintenance_complete": ("maintenance_plan", STAFF_ONLY),
    "dashboard_acceptance_report": ("acceptance_run", NOT_FOUND),
    # API keys and webhooks of the organisation (owners' dashboard pages).
    "dashboard_api_key_revoke": ("api_key", NOT_FOUND),
    "dashboard_webhook_rotate": ("webhook_endpoint", NOT_FOUND),
    "dashboard_webhook_delete": ("webhook_endpoint_to_delete", NOT_FOUND),
    "dashboard_webhook_replay": ("webhook_delivery", NOT_FOUND),
    # The order's contract: read, download, one-time code, sign; standard terms.
    "dashboard_contract": ("order", NOT_FOUND),
    "dashboard_contract_pdf": ("order", NOT_FOUND),
    "dashboard_contract_code": ("order", NOT_FOUND),
    "dashboard_contract_sign": ("order", NOT_FOUND),
    "dashboard_order_terms": ("order", NOT_FOUND),
    # Dunning and renewals: the order's suspension and renewal pages.
    "dashboard_order_suspension": ("order", NOT_FOUND),
    "dashboard_order_renewal": ("order", NOT_FOUND),
    # Day two: the monitoring panel, its charts and exports, the replacement policy and
    # the approval of a replacement.
    "dashboard_order_monitoring": ("order", NOT_FOUND),
    "dashboard_order_monitoring_chart": ("order_metric", NOT_FOUND),
    "dashboard_order_monitoring_export": ("order_export", NOT_FOUND),
    "dashboard_order_replacement_policy": ("order", NOT_FOUND),
    "dashboard_order_incident_approve": ("order_incident", NOT_FOUND),
    # Members and invitations (portal/accounts/urls.py).
    "accounts:member_role": ("membership_pk", NOT_FOUND),
    "accounts:member_remove": ("membership_pk", NOT_FOUND),
    "accounts:invitation_revoke": ("invitation_pk", NOT_FOUND),
    # The sales pages (staff).
    "sales:quote_detail": ("quote_pk", STAFF_ONLY),
    "sales:quote_edit": ("quote_pk", STAFF_ONLY),
    "sales:quote_request_approval": ("quote_pk", STAFF_ONLY),
    "sales:quote_approve": ("quote_pk", STAFF_ONLY),
    "sales:quote_decline": ("quote_pk", STAFF_ONLY),
    "sales:quote_send": ("quote_pk", STAFF_ONLY),
    "sales:quote_revise": ("quote_pk", STAFF_ONLY),
    "sales:quote_pdf": ("quote_pk", STAFF_ONLY),
    # Support tickets (portal/support/urls.py): the customer's, and support's (staff).
    "support_ticket": ("ticket", NOT_FOUND),
    "support_ticket_reply": ("ticket", NOT_FOUND),
    "support_staff_ticket": ("staff_ticket", STAFF_ONLY),
    "support_staff_reply": ("staff_ticket", STAFF_ONLY),
    "support_staff_note": ("staff_ticket", STAFF_ONLY),
    "support_staff_assign": ("staff_ticket", STAFF_ONLY),
    "support_staff_priority": ("staff_ticket", STAFF_ONLY),
    "support_staff_resolve": ("staff_ticket", STAFF_ONLY),
    "support_staff_incident": ("staff_incident", STAFF_ONLY),
    "support_staff_incident_update": ("staff_incident", STAFF_ONLY),
}


@dataclass(frozen=True)
class Route:
    name: str  # with its namespace: "accounts:member_role"
    params: tuple[str, ...]
    regex: str  # the route's full pattern, for messages and admin's choices


def _walk(
    patterns: list[Any], prefix: str = "", namespace: str | None = None
) -> Iterator[tuple[str | None, str, tuple[str, ...]]]:
    for p in patterns:
        regex = prefix + p.pattern.regex.pattern.lstrip("^").rstrip("$").removesuffix(r"\Z")
        if isinstance(p, URLResolver):
            ns = namespace
            if p.namespace:
                ns = f"{namespace}:{p.namespace}" if namespace else p.namespace
            yield from _walk(p.url_patterns, regex, ns)
        elif isinstance(p, URLPattern):
            name = f"{namespace}:{p.name}" if namespace and p.name else p.name
            yield name, regex, tuple(re.compile(regex).groupindex)


def all_routes() -> list[Route]:
    return [
        Route(name=name or "", params=params, regex=regex)
        for name, regex, params in _walk(get_resolver().url_patterns)
    ]


def parameterised_routes() -> list[Route]:
    """Named routes with a parameter in their own path (the language prefix is not one)."""
    return [r for r in all_routes() if r.params and r.name]


def is_admin(route: Route) -> bool:
    return route.name.startswith("admin:")


# --- The world --------------------------------------------------------------------------


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.STRIPE_SECRET_KEY = ""  # card payments off: nothing reaches the network
    settings.STRIPE_PUBLISHABLE_KEY = ""
    return settings.MEDIA_ROOT


@pytest.fixture
def world(demo) -> World:
    site = Site.objects.get(code="SZ")
    h100 = NodeType.objects.get(code="h100-8x-nvlink")
    org_a = demo["org"]
    owner_a = User.objects.get(username="customer")
    sales = User.objects.get(username="sales")

    def sent_quote() -> Quote:
        quote = qs.quote_create(
            site=site,
            organisation=org_a,
            contact_name="Li Wei",
            contact_email="li.wei@example.com",
            term="month",
            duration=1,
            start_date=timezone.now().date() + timedelta(days=7),
            items=[qs.ItemSpec(kind="node", quantity=Decimal(1), node_type_id=h100.pk)],
            actor=sales,
            extra_discount=Decimal("0"),
        )
        return qs.quote_send(quote=quote, actor=sales)

    order = acceptance.quote_accept(
        quote=sent_quote(), user=owner_a, name="Li Wei", ip="203.0.113.9"
    )
    quote_open = sent_quote()
    invitation = Invitation.objects.create(
        organisation=org_a,
        email="new.hire@pearlriver.example",
        role=MemberRole.MEMBER,
        token="tenancy-walk-invitation-token",
        invited_by=owner_a,
        expires_at=timezone.now() + timedelta(days=7),
    )
    # B: another organisation with its own owner (a verified customer: no CustomerProfile).
    # A passed validation run of A's order, with its acceptance report to download.
    acceptance_run = ValidationRun.objects.create(
        order=order, profile="acceptance", status=ValidationRunStatus.PASSED
    )
    api_key = api_keys.api_key_create(
        organisation=org_a,
        actor=owner_a,
        name="tenancy walk",
        scopes={family: "write" for family in api_keys.API_FAMILIES},
    ).api_key
    endpoint = webhooks.endpoint_create(
        organisation=org_a,
        url="https://hooks.example.com/portal",
        event_types=["order.paid"],
        actor=owner_a,
    )
    to_delete = webhooks.endpoint_create(
        organisation=org_a,
        url="https://hooks.example.com/old",
        event_types=["invoice.issued"],
        actor=owner_a,
    )
    event = webhooks.emit_event(org_a, "order.paid", {"order": order.number})
    assert event is not None
    ticket = support_services.ticket_open(
        organisation=org_a,
        actor=owner_a,
        subject="Tenancy walk",
        body="A's ticket about A's order.",
        category="other",
        priority="normal",
        language="en",
        order=order,
    )
    org_b = Organisation.objects.create(name="Other Lab", legal_name="Other Lab Ltd.")
    owner_b = User.objects.create_user("eve", "eve@otherlab.example", "pw-eve-12345")
    Membership.objects.create(user=owner_b, organisation=org_b, role=MemberRole.OWNER)
    return World(
        org_a=org_a,
        org_b=org_b,
        owner_a=owner_a,
        owner_b=owner_b,
        sales=sales,
        order=order,
        invoice=order.invoices.get(),
        quote_accepted=order.quote,
        quote_open=quote_open,
        membership=Membership.objects.get(user=owner_a, organisation=org_a),
        invitation=invitation,
        acceptance_run=acceptance_run,
        api_key_id=api_key.pk,
        webhook_endpoint_id=endpoint.pk,
        webhook_endpoint_to_delete_id=to_delete.pk,
        webhook_delivery_id=event.deliveries.get().pk,
        ticket_id=ticket.pk,
        credit_note=credit_services.credit_note_issue(
            invoice=order.invoices.get(),
            lines=[
                credit_services.CreditLine(
                    description="Goodwill",
                    net=Decimal("1.00"),
                    vat_rate=Decimal("0.06"),
                    tax_category="it_service",
                )
            ],
            reason="Tenancy walk.",
            actor=sales,
        ),
    )


def build(name: str, kwargs: Kwargs, lang: str) -> str:
    with translation.override(lang):
        return reverse(name, kwargs=kwargs)


def org_urls(world: World) -> Iterator[tuple[str, str, frozenset[int]]]:
    """(route name, URL, what a stranger may get) for every walked route, both languages."""
    for route in parameterised_routes():
        if route.name not in ORG_ROUTES:
            continue
        kind, expected = ORG_ROUTES[route.name]
        for kwargs in FILLERS[kind](world):
            for lang in LANGUAGES:
                yield route.name, build(route.name, kwargs, lang), expected


def _admin_object_pk(model_label: str, world: World) -> Any:
    """The pk of one of A's objects of that model, or of any object, or 1."""
    app_label, _sep, model_name = model_label.partition("_")
    try:
        model = apps.get_model(app_label, model_name)
    except LookupError:
        return 1
    mine = {
        Order: world.order.pk,
        Invoice: world.invoice.pk,
        Quote: world.quote_open.pk,
        Organisation: world.org_a.pk,
        Membership: world.membership.pk,
        Invitation: world.invitation.pk,
        User: world.owner_a.pk,
    }
    if model in mine:
        return mine[model]
    first = model._default_manager.order_by("pk").values_list("pk", flat=True).first()
    return first if first is not None else 1


def admin_kwargs(route: Route, world: World) -> list[Kwargs]:
    """Admin routes filled programmatically: object ids of A's things where they exist."""
    if route.params == ("app_label",):
        choices = re.search(r"\(\?P<app_label>([^)]*)\)", route.regex)
        assert choices, route
        return [{"app_label": label} for label in choices[1].split("|")]
    if route.params == ("content_type_id", "object_id"):
        return [
            {
                "content_type_id": ContentType.objects.get_for_model(Order).pk,
                "object_id": world.order.pk,
            }
        ]
    if route.params == ("id",):  # auth_user_password_change
        return [{"id": world.owner_a.pk}]
    if route.params == ("object_id",):
        # admin:<app>_<model>_<action>; app labels have no underscore here.
        label = route.name.removeprefix("admin:").rsplit("_", 1)[0]
        return [{"object_id": _admin_object_pk(label, world)}]
    raise AssertionError(f"the walk cannot fill admin route {route.name} {route.params}")


# --- The tests --------------------------------------------------------------------------


def test_every_parameterised_route_is_walked_or_allowed():
    routes = parameterised_routes()
    names = {r.name for r in routes}
    unknown = sorted(
        f"{r.name} ({r.regex})"
        for r in routes
        if not is_admin(r) and r.name not in ORG_ROUTES and r.name not in NOT_ORG_SCOPED
    )
    assert not unknown, (
        "New parameterised routes: add each to ORG_ROUTES in tests/portal/test_tenancy.py "
        "(how to fill it with organisation A's objects and what a stranger gets), or to "
        "NOT_ORG_SCOPED with the reason it shows no organisation's object:\n  "
        + "\n  ".join(unknown)
    )
    stale = sorted((set(ORG_ROUTES) | set(NOT_ORG_SCOPED)) - names)
    assert not stale, f"Listed but no longer a parameterised route: {stale}"
    for kind, _expected in ORG_ROUTES.values():
        assert kind in FILLERS
    # Unnamed routes cannot be reversed, so the walk could not reach them: only the
    # admin's catch-all may have no name, and the API's routes, whose cross-organisation
    # walk (every object URL of the served schema, with another organisation's key) is
    # tests/portal/api/test_tenancy.py.
    unnamed = [r.regex for r in all_routes() if r.params and not r.name]
    assert all("admin/" in regex or regex.startswith("api/v1/") for regex in unnamed), unnamed
    # The issue's list is all here.
    for required in (
        "quote_public",
        "quote_public_pdf",
        "quote_public_accept",
        "quote_public_reject",
        "order_pay",
        "order_pay_card",
        "order_pay_return",
        "dashboard_order",
        "dashboard_quote_pdf",
        "dashboard_invoice_pdf",
        "dashboard_credit_note_pdf",
        "dashboard_order_usage",
        "dashboard_acceptance_report",
        "sales:quote_detail",
    ):
        assert required in ORG_ROUTES and required in names, required


def test_another_organisations_member_gets_404_everywhere(world):
    stranger = Client()
    stranger.force_login(world.owner_b)
    owner = Client()
    owner.force_login(world.owner_a)
    walked: list[tuple[str, str, str, int]] = []
    refused_methods: dict[str, list[str]] = {}

    for name, url, expected in org_urls(world):
        got: dict[str, int] = {}
        for method in ("get", "post"):
            response = getattr(stranger, method)(url)
            got[method] = response.status_code
            walked.append((name, method, url, response.status_code))
            assert response.status_code in expected | {405}, (
                f"{method.upper()} {url} ({name}) as a member of another organisation: "
                f"{response.status_code}, expected {sorted(expected)} (or 405)"
            )
        # At least one method reaches the view and is refused.
        refused = [m for m, status in got.items() if status in expected]
        assert refused, f"{url} ({name}): {got}"
        refused_methods[url] = refused
    assert {name for name, *_rest in walked} == set(ORG_ROUTES)

    # Nothing of A's shows on B's own pages either.
    body = stranger.get(reverse("dashboard")).content.decode()
    for secret in (
        world.order.number,
        world.invoice.number,
        world.quote_open.token,
        world.quote_accepted.token,
    ):
        assert secret not in body
    # Nothing changed for A.
    world.quote_open.refresh_from_db()
    assert world.quote_open.status == "sent"
    world.invitation.refresh_from_db()
    assert world.invitation.revoked_at is None
    assert Membership.objects.filter(pk=world.membership.pk, role=MemberRole.OWNER).exists()

    # The control: A's owner reaches the same URLs (GET pages first, then the POSTs).
    # A deletion succeeds once: its other language's URL then rightly answers 404.
    deleted: set[str] = set()
    for method in ("get", "post"):
        for name, url, expected in org_urls(world):
            if expected is STAFF_ONLY or method not in refused_methods[url]:
                continue
            if name in DELETIONS and method == "post":
                if name in deleted:
                    continue
                deleted.add(name)
            response = getattr(owner, method)(url)
            assert response.status_code not in (403, 404, 405), (
                f"{method.upper()} {url} ({name}) as A's owner: {response.status_code}"
            )
            if method == "get" and name != "order_pay_card":  # card off: back to order_pay
                assert response.status_code == 200, (name, url, response.status_code)


def test_sales_pages_refuse_customers_and_serve_sales(world):
    sales = Client()
    sales.force_login(world.sales)
    for lang in LANGUAGES:
        for name in ("sales:quote_detail", "sales:quote_pdf"):
            url = build(name, {"pk": world.quote_open.pk}, lang)
            assert sales.get(url).status_code == 200, url
    customer = Client()
    customer.force_login(world.owner_a)  # even A's own owner: the sales pages are staff's
    assert (
        customer.get(build("sales:quote_detail", {"pk": world.quote_open.pk}, "en")).status_code
        == 403
    )


def test_admin_pages_send_non_staff_to_the_login(world):
    stranger = Client()
    stranger.force_login(world.owner_b)
    checked = 0
    routes = [r for r in parameterised_routes() if is_admin(r)]
    assert routes
    for route in routes:
        for kwargs in admin_kwargs(route, world):
            for lang in LANGUAGES:
                url = build(route.name, kwargs, lang)
                for method in ("get", "post"):
                    response = getattr(stranger, method)(url)
                    assert response.status_code in (302, 403), (route.name, method, url)
                    if response.status_code == 302:
                        login = build("admin:login", {}, lang)
                        assert response["Location"].startswith(login), (url, response["Location"])
                    checked += 1
    index = stranger.get(build("admin:index", {}, "en"))
    assert index.status_code == 302
    assert checked >= 4 * len(routes)
