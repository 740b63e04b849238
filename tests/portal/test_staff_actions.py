"""Issue 25, point 3: every staff action names the permission it needs, the seeded staff
groups hold them (``seed_demo``), and this test walks every action as every role: the
demo's admin, manager, sales, ops and finance users, and a staff user in no group.

Pages answer 403 before anything is looked up; an allowed role gets past the check (to
the page, to a 400 for an empty body, or to a 404 for a run that does not exist). An
admin action a role may not take is not offered, and Django's admin refuses to run an
action it does not offer."""

from __future__ import annotations

import json

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.test import RequestFactory
from django.urls import reverse
from django.utils import translation

from billing.models import Contract, CreditNote, Invoice, Payment, UsageRecord
from core.models import OutboxMessage
from inventory.models import Node
from provisioning.models import NodeValidation

pytestmark = pytest.mark.django_db

ROLES = ("admin", "manager", "sales", "ops", "finance", "support", "nobody")

# Action → the roles that may take it. Everyone else is refused.
MAY = {
    "run: see progress": {"admin", "ops"},
    "run: retry a step": {"admin", "ops"},
    "run: swap a node": {"admin", "ops"},
    "run: cancel": {"admin", "ops"},
    "node: re-run validation": {"admin", "ops"},
    "node: mark faulty": {"admin", "ops"},
    "outbox: publish now": {"admin", "ops"},
    "contract: countersign": {"admin", "manager"},
    "invoice: mark paid by transfer": {"admin", "finance"},
    "credit note: issue": {"admin", "finance"},
    "refund: issue": {"admin", "finance"},
    "payment: refund duplicates": {"admin", "finance"},
    "usage: post to the API": {"admin", "finance"},
    "usage: import in the admin": {"admin", "finance"},
    "usage: void": {"admin", "finance"},
    # The support desk (issue 22): support works tickets; ops sees the queue and the
    # missed clocks; both post status incidents; finance and sales see none of it.
    "support: see the queue": {"admin", "ops", "support"},
    "support: see a ticket": {"admin", "ops", "support"},
    "support: missed clocks": {"admin", "ops", "support"},
    "support: reply": {"admin", "support"},
    "support: internal note": {"admin", "support"},
    "support: assign": {"admin", "support"},
    "support: change priority": {"admin", "support"},
    "support: resolve": {"admin", "support"},
    "status: see incidents": {"admin", "ops", "support"},
    "status: post an incident": {"admin", "ops", "support"},
    "status: update an incident": {"admin", "ops", "support"},
    # The operations console (issue 22): sales see the calendar and the plans (inventory
    # view), operations plan and change maintenance, finance sees utilisation and revenue.
    "operations: reservation calendar": {"admin", "ops", "sales", "manager"},
    # The nav's "Operations" link (shown to all staff): to the calendar, else the reports.
    "operations: the console's link": {"admin", "ops", "sales", "manager", "finance"},
    "maintenance: see plans": {"admin", "ops", "sales", "manager"},
    "maintenance: plan": {"admin", "ops"},
    "maintenance: call off": {"admin", "ops"},
    "maintenance: mark done": {"admin", "ops"},
    "utilisation and revenue": {"admin", "ops", "finance"},
}

# Admin actions: (model, action name).
ADMIN_ACTIONS = {
    "node: re-run validation": (NodeValidation, "recheck"),
    "node: mark faulty": (Node, "mark_faulty"),
    "outbox: publish now": (OutboxMessage, "publish_now"),
    "contract: countersign": (Contract, "countersign"),
    "invoice: mark paid by transfer": (Invoice, "mark_paid_by_transfer"),
    "payment: refund duplicates": (Payment, "refund_duplicates"),
    "usage: void": (UsageRecord, "void_records"),
}


def _url(name: str, *args) -> str:
    with translation.override("en"):
        return reverse(name, args=args)


def _user(role: str):
    if role == "nobody":
        return get_user_model().objects.create_user(
            "nobody", "nobody@example.com", "x-unused-12345", is_staff=True
        )
    return get_user_model().objects.get(username=role)


