"""Price-book services: every change logged with who, before and after; sent quotes keep
their prices; a book sent quotes were priced from is frozen once in force; the engine's
rules are checked before anything is saved; a copy copies every entry."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from billing.models import (
    AddonPrice,
    CardOptionPrice,
    DiscountRule,
    FreeService,
    NodePrice,
    PriceBook,
    PriceChange,
    Promotion,
    Quote,
    QuoteStatus,
)
from billing.pricing import selectors
from billing.pricing import services as pricebooks
from billing.quotes import services as qs
from core.errors import DomainError

pytestmark = pytest.mark.django_db

ENTRY_MODELS = [NodePrice, CardOptionPrice, AddonPrice, FreeService, DiscountRule, Promotion]


def make_quote(demo, nodes=1):
    return qs.quote_create(
        site=demo["sz"],
        organisation=demo["org"],
        contact_name="Li Wei",
        contact_email="li.wei@example.com",
        term="month",
        duration=1,
        start_date=timezone.now().date() + timedelta(days=7),
        items=[qs.ItemSpec(kind="node", quantity=Decimal(nodes), node_type_id=demo["h100"].pk)],
        actor=demo["sales"],
    )


def h100_price(book, demo):
    return NodePrice.objects.get(price_book=book, node_type=demo["h100"])


def entries(book):
    """Every entry of a book as comparable tuples, without keys or the book."""
    out = {}
    for model in ENTRY_MODELS:
        fields = [
            f.attname for f in model._meta.concrete_fields if f.name not in ("id", "price_book")
        ]
        out[model.__name__] = sorted(
            model.objects.filter(price_book=book).values_list(*fields), key=str
        )
    return out


def test_editing_a_node_price_logs_who_what_before_and_after(demo):
    book = demo["sz_book"]  # in force, but no quote was sent from it yet
    price = h100_price(book, demo)
    price.monthly = Decimal("95000")

    pricebooks.price_entry_save(instance=price, actor=demo["admin"])

    price.refresh_from_db()
    assert price.monthly == Decimal("95000.00")
    change = PriceChange.objects.get(price_book=book)
    assert change.actor == demo["admin"]
    assert change.what == "NodePrice h100-8x-nvlink monthly"
    assert change.before == {"monthly": "100000.00"}
    assert change.after == {"monthly": "95000.00"}


def test_saving_an_unchanged_entry_logs_nothing(demo):
    price = h100_price(demo["sz_book"], demo)

    pricebooks.price_entry_save(instance=price, actor=demo["admin"])

    assert not PriceChange.objects.exists()


def test_adding_and_removing_entries_are_logged_with_the_whole_entry(demo):
    book = demo["sz_book"]
    addon = AddonPrice(
        price_book=book, code="gpu-burn-in", name="Burn-in report", unit="once", price="800"
    )

    pricebooks.price_entry_save(instance=addon, actor=demo["admin"])
    pricebooks.price_entry_delete(instance=addon, actor=demo["admin"])

    added, removed = PriceChange.objects.order_by("pk")
    assert added.what == "AddonPrice gpu-burn-in added"
    assert added.before is None
    assert added.after["price"] == "800.00"
    assert added.after["name"] == "Burn-in report"
    assert removed.what == "AddonPrice gpu-burn-in removed"
    assert removed.before == added.after
    assert removed.after is None
    assert not AddonPrice.objects.filter(code="gpu-burn-in").exists()


def test_a_sent_quote_keeps_its_prices_when_a_new_book_changes_them(demo):
    old_book = demo["sz_book"]
    sent = qs.quote_send(quote=make_quote(demo), actor=demo["sales"])
    lines_before = list(sent.lines.values_list("code", "unit_price", "list_amount", "gross"))
    gross_before = sent.gross_total

    new_book = pricebooks.price_book_create(
        site=demo["sz"],
        name="Shenzhen 2026 (H100 down)",
        effective_from=timezone.now(),
        actor=demo["admin"],
        copy_from=old_book,
    )
    price = h100_price(new_book, demo)
    price.monthly = Decimal("90000")
    pricebooks.price_entry_save(instance=price, actor=demo["admin"])
    fresh = make_quote(demo)

    assert fresh.price_book == new_book
    assert fresh.lines.get(kind="node").unit_price == Decimal("90000.00")
    sent = Quote.objects.get(pk=sent.pk)
    assert sent.status == QuoteStatus.SENT
    assert sent.price_book == old_book
    assert sent.gross_total == gross_before
    assert list(sent.lines.values_list("code", "unit_price", "list_amount", "gross")) == (
        lines_before
    )
    assert sent.lines.get(kind="node").unit_price == Decimal("100000.00")
    assert h100_price(old_book, demo).monthly == Decimal("100000.00")


def test_a_book_in_force_that_priced_a_sent_quote_is_frozen(demo):
    book = demo["sz_book"]
    qs.quote_send(quote=make_quote(demo), actor=demo["sales"])
    price = h100_price(book, demo)
    price.monthly = Decimal("90000")

    with pytest.raises(DomainError, match="create a new price book effective from a future date"):
        pricebooks.price_entry_save(instance=price, actor=demo["admin"])
    with pytest.raises(DomainError, match="sent quotes keep their prices"):
        pricebooks.price_entry_delete(instance=price, actor=demo["admin"])
    with pytest.raises(DomainError, match="sent quotes keep their prices"):
        pricebooks.price_book_update(
            book=book,
            actor=demo["admin"],
            name=book.name,
            effective_from=timezone.now() + timedelta(days=1),
            notes="",
        )

    assert h100_price(book, demo).monthly == Decimal("100000.00")
    assert not PriceChange.objects.exists()
    assert pricebooks.price_book_is_frozen(book=book)


def test_draft_quotes_do_not_freeze_a_book_and_future_books_stay_editable(demo):
    book = demo["sz_book"]
    make_quote(demo)  # a draft: never shown to the customer
    assert not pricebooks.price_book_is_frozen(book=book)

    future = pricebooks.price_book_create(
        site=demo["sz"],
        name="Shenzhen 2027",
        effective_from=timezone.now() + timedelta(days=30),
        actor=demo["admin"],
        copy_from=book,
    )
    price = h100_price(future, demo)
    price.monthly = Decimal("85000")

    pricebooks.price_entry_save(instance=price, actor=demo["admin"])

    assert h100_price(future, demo).monthly == Decimal("85000.00")


def test_daily_times_30_below_monthly_is_refused_and_nothing_is_saved(demo):
    book = demo["sz_book"]
    price = h100_price(book, demo)
    daily = price.daily  # 4,000.00 a day: 120,000 for 30 days
    price.monthly = Decimal("150000")

    with pytest.raises(DomainError) as refused:
        pricebooks.price_entry_save(instance=price, actor=demo["admin"])

    message = refused.value.message
    assert "h100-8x-nvlink" in message
    assert f"daily {daily} × 30 is below monthly 150000" in message
    stored = h100_price(book, demo)
    assert (stored.monthly, stored.daily) == (Decimal("100000.00"), daily)
    assert not PriceChange.objects.exists()


def test_a_card_cheaper_by_the_day_is_refused_with_the_engine_message(demo):
    card = CardOptionPrice.objects.filter(price_book=demo["sz_book"]).first()
    card.daily = Decimal("10")

    with pytest.raises(DomainError, match="daily × 30 is below monthly"):
        pricebooks.price_entry_save(instance=card, actor=demo["admin"])

    card.refresh_from_db()
    assert card.daily > Decimal("10")


def test_an_invalid_discount_or_promotion_is_refused(demo):
    rule = DiscountRule.objects.filter(price_book=demo["sz_book"]).first()
    rule.multiplier = Decimal("0")
    with pytest.raises(DomainError, match="multiplier must be in"):
        pricebooks.price_entry_save(instance=rule, actor=demo["admin"])

    promo = Promotion.objects.get(code="hk-baremetal-bogo")
    promo.valid_until = promo.valid_from - timedelta(days=1)
    with pytest.raises(DomainError, match="ends before it starts"):
        pricebooks.price_entry_save(instance=promo, actor=demo["admin"])

    assert not PriceChange.objects.exists()


def test_a_duplicate_code_is_a_clear_refusal(demo):
    book = demo["sz_book"]
    twin = AddonPrice(price_book=book, code="egress", name="Egress again", unit="tb", price=1)

    with pytest.raises(DomainError, match="already exists"):
        pricebooks.price_entry_save(instance=twin, actor=demo["admin"])

    assert AddonPrice.objects.filter(price_book=book, code="egress").count() == 1


def test_copy_from_copies_every_entry_and_logs_each(demo):
    source = selectors.price_book_in_force(site=demo["hk"])  # has every kind of entry
    source_entries = entries(source)
    assert all(source_entries.values()), "the demo HK book has entries of every kind"

    copy = pricebooks.price_book_create(
        site=demo["hk"],
        name="Hong Kong 2027",
        effective_from=timezone.now() + timedelta(days=30),
        actor=demo["admin"],
        copy_from=source,
    )

    assert (copy.site, copy.currency, copy.created_by) == (demo["hk"], "HKD", demo["admin"])
    assert entries(copy) == source_entries
    assert entries(source) == source_entries, "the source is untouched"
    changes = PriceChange.objects.filter(price_book=copy)
    total = sum(len(rows) for rows in source_entries.values())
    assert changes.count() == total + 1
    assert changes.filter(after__copied_from=str(source)).count() == 1
    assert all(c.actor == demo["admin"] for c in changes)
    assert changes.filter(what="NodePrice h100-8x-nvlink copied").get().after["monthly"] == (
        "108000.00"
    )


def test_copy_into_another_currency_or_an_existing_start_is_refused(demo):
    hk_book = selectors.price_book_in_force(site=demo["hk"])
    with pytest.raises(DomainError, match="same currency"):
        pricebooks.price_book_create(
            site=demo["sz"],
            name="wrong currency",
            effective_from=timezone.now() + timedelta(days=3),
            actor=demo["admin"],
            copy_from=hk_book,
        )
    with pytest.raises(DomainError, match="already has a price book"):
        pricebooks.price_book_create(
            site=demo["sz"],
            name="same start",
            effective_from=demo["sz_book"].effective_from,
            actor=demo["admin"],
        )
    assert PriceBook.objects.count() == 2


def test_a_book_that_priced_quotes_cannot_be_deleted(demo):
    make_quote(demo)

    with pytest.raises(DomainError, match="priced quotes"):
        pricebooks.price_book_delete(book=demo["sz_book"], actor=demo["admin"])

    unused = pricebooks.price_book_create(
        site=demo["sz"],
        name="never used",
        effective_from=timezone.now() + timedelta(days=3),
        actor=demo["admin"],
    )
    pricebooks.price_book_delete(book=unused, actor=demo["admin"])
    assert not PriceBook.objects.filter(pk=unused.pk).exists()


def test_a_new_book_cannot_start_before_quotes_that_were_sent(demo):
    sent = qs.quote_send(quote=make_quote(demo), actor=demo["sales"])
    yesterday = timezone.now() - timedelta(days=1)

    with pytest.raises(DomainError, match=f"Quote {sent.number} was made after that moment"):
        pricebooks.price_book_create(
            site=demo["sz"],
            name="backdated",
            effective_from=yesterday,
            actor=demo["admin"],
            copy_from=demo["sz_book"],
        )
    future = pricebooks.price_book_create(
        site=demo["sz"],
        name="Shenzhen 2027",
        effective_from=timezone.now() + timedelta(days=30),
        actor=demo["admin"],
    )
    with pytest.raises(DomainError, match="cannot start before quotes that were sent"):
        pricebooks.price_book_update(
            book=future, actor=demo["admin"], name=future.name, effective_from=yesterday, notes=""
        )

    assert PriceBook.objects.count() == 3
    future.refresh_from_db()
    assert future.effective_from > timezone.now()


def test_renaming_a_future_book_is_logged(demo):
    future = pricebooks.price_book_create(
        site=demo["sz"],
        name="Shenzhen 2027",
        effective_from=timezone.now() + timedelta(days=30),
        actor=demo["admin"],
    )

    pricebooks.price_book_update(
        book=future,
        actor=demo["sales"],
        name="Shenzhen 2027 (draft)",
        effective_from=future.effective_from,
        notes="",
    )

    change = PriceChange.objects.filter(price_book=future).order_by("pk").last()
    assert change.what == "PriceBook name"
    assert (change.actor, change.before, change.after) == (
        demo["sales"],
        {"name": "Shenzhen 2027"},
        {"name": "Shenzhen 2027 (draft)"},
    )
