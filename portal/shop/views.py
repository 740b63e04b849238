"""The shop's pages: the catalog, configure (the instant quote), accept, the anonymous
estimate. The sizing wizard is in ``portal.shop.wizard``."""

from __future__ import annotations

import uuid
from decimal import Decimal
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    QueryDict,
)
from django.shortcuts import redirect, render, resolve_url
from django.template.loader import render_to_string
from django.urls import NoReverseMatch, reverse
from django.utils.cache import patch_vary_headers
from django.utils.safestring import mark_safe
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.clickjacking import xframe_options_sameorigin
from django.views.decorators.http import require_GET, require_POST

from accounts import selectors as accounts_selectors
from accounts.throttle import client_ip
from billing.models import PaymentMethod
from billing.pricing import catalog as shop
from billing.pricing.engine import LineKind, gpu_equivalent
from billing.pricing.periods import rental_period
from billing.pricing.shop_data import shop_data
from billing.pricing.terms import (
    CARD_HOLD,
    earliest_start_reason,
    hold_terms,
    payment_methods_offered,
    transfer_refusal,
)
from billing.quotes.services import priced_lines_as_rows
from billing.shop import estimates
from billing.shop import selectors as shop_selectors
from billing.shop.selfservice import CapacityTaken, configuration_price, order_self_service
from core.errors import DomainError, NotEnoughCapacity
from inventory import selectors
from inventory.placement import leaf_summary, unit_summary
from portal.shop import instant_quote
from portal.shop.forms import ConfigureForm


def configure_url(**params: Any) -> str:
    return f"{reverse('configure')}?{urlencode(params)}"


@require_GET
def catalog(request: HttpRequest) -> HttpResponse:
    """Sites and node types with their specs, prices per term, live counts of free nodes
    and a 13-week availability calendar.

    A fixed number of queries whatever the size of the fleet: five for the catalog and
    the counts, and four for the prices of all sites (cached for a minute, so a warm
    page runs the five). The calendar is computed off the request by a beat job
    (``billing.catalog.calendar_refresh``, every minute) and read from the cache; while
    none is stored (a cold cache), the page says it is being computed and a refresh is
    requested, so no visitor waits for it.
    """
    sites = selectors.catalog_sites()
    node_types = selectors.catalog_node_types()
    free = selectors.free_counts_now()
    total = selectors.node_counts_by_site_and_type()
    prices = shop.catalog_prices(sites=sites)
    pairs = [(site, nt.pk) for nt in node_types for site in sites if total.get((site.pk, nt.pk))]
    calendar = shop.availability_calendar(pairs=pairs)
    calendar_pending = calendar is None
    calendar = calendar or {}
    rows = []
    for nt in node_types:
        per_site = []
        for site in sites:
            key = (site.pk, nt.pk)
            if not total.get(key):
                continue
            price = prices.get(key)
            weeks = [
                {
                    "week": week,
                    "slot": price.week_slot.get(week.start) if price else None,
                    "url": configure_url(
                        site=site.code,
                        node_type=nt.code,
                        node_count=1,
                        term="day",
                        duration=7,
                        start_date=week.start.isoformat(),
                    ),
                }
                for week in calendar.get(key, [])
            ]
            per_site.append(
                {
                    "site": site,
                    "free": free.get(key, 0),
                    "total": total[key],
                    "price": price,
                    "weeks": weeks,
                    "configure_url": configure_url(site=site.code, node_type=nt.code),
                }
            )
        if per_site:
            rows.append({"node_type": nt, "sites": per_site})
    context = {
        "sites": sites,
        "rows": rows,
        "typical_cluster": shop.TYPICAL_CLUSTER_NODES,
        "calendar_weeks": shop.CALENDAR_WEEKS,
        "calendar_pending": calendar_pending,
    }
    return render(request, "portal/catalog.html", context)


# --- Configure, instant quote, accept -----------------------------------------------------


CONFIG_FIELDS_WHAT = ("site", "node_type", "node_count", "gpu_count")
CONFIG_FIELDS_CARDS = ("card", "cards_per_node")
CONFIG_FIELDS_WHEN = ("term", "duration", "start_date")