def _page(client, action: str) -> int:
    """The HTTP status of the action's page or endpoint (nothing exists to act on)."""
    run, step, node = 987654, 987655, 987656
    if action == "run: see progress":
        return client.get(_url("provisioning_run", run)).status_code
    if action == "run: retry a step":
        return client.post(_url("provisioning_step_retry", run, step)).status_code
    if action == "run: swap a node":
        return client.post(_url("provisioning_node_swap", run, node)).status_code
    if action == "run: cancel":
        return client.post(_url("provisioning_run_cancel", run)).status_code
    if action == "operations: the console's link":
        return client.get(_url("operations:home")).status_code
    if action == "operations: reservation calendar":
        return client.get(_url("operations:calendar")).status_code
    if action == "maintenance: see plans":
        return client.get(_url("operations:maintenance_list")).status_code
    if action == "maintenance: plan":
        return client.post(_url("operations:maintenance_new")).status_code
    if action == "maintenance: call off":
        return client.post(_url("operations:maintenance_cancel", run)).status_code
    if action == "maintenance: mark done":
        return client.post(_url("operations:maintenance_complete", run)).status_code
    if action == "utilisation and revenue":
        return client.get(_url("operations:reports")).status_code
    if action == "credit note: issue":
        return client.get(_url("admin:billing_creditnote_issue")).status_code
    if action == "refund: issue":
        return client.get(_url("admin:billing_refund_issue")).status_code
    if action == "usage: post to the API":
        body = json.dumps({"records": []})
        return client.post(_url("usage_api"), body, content_type="application/json").status_code
    if action == "usage: import in the admin":
        return client.get(_url("admin:billing_usagerecord_import")).status_code
    ticket, incident = 987657, 987658
    support_pages = {
        "support: see the queue": ("get", "support_staff_queue"),
        "support: see a ticket": ("get", "support_staff_ticket", ticket),
        "support: missed clocks": ("get", "support_staff_missed"),
        "support: reply": ("post", "support_staff_reply", ticket),
        "support: internal note": ("post", "support_staff_note", ticket),
        "support: assign": ("post", "support_staff_assign", ticket),
        "support: change priority": ("post", "support_staff_priority", ticket),
        "support: resolve": ("post", "support_staff_resolve", ticket),
        "status: see incidents": ("get", "support_staff_incidents"),
        "status: post an incident": ("post", "support_staff_incident_new"),
        "status: update an incident": ("post", "support_staff_incident_update", incident),
    }
    if action in support_pages:
        method, name, *args = support_pages[action]
        return getattr(client, method)(_url(name, *args)).status_code
    raise AssertionError(action)


def _offered(user, model, name: str) -> bool:
    request = RequestFactory().get("/")
    request.user = user
    return name in admin.site._registry[model].get_actions(request)


@pytest.mark.parametrize("role", ROLES)
def test_every_staff_action_as_every_role(client, demo, role):
    user = _user(role)
    client.force_login(user)
    wrong = []
    for action, allowed_roles in MAY.items():
        allowed = role in allowed_roles
        if action in ADMIN_ACTIONS:
            model, name = ADMIN_ACTIONS[action]
            got = _offered(user, model, name)
        else:
            status = _page(client, action)
            got = status != 403
            assert status in (200, 302, 400, 403, 404), (action, status)
        if got != allowed:
            wrong.append(f"{action}: {'allowed' if got else 'refused'}")
    assert not wrong, f"{role}: {wrong}"


def test_the_countersign_service_itself_needs_the_permission(demo):
    """The admin's action is one way in; the service refuses staff without the
    permission too (a shell, a future API)."""
    from billing.contracts import services as contract_services
    from core.errors import DomainError

    contract = Contract(pk=1)  # refused before the row is read
    for role in ("sales", "ops", "finance"):
        with pytest.raises(DomainError, match="not authorised to countersign"):
            contract_services.contract_countersign(contract=contract, actor=_user(role))


def test_credit_notes_and_refunds_are_not_reachable_by_invoice_rights_alone(client, demo):
    """Credit notes and refunds name their own permissions (add_creditnote, add_refund),
    not the right to change invoices and payments."""
    staff = _user("nobody")
    from django.contrib.auth.models import Permission

    staff.user_permissions.add(
        *Permission.objects.filter(codename__in=["change_invoice", "change_payment"])
    )
    client.force_login(get_user_model().objects.get(pk=staff.pk))
    assert client.get(_url("admin:billing_creditnote_issue")).status_code == 403
    assert client.get(_url("admin:billing_refund_issue")).status_code == 403
    assert CreditNote.objects.count() == 0
