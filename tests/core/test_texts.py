"""System texts stored as codes with parameters, shown in the reader's language."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.utils import translation

from core import texts
from core.texts import Plural, Text, label


def test_a_text_is_stored_as_its_code_and_shown_in_each_language():
    text = Text("Created from quote %(n)s v%(v)s.", n="Q-SZ-2026-000001", v=2)
    plain, data = texts.stored(text)
    assert plain == "Created from quote Q-SZ-2026-000001 v2."  # the English, for logs
    assert data == {
        "code": "Created from quote %(n)s v%(v)s.",
        "params": {"n": "Q-SZ-2026-000001", "v": 2},
    }
    with translation.override("zh-hans"):
        assert texts.render(data) == "由报价单 Q-SZ-2026-000001 v2 创建。"
        assert str(text) == "由报价单 Q-SZ-2026-000001 v2 创建。"
    with translation.override("en"):
        assert texts.render(data) == plain


def test_nested_texts_labels_amounts_and_times_follow_the_reader():
    from billing.models import PaymentMethod

    text = Text(
        "Cleaning failed: %(why)s",
        why=Text(
            "Paid by %(method)s (Stripe %(pi)s).", method=label(PaymentMethod, "alipay"), pi="pi_1"
        ),
    )
    data = texts.stored(text)[1]
    with translation.override("zh-hans"):
        shown = texts.render(data)
    assert "清理失败" in shown and "支付宝" in shown and "Paid" not in shown
    with translation.override("en"):
        assert texts.render(data) == "Cleaning failed: Paid by Alipay (Stripe pi_1)."
    at = Text("The hold expired at %(at)s.", at=datetime(2026, 12, 1, 8, 0, tzinfo=UTC))
    amount = Text(
        "Partial payment of %(amount)s (%(ref)s); %(left)s still due.",
        amount=Decimal("100000.00"),
        ref="CMB 1",
        left=Decimal("97460.00"),
    )
    with translation.override("en"):
        assert texts.render(texts.stored(amount)[1]) == (
            "Partial payment of 100000.00 (CMB 1); 97460.00 still due."
        )
        assert "2026-12-01" in texts.render(texts.stored(at)[1])


def test_plurals_and_words_a_person_typed():
    text = Plural(
        "The agent runs on %(count)s node.", "The agent runs on %(count)s nodes.", 3, count=3
    )
    assert str.__str__(text) == "The agent runs on 3 nodes."
    plain, data = texts.stored("Customer asked by phone")
    assert (plain, data) == ("Customer asked by phone", None)
    assert texts.render(None, plain) == "Customer asked by phone"


@pytest.mark.parametrize(
    "stored_plain",
    ["由报价单 Q-SZ-2026-000007 v3 创建。", "Created from quote Q-SZ-2026-000007 v3."],
)
def test_older_rows_in_either_language_are_recognised(stored_plain):
    data = texts.recognise(stored_plain)
    assert data == {
        "code": "Created from quote %(n)s v%(v)s.",
        "params": {"n": "Q-SZ-2026-000007", "v": "3"},
    }
    assert texts.recognise("已付款。") == {"code": "Paid.", "params": {}}
    assert texts.recognise("words nobody wrote in the catalogue") is None


@pytest.mark.django_db
def test_events_keep_the_code_and_pages_show_their_language(demo):
    from core import lifecycle
    from inventory.models import NodeEvent

    node = (
        demo["nodes"][0]
        if "nodes" in demo
        else NodeEvent._meta.get_field("node").related_model.objects.first()
    )
    with translation.override("zh-hans"):  # a Chinese user triggers it
        lifecycle.record_note([node], reason=Text("Validating."))
    event = NodeEvent.objects.filter(node=node).latest("pk")
    assert event.reason == "Validating."
    with translation.override("en"):
        assert event.why() == "Validating."
    with translation.override("zh-hans"):
        assert event.why() != "Validating." and "Validating" not in event.why()
