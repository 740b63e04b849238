"""The node lifecycle: every legal move writes an event, every illegal one is refused."""

import itertools

import pytest

from core.errors import DomainError, IllegalTransition
from inventory import services
from inventory.models import NODE_TRANSITIONS, Node, NodeEvent, NodeStatus
from tests import factories

pytestmark = pytest.mark.django_db

ALL = [s.value for s in NodeStatus]
LEGAL = [(a, b) for a, targets in NODE_TRANSITIONS.items() for b in sorted(targets)]
ILLEGAL = [(a, b) for a, b in itertools.product(ALL, ALL) if b not in NODE_TRANSITIONS[a]]


def test_the_table_covers_every_status():
    assert set(NODE_TRANSITIONS) == set(ALL)
    assert NODE_TRANSITIONS[NodeStatus.RETIRED] == frozenset()


@pytest.mark.parametrize(("source", "target"), LEGAL)
def test_legal_move_changes_status_and_writes_event(sz, h100, admin_user, source, target):
    node = factories.node(sz, h100, status=source)
    services.node_transition(node=node, to_status=target, actor=admin_user, reason="ops ticket 42")
    node.refresh_from_db()
    assert node.status == target
    event = NodeEvent.objects.get(node=node)
    assert (event.from_status, event.to_status) == (source, target)
    assert event.actor == admin_user
    assert event.reason == "ops ticket 42"
    assert event.created_at is not None


@pytest.mark.parametrize(("source", "target"), ILLEGAL)
def test_illegal_move_is_refused_and_changes_nothing(sz, h100, source, target):
    node = factories.node(sz, h100, status=source)
    with pytest.raises(IllegalTransition) as exc:
        services.node_transition(node=node, to_status=target, reason="try")
    assert node.hostname in exc.value.message
    node.refresh_from_db()
    assert node.status == source
    assert not NodeEvent.objects.filter(node=node).exists()


def test_a_reason_is_required(sz, h100):
    node = factories.node(sz, h100)
    with pytest.raises(DomainError, match="why"):
        services.node_transition(node=node, to_status=NodeStatus.MAINTENANCE, reason="  ")


def test_bulk_move_reports_refusals_and_moves_the_rest(sz, h100, admin_user):
    ok = factories.node(sz, h100)
    retired = factories.node(sz, h100, status=NodeStatus.RETIRED)
    moved, refused = services.node_bulk_transition(
        nodes=[ok, retired], to_status=NodeStatus.MAINTENANCE, actor=admin_user, reason="PDU swap"
    )
    assert [n.pk for n in moved] == [ok.pk]
    assert len(refused) == 1 and retired.hostname in refused[0]
    assert Node.objects.get(pk=retired.pk).status == NodeStatus.RETIRED