def _form_data(raw: QueryDict, defaults: dict[str, str]) -> QueryDict:
    """The defaults, overridden by what the request gives (a bare URL gets a full quote)."""
    data = QueryDict(mutable=True)
    data.update(defaults)
    if raw.get("gpu_count"):  # GPUs decide the node count: no default count beside them
        data.pop("node_count", None)
    for key in raw:
        if key != "csrfmiddlewaretoken":
            data.setlist(key, raw.getlist(key))
    return data


def _query(form: ConfigureForm, **changes: Any) -> str:
    """The configure URL of the form's data with ``changes`` (a shareable link)."""
    params = {
        name: form.data.get(name, "")
        for name in form.fields
        if name != "payment_method" and form.data.get(name, "") not in ("", None)
    }
    params.update({k: v for k, v in changes.items()})
    params = {k: v for k, v in params.items() if v not in ("", None)}
    return f"{reverse('configure')}?{urlencode(params)}"


def _alternative_links(form: ConfigureForm, alternatives: list[Any]) -> list[dict[str, Any]]:
    return [{"alt": alt, "url": _query(form, **alt.params)} for alt in alternatives]


def _configure_context(
    request: HttpRequest, raw: QueryDict, *, preview: bool = True
) -> dict[str, Any]:
    """Everything the configure page shows, in at most 3 queries (5 with the user's
    session and user): the availability search (one) and, for a multi-NIC placement, its
    scalable units (one); when the count cannot be placed, one for the earliest
    full-count start instead and one for the capacity of every site and type over the
    period (whether the type has nodes here at all, and the alternatives). Sites, node
    types and price books come from ``billing.shop_data`` (loaded again when they
    change)."""
    data = shop_data()  # sites, node types and price books, kept while unchanged
    sites = list(data.sites)
    node_types = list(data.node_types)
    context: dict[str, Any] = {"form": None, "problem": "", "config": None}
    if not sites:
        context["problem"] = _("No data centre is open for orders yet.")
        return context
    by_code = {s.code: s for s in sites}
    site = by_code.get(raw.get("site", ""), sites[0])
    snapshot = data.snapshot(site)
    data = _form_data(
        raw, ConfigureForm.defaults(site=site, node_types=node_types, snapshot=snapshot)
    )
    form = ConfigureForm(data, sites=sites, node_types=node_types, snapshot=snapshot)
    chosen_type = next((nt for nt in node_types if nt.code == data.get("node_type")), None)
    # The card fields show for a node type that takes cards, or when cards were asked for
    # (so that an error about them has its place).
    show_cards = bool(chosen_type and form.card_options.get(chosen_type.pk)) or bool(
        data.get("card")
    )
    context.update(
        form=form,
        snapshot=snapshot,
        fields_what=[form[n] for n in CONFIG_FIELDS_WHAT],
        fields_cards=[form[n] for n in CONFIG_FIELDS_CARDS] if show_cards else [],
        fields_when=[form[n] for n in CONFIG_FIELDS_WHEN],
        addon_fields=form.addon_fields(),
        wizard_url=f"{reverse('wizard')}?{urlencode({'site': site.pk})}",
        login_url=resolve_url(settings.LOGIN_URL),
        start_note=earliest_start_reason(site, payment_methods_offered()),
    )
    if not form.is_valid():
        return context
    config = form.configuration

    def capacity_checked() -> dict[tuple[int, int], shop.Capacity] | None:
        """Capacity over the period for every site and type (one query); ``None`` when
        the node type has no nodes at the site (the form then says so)."""
        capacity = shop.capacity_for_period(
            sites=sites, start_date=config.start_date, term=config.term, duration=config.duration
        )
        return capacity if form.check_offered(capacity) else None

    if not preview:
        if capacity_checked() is not None:
            context["config"] = config
        return context
    try:
        priced = configuration_price(snapshot=snapshot, config=config)
    except DomainError as exc:
        context["problem"] = exc.message
        return context
    start_at, end_at = rental_period(
        site=config.site,
        start_date=config.start_date,
        term=config.term,
        duration=config.duration,
    )
    found = selectors.availability_search(
        site=config.site,
        node_type=config.node_type,
        count=config.node_count,
        start_at=start_at,
        end_at=end_at,
    )
    # A placement proves the type has nodes here; without one, the capacity of every
    # site and type tells whether it has any, and gives the alternatives.
    capacity = None if found.placement is not None else capacity_checked()
    if found.placement is None and capacity is None:
        return context
    context["config"] = config
    ordered = {code for code, _q in config.addons}
    context.update(
        priced=priced,
        lines=priced_lines_as_rows(snapshot, priced),
        not_ordered=[a for a in snapshot.book.addons.all() if a.code not in ordered],
        start_at=start_at,
        end_at=end_at,
        availability=found,
        gpu_note=form.gpu_note,
        gpu_equivalent=_gpu_equivalent(config, priced),
        hidden=[
            (name, data.get(name))
            for name in form.fields
            if name != "payment_method" and data.get(name) not in (None, "")
        ],
        share_url=_query(form),
        estimate_url=_query(form).replace(reverse("configure"), reverse("configure_estimate"), 1),
    )
    context.update(
        _placement_or_alternatives(
            form, found, capacity=capacity or {}, sites=sites, node_types=node_types
        )
    )
    return context


