"""What every billing document shares: the provider block (seller, bank details), and
the line texts (durations, quantities, periods, notes, node specifications).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import ngettext, pgettext

from billing.models import (
    QuoteLine,
    RegistrationKind,
    SellerEntity,
    Term,
)
from inventory.models import Fabric

# --- The quote's context ----------------------------------------------------------------


@dataclass(frozen=True)
class Provider:
    """Who issues the document: the site's seller entity (``SellerEntity``), or the
    provider block from settings where a site has none."""

    brand: str
    name: str
    address: str
    email: str
    phone: str
    website: str
    registration_label: str = ""
    registration_number: str = ""
    issues_fapiao: bool = True


def seller_for(site: Any) -> SellerEntity | None:
    if site is None:
        return None
    return SellerEntity.objects.filter(site=site).first()


def issues_payment_requests(site: Any) -> bool:
    """Whether the site's payment documents are payment requests (付款通知书: a mainland
    seller, only the tax system issues the 发票) rather than invoices (Hong Kong). The
    one rule of the PDF, the pages, the emails and the admin."""
    if site is None:
        return True
    try:
        seller = site.seller  # the site's one seller entity (cached when selected with it)
    except ObjectDoesNotExist:  # a site without a seller entity yet: the provider block
        return True
    return bool(seller.issues_fapiao)


def payment_document_name(invoice: Any) -> str:
    """``payment request I-SZ-2026-000001`` or ``invoice I-HK-…``, as a sentence names
    the document (``issues_payment_requests``)."""
    if issues_payment_requests(invoice.order.site if invoice.order_id else None):
        return _("payment request %(n)s") % {"n": invoice.number}
    return _("invoice %(n)s") % {"n": invoice.number}


def provider(language: str, site: Any = None) -> Provider:
    """The provider block on quotes and payment documents: the site's seller entity in
    the document's language, else the settings (``PORTAL_PROVIDER_*``)."""
    zh = language.lower().startswith("zh")
    seller = seller_for(site)
    if seller is not None:
        with translation.override(language):
            texts = seller.localized(language)
            return Provider(
                brand=settings.PORTAL_PROVIDER_BRAND,
                name=texts["legal_name"],
                address=texts["address"],
                email=settings.PORTAL_PROVIDER_EMAIL,
                phone=settings.PORTAL_PROVIDER_PHONE,
                website=settings.PORTAL_PROVIDER_WEBSITE,
                registration_label=str(RegistrationKind(seller.registration_kind).label),
                registration_number=seller.registration_number,
                issues_fapiao=seller.issues_fapiao,
            )
    return Provider(
        brand=settings.PORTAL_PROVIDER_BRAND,
        name=(settings.PORTAL_PROVIDER_NAME_ZH if zh else "") or settings.PORTAL_PROVIDER_NAME,
        address=(settings.PORTAL_PROVIDER_ADDRESS_ZH if zh else "")
        or settings.PORTAL_PROVIDER_ADDRESS,
        email=settings.PORTAL_PROVIDER_EMAIL,
        phone=settings.PORTAL_PROVIDER_PHONE,
        website=settings.PORTAL_PROVIDER_WEBSITE,
    )


def bank_details(site: Any = None, language: str = "en") -> dict[str, str]:
    """Where to transfer the money: the site's seller account (bank name in the
    document's language), else the account in the settings."""
    seller = seller_for(site)
    if seller is not None:
        return {
            "account_name": seller.account_name,
            "account_number": seller.account_number,
            "bank_name": seller.localized(language)["bank_name"],
            "swift": seller.swift_code,
            "cnaps": seller.cnaps_code,
        }
    return {
        "account_name": settings.PORTAL_BANK_ACCOUNT_NAME,
        "account_number": settings.PORTAL_BANK_ACCOUNT_NUMBER,
        "bank_name": settings.PORTAL_BANK_NAME,
        "swift": settings.PORTAL_BANK_SWIFT,
        "cnaps": "",
    }


def duration_label(term: str, duration: int) -> str:
    if term == Term.DAY:
        return ngettext("%(n)s day", "%(n)s days", duration) % {"n": duration}
    if term == Term.MONTH:
        return ngettext("%(n)s month", "%(n)s months", duration) % {"n": duration}
    if term == Term.QUARTER:
        return ngettext("%(n)s quarter", "%(n)s quarters", duration) % {"n": duration}
    return ngettext("%(n)s year", "%(n)s years", duration) % {"n": duration}


def quantity_text(quantity: Decimal, unit: str) -> str:
    """``16 nodes``, ``64 GPUs``, ``50 TB``: the quantity with its countable unit."""
    n = int(quantity) if quantity == quantity.to_integral_value() else quantity
    shown = f"{n:,}" if isinstance(n, int) else f"{quantity.normalize():f}"
    count = n if isinstance(n, int) else 2
    labels = {
        "node": lambda: ngettext("%(n)s node", "%(n)s nodes", count),
        "GPU": lambda: ngettext("%(n)s GPU", "%(n)s GPUs", count),
        "card": lambda: ngettext("%(n)s card", "%(n)s cards", count),
        "tb_month": lambda: _("%(n)s TB"),
        "tb": lambda: _("%(n)s TB"),
        "ip_month": lambda: ngettext("%(n)s IP address", "%(n)s IP addresses", count),
    }
    label = labels.get(unit)
    return label() % {"n": shown} if label else shown