def _placement_or_alternatives(
    form: ConfigureForm,
    found: Any,
    *,
    capacity: dict[tuple[int, int], shop.Capacity],
    sites: list[Any],
    node_types: list[Any],
) -> dict[str, Any]:
    """The placement preview of a count that fits (its leaves, and for a multi-NIC type
    its scalable units: one query), or the nearest alternatives of one that does not."""
    config = form.configuration
    if found.placement is None:
        return {
            "alternatives": _alternative_links(
                form,
                shop.nearest_alternatives(
                    site=config.site,
                    node_type=config.node_type,
                    node_count=config.node_count,
                    cards_per_node=config.cards_per_node,
                    start_date=config.start_date,
                    availability=found,
                    capacity=capacity,
                    sites=sites,
                    node_types=node_types,
                ),
            )
        }
    leaves = leaf_summary(found.placement)
    units, rails = (0, 0)
    if config.node_type.nic_count > 1:  # only multi-NIC types sit in scalable units
        units, rails = unit_summary(
            leaves, selectors.leaf_units(site=config.site, leaves=[n for n, _c in leaves])
        )
    return {
        "placement": {
            "groups": [
                {
                    "count": config.node_count,
                    "node_type_name": config.node_type.display_name,
                    "fabric": config.node_type.get_fabric_display(),
                    "leaves": leaves,
                    "units": units,
                    "rails": rails,
                    "racks": len(found.placement.racks),
                }
            ]
        }
    }


def _gpu_equivalent(config: Any, priced: Any) -> Any:
    """The bill's nodes (and cards) per GPU-month and GPU-hour, net of discounts."""
    per_node = config.node_type.gpu_count or config.cards_per_node
    amount = sum(
        (ln.net for ln in priced.lines if ln.kind in (LineKind.NODE, LineKind.CARD)), Decimal(0)
    )
    return gpu_equivalent(amount=amount, gpus=config.node_count * per_node, months=priced.months)


def _holds(config: Any) -> list[dict[str, Any]]:
    """For each payment method offered, how long the nodes are held (``hold_terms``)."""
    rows = []
    for method in payment_methods_offered():
        terms = hold_terms(site=config.site, start_date=config.start_date, method=method)
        rows.append(
            {
                "method": method,
                "label": PaymentMethod(method).label,
                "terms": terms,
                "refusal": "" if terms.possible else transfer_refusal(terms),
                "minutes": int(CARD_HOLD.total_seconds() // 60),
            }
        )
    return rows


def _configure_parts(context: dict[str, Any]) -> dict[str, Any]:
    """The configure page's parts that depend only on the configuration, the language
    and the data (``portal.shop.instant_quote`` keeps them), and what the accept card needs."""
    accept = None
    if context.get("priced") and context.get("placement"):
        config, priced = context["config"], context["priced"]
        accept = {
            "hidden": context["hidden"],
            "payment_html": render_to_string(
                "portal/_configure_payment_choices.html", {"form": context["form"]}
            ),
            "gross_total": priced.gross_total,
            "currency": priced.currency,
            "share_url": context["share_url"],
            "site": config.site,
            "start_date": config.start_date,
            "timezone": config.site.timezone,
        }
    # Rendered without the request: no context processor (user, CSRF token, messages)
    # can put one visitor's data into parts that are kept for everyone.
    return {
        "quote": render_to_string("portal/_configure_quote.html", context),
        "end": render_to_string("portal/_configure_end.html", context),
        "accept": accept,
    }


def _configure_render(request: HttpRequest, parts: dict[str, Any]) -> HttpResponse:
    """The page (or, for htmx, its ``#configure`` part) from the parts, with what is drawn
    for each request: the accept card's CSRF token, idempotency key and hold deadlines."""
    context: dict[str, Any] = {
        "parts": {
            "quote": mark_safe(parts["quote"]),  # noqa: S308 - rendered by our templates
            "end": mark_safe(parts["end"]),  # noqa: S308
            "accept": None,
        }
    }
    accept = parts["accept"]
    if accept is not None:
        context["parts"]["accept"] = {
            **accept,
            "payment_html": mark_safe(accept["payment_html"]),  # noqa: S308
        }
        context.update(
            holds=_holds(SimpleNamespace(site=accept["site"], start_date=accept["start_date"])),
            idempotency_key=uuid.uuid4().hex,
            login_url=resolve_url(settings.LOGIN_URL),
        )
    partial = request.htmx and not request.htmx.history_restore_request
    template = "portal/_configure.html" if partial else "portal/configure.html"
    response = render(request, template, context)
    patch_vary_headers(response, ["HX-Request"])
    return response


@require_GET
def configure(request: HttpRequest) -> HttpResponse:
    """Configure an order and see its instant quote: the full bill, the placement preview,
    or how many nodes are free and the nearest alternatives. GET only, so every
    configuration is a shareable link; htmx swaps the form and the quote on each change.
    The parts that depend only on the configuration and the data are kept per
    configuration (``portal.shop.instant_quote``)."""
    key = instant_quote.parts_key(request.GET)
    parts = instant_quote.parts_get(key)
    if parts is None:
        parts = _configure_parts(_configure_context(request, request.GET))
        instant_quote.parts_keep(key, parts)
    return _configure_render(request, parts)


@require_POST
def configure_accept(request: HttpRequest) -> HttpResponse:
    """Accept the instant quote: an order for the customer's active organisation
    (``accounts``), holding the nodes until its payment deadline.

    Anonymous visitors log in first (and come back to the same configuration). When the
    nodes went to someone else, the configure page says so and offers alternatives.
    """
    # Not ``customer_required``: its log-in link would come back to this POST-only URL;
    # here the customer comes back to the configure page with the same configuration.
    back = f"{reverse('configure')}?{urlencode(_form_data(request.POST, {}))}"
    if not request.user.is_authenticated:
        return redirect_to_login(back)
    if not accounts_selectors.email_verified(request.user):
        messages.warning(
            request, _("Verify your email address first: open the link in the email we sent.")
        )
        return redirect(back)
    organisation = accounts_selectors.current_organisation(request)
    if organisation is None:
        messages.error(
            request,
            _("Your account does not belong to a customer organisation yet, so it cannot order."),
        )
        return redirect(back)
    context = _configure_context(request, request.POST, preview=False)
    form, config = context["form"], context["config"]
    if config is None:
        return _configure_render(
            request, _configure_parts(_configure_context(request, request.POST))
        )
    try:
        order = order_self_service(
            user=request.user,
            organisation=organisation,
            site=config.site,
            node_type=config.node_type,
            node_count=config.node_count,
            card_gpu_model_id=config.card_gpu_model_id,
            cards_per_node=config.cards_per_node,
            term=config.term,
            duration=config.duration,
            start_date=config.start_date,
            addons=dict(config.addons),
            payment_method=form.cleaned_data.get("payment_method") or payment_methods_offered()[0],
            ip=client_ip(request),
            idempotency_key=request.POST.get("idempotency_key", ""),
        )
    except DomainError as exc:
        context = _configure_context(request, request.POST)
        context["accept_error"] = exc.message
        if isinstance(exc, CapacityTaken):
            context["alternatives"] = _alternative_links(context["form"], exc.alternatives)
        elif isinstance(exc, NotEnoughCapacity):
            context.setdefault("alternatives", [])
        return _configure_render(request, _configure_parts(context))
    try:
        return redirect(reverse("order_pay", args=[order.number]))
    except NoReverseMatch:
        messages.success(
            request,
            _(
                "Order %(number)s is placed and its nodes are held until %(due)s. Payment "
                "opens here soon."
            )
            % {
                "number": order.number,
                "due": order.payment_due_at.astimezone(config.site.tzinfo).strftime(
                    "%Y-%m-%d %H:%M"
                ),
            },
        )
        return redirect("catalog")


# --- Anonymous estimate (a non-binding quote PDF) -------------------------------------------

AUTO_DOWNLOAD = "download"  # query flag: the status page starts the download when ready


@require_GET
def configure_estimate(request: HttpRequest) -> HttpResponse:
    """A quote PDF of exactly the configuration on screen, for anyone: no account, no
    nodes held, no quote number. The documents queue renders it; the page that follows
    says it is being prepared and offers the file when it is there."""
    context = _configure_context(request, request.GET)
    config = context.get("config")
    if config is None or not context.get("priced"):
        messages.error(request, estimates.estimate_refused_message())
        return redirect(f"{reverse('configure')}?{urlencode(_form_data(request.GET, {}))}")
    try:
        ticket = estimates.estimate_request(
            config=config,
            book=context["snapshot"].book,
            language=get_language() or "zh-hans",
            reopen_path=context["share_url"],
            client=client_ip(request) or "unknown",
        )
    except estimates.EstimateRateLimited as exc:
        response = render(
            request,
            "portal/estimate.html",
            {"estimate": None, "refusal": exc.message, "back_url": context["share_url"]},
            status=429,
        )
        response["Retry-After"] = str(estimates.RATE_WINDOW_S)
        return response
    # The page that follows downloads the file by itself once it is ready (issue 25:
    # the quote PDF in three clicks, whether or not the queue has it ready at once).
    return redirect(f"{reverse('estimate_status', args=[ticket.estimate.key])}?{AUTO_DOWNLOAD}=1")


@require_GET
def estimate_status(request: HttpRequest, key: str) -> HttpResponse:
    """ "Being prepared" until the documents queue has stored the PDF (htmx polls this
    page), then the link to download it. One query."""
    estimate = shop_selectors.estimate_by_key(key)
    if estimate is None:
        raise Http404
    auto = request.GET.get(AUTO_DOWNLOAD) == "1"
    context = {
        "estimate": estimate,
        "back_url": estimate.reopen_path,
        # While preparing, htmx polls this same address; when ready, a hidden frame
        # fetches the attachment, so the download starts without another click.
        "poll_url": request.get_full_path(),
        "auto_download": auto and estimate.is_ready,
    }
    partial = request.htmx and not request.htmx.history_restore_request
    template = "portal/_estimate.html" if partial else "portal/estimate.html"
    response = render(request, template, context)
    patch_vary_headers(response, ["HX-Request"])
    return response


@require_GET
@xframe_options_sameorigin  # the status page's hidden frame fetches it (an attachment)
def estimate_pdf(request: HttpRequest, key: str) -> HttpResponse:
    """The stored estimate PDF (never rendered here: 404 until the queue has made it)."""
    estimate = shop_selectors.estimate_by_key(key)
    if estimate is None or not estimate.is_ready:
        raise Http404
    day = estimate.created_at.date().isoformat()
    return FileResponse(
        estimate.file.open("rb"),
        as_attachment=True,
        filename=f"estimate-{day}-{estimate.key[:8]}.pdf",
        content_type="application/pdf",
    )