def basis_text(unit: str, period_unit: str) -> str:
    """What a unit price is for: ``per node per month``."""
    texts = {
        ("node", "month"): lambda: _("per node per month"),
        ("node", "day"): lambda: _("per node per day"),
        ("GPU", "month"): lambda: _("per GPU per month"),
        ("GPU", "day"): lambda: _("per GPU per day"),
        ("card", "month"): lambda: _("per card per month"),
        ("card", "day"): lambda: _("per card per day"),
        ("tb_month", "month"): lambda: _("per TB per month"),
        ("tb", "once"): lambda: _("per TB"),
        ("ip_month", "month"): lambda: _("per IP per month"),
        ("month", "month"): lambda: _("per month"),
        ("once", "once"): lambda: _("one-off"),
        ("each", "once"): lambda: _("each"),
    }
    text = texts.get((unit, period_unit))
    return text() if text else ""


def periods_text(periods: Decimal, period_unit: str) -> str:
    """``12 months``, ``30 days``, ``0.2333 months`` (as priced); ``—`` for one-off lines."""
    if period_unit == "once":
        return "—"
    whole = periods == periods.to_integral_value()
    shown = f"{int(periods)}" if whole else f"{periods.normalize():f}"
    count = int(periods) if whole else 2
    if period_unit == "day":
        return ngettext("%(n)s day", "%(n)s days", count) % {"n": shown}
    if period_unit == "month":
        return ngettext("%(n)s month", "%(n)s months", count) % {"n": shown}
    return f"{shown} {period_unit}"


CARD_NOTE = re.compile(r"^(\d+) node\(s\) × (\d+)$")
NODE_GPU_NOTE = re.compile(r"^(\d+) × (\d+) GPU$")


def line_note(line: QuoteLine, addon_notes_zh: dict[tuple[str, str], str], language: str) -> str:
    """A line's note in the document's language (the engine writes English notes)."""
    note = line.note or ""
    if not note:
        return ""
    if note == "included":  # the engine's note on free services
        return _("included")
    zh = language.lower().startswith("zh")
    if zh and getattr(line, "note_zh", ""):
        return line.note_zh
    if m := CARD_NOTE.match(note):
        nodes, cards = int(m[1]), int(m[2])
        return ngettext(
            "%(nodes)s node × %(cards)s cards", "%(nodes)s nodes × %(cards)s cards", nodes
        ) % {"nodes": nodes, "cards": cards}
    if m := NODE_GPU_NOTE.match(note):
        nodes, gpus = int(m[1]), int(m[2])
        return ngettext(
            "%(nodes)s node × %(gpus)s GPUs", "%(nodes)s nodes × %(gpus)s GPUs", nodes
        ) % {"nodes": nodes, "gpus": gpus}
    if zh:
        # Lines priced before notes were stored in Chinese: the book's Chinese note, only
        # while its English note is still the stored one.
        return addon_notes_zh.get((line.code, note), note)
    return note


def node_specs(node_type: Any) -> list[tuple[str, str]]:
    gpu = node_type.gpu_model
    rows = [
        (_("CPU"), node_type.cpu),
        (
            _("Memory"),
            f"{node_type.ram_gb:,} GB" + (f" {node_type.ram_kind}" if node_type.ram_kind else ""),
        ),
    ]
    if gpu is not None:
        rows.append(
            (_("GPUs"), f"{node_type.gpu_count} × {gpu.name} ({gpu.memory_gb} GB)"),
        )
    rows += [
        (_("GPU interconnect"), node_type.get_interconnect_display()),
        (
            _("Network"),
            _("%(count)s × %(speed)s Gb/s NIC, %(fabric)s")
            % {
                "count": node_type.nic_count,
                "speed": node_type.nic_speed_gbps,
                "fabric": node_type.get_fabric_display(),
            },
        ),
        (_("Storage"), node_type.storage),
    ]
    return rows


# --- Where the nodes sit ----------------------------------------------------------------------


def placement_text(group: dict[str, Any]) -> str:
    """One placement group in words, the one sentence every page and document prints
    (the order and quote pages, the quote and estimate PDFs, the contract's equipment
    table): "2 nodes in 1 scalable unit, 8 rail switches, in 1 rack, InfiniBand NDR
    400G" for rail-optimised node types (a scalable unit is what "one leaf" means for
    them), "2 nodes under 1 leaf switch, in 1 rack, RoCE v2" for the others."""
    code = group.get("fabric_code", "")
    fabric = str(Fabric(code).label) if code in Fabric.values else group.get("fabric", "")
    count = int(group.get("count", 0) or 0)
    leaves = len(group.get("leaves", []))
    racks = int(group.get("racks", 0) or 0)
    units = int(group.get("units", 0) or 0)
    if units:
        rails = int(group.get("rails", 0) or 0)
        where = pgettext("placement", "%(units)s, %(rails)s") % {
            "units": ngettext("in %(n)s scalable unit", "in %(n)s scalable units", units)
            % {"n": units},
            "rails": ngettext("%(n)s rail switch", "%(n)s rail switches", rails) % {"n": rails},
        }
    else:
        where = ngettext("under %(n)s leaf switch", "under %(n)s leaf switches", leaves) % {
            "n": leaves
        }
    return _("%(nodes)s %(leaves)s, %(racks)s, %(fabric)s") % {
        "nodes": ngettext("%(n)s node", "%(n)s nodes", count) % {"n": count},
        "leaves": where,
        "racks": ngettext("in %(n)s rack", "in %(n)s racks", racks) % {"n": racks},
        "fabric": fabric,
    }
