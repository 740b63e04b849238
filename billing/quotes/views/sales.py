"""Staff pages for sales: list, create, edit, approve, send and revise quotes.

Only logged-in staff with a sales profile (and superusers) get in. Views parse input with
the forms in ``billing.quotes.forms``, call a service or a selector and render; every business
rule (limits, transitions, holds) stays in ``billing.quotes.services``, whose
``DomainError`` becomes a message.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from billing.models import QUOTE_EDITABLE, Quote, QuoteStatus, SalesProfile, Term
from billing.quotes import selectors as quote_selectors
from billing.quotes import services as quote_services
from billing.quotes.forms import (
    BaseLineFormSet,
    CommentForm,
    LineChoices,
    QuoteFilterForm,
    QuoteForm,
    line_choices,
    line_formset,
    line_initial,
    today_at,
)
from billing.quotes.views import documents
from core.errors import DomainError
from inventory.models import Site

PAGE_SIZE = 25
UNREVISABLE = (QuoteStatus.ACCEPTED, QuoteStatus.SUPERSEDED)
SHARED = (QuoteStatus.SENT, QuoteStatus.ACCEPTED, QuoteStatus.REJECTED, QuoteStatus.EXPIRED)
STATUS_LABELS = dict(QuoteStatus.choices)

View = Callable[..., HttpResponse]


# --- Access -----------------------------------------------------------------------------


def sales_profile(user: Any) -> SalesProfile | None:
    """The user's sales profile (cached on the user by the reverse one-to-one)."""
    try:
        return user.sales_profile
    except SalesProfile.DoesNotExist:
        return None


def is_sales_user(user: Any) -> bool:
    if not user.is_authenticated or not user.is_active:
        return False
    return bool(user.is_superuser or (user.is_staff and sales_profile(user) is not None))


def sales_required(view: View) -> View:
    """Anonymous: to the login page. Logged in without a sales role: 403."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            to_login = redirect_to_login(request.get_full_path())
            if getattr(request, "htmx", False):  # a live preview after the session ended
                return HttpResponseClientRedirect(to_login.url)
            return to_login
        if not is_sales_user(request.user):
            raise PermissionDenied(_("The sales pages are for the sales team."))
        return view(request, *args, **kwargs)

    return wrapper


# --- Helpers ----------------------------------------------------------------------------


def _chosen_site(request: HttpRequest) -> Site | None:
    """The site the create form prices at: posted, or ``?site=``, or the first one."""
    raw = request.POST.get("site") or request.GET.get("site") or ""
    site = Site.objects.filter(pk=int(raw)).first() if raw.isascii() and raw.isdigit() else None
    return site or Site.objects.order_by("pk").first()


def _quote_or_404(pk: int) -> Quote:
    quote = Quote.objects.select_related("site", "organisation", "created_by").filter(pk=pk)
    found = quote.first()
    if found is None:
        raise Http404
    return found


def _form_page(
    request: HttpRequest,
    *,
    form: QuoteForm,
    lines: BaseLineFormSet,
    choices: LineChoices,
    quote: Quote | None = None,
) -> HttpResponse:
    preview_url = reverse("sales:quote_preview")
    if quote is not None:
        preview_url += f"?quote={quote.pk}"
    return render(
        request,
        "billing/sales/quote_form.html",
        {
            "form": form,
            "lines": lines,
            "choices": choices,
            "quote": quote,
            "preview_url": preview_url,
            "limit": quote_services.discount_limit(request.user),
        },
    )


# --- List -------------------------------------------------------------------------------


@sales_required
@require_GET
def quote_list(request: HttpRequest) -> HttpResponse:
    filters = QuoteFilterForm(request.GET or None)
    quotes = quote_selectors.quote_list(**filters.selector_kwargs())
    page = Paginator(quotes, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "billing/sales/quote_list.html", {"filters": filters, "page": page})


# --- Create, edit, live preview ---------------------------------------------------------


@sales_required
@require_http_methods(["GET", "POST"])
def quote_create(request: HttpRequest) -> HttpResponse:
    site = _chosen_site(request)
    choices = line_choices(site)
    if request.method == "POST":
        form = QuoteForm(request.POST)
        lines = line_formset(data=request.POST, choices=choices)
        if form.is_valid() and lines.is_valid():
            data = form.cleaned_data
            try:
                quote = quote_services.quote_create(
                    site=data["site"],
                    organisation=data["organisation"],
                    contact_name=data["contact_name"],
                    contact_email=data["contact_email"],
                    term=data["term"],
                    duration=data["duration"],
                    start_date=data["start_date"],
                    items=lines.specs(),
                    actor=request.user,
                    extra_discount=form.extra_discount_fraction(),
                    language=data["language"],
                    notes=data["notes"],
                )
            except DomainError as exc:
                form.add_error(None, exc.message)
            else:
                messages.success(
                    request,
                    _("Quote %(number)s v%(version)s was created as a draft.")
                    % {"number": quote.number, "version": quote.version},
                )
                return redirect("sales:quote_detail", pk=quote.pk)
    else:
        form = QuoteForm(
            initial={
                "site": site.pk if site else None,
                "language": "zh-hans",
                "term": Term.MONTH,
                "duration": 1,
                "start_date": today_at(site),
                "extra_discount": Decimal("0"),
            }
        )
        lines = line_formset(choices=choices)
    return _form_page(request, form=form, lines=lines, choices=choices)


@sales_required
@require_http_methods(["GET", "POST"])
def quote_edit(request: HttpRequest, pk: int) -> HttpResponse:
    quote = _quote_or_404(pk)
    if quote.status not in QUOTE_EDITABLE:
        return render(
            request,
            "billing/sales/quote_locked.html",
            {"quote": quote, "can_revise": _can_revise(quote)},
            status=409 if request.method == "POST" else 200,
        )
    choices = line_choices(quote.site)
    initial = QuoteForm.initial_for(quote)
    if request.method == "POST":
        form = QuoteForm(request.POST, quote=quote, initial=initial)
        lines = line_formset(data=request.POST, choices=choices, extra=0)
        if form.is_valid() and lines.is_valid():
            data = form.cleaned_data
            try:
                quote = quote_services.quote_update(
                    quote=quote,
                    actor=request.user,
                    organisation=data["organisation"],
                    contact_name=data["contact_name"],
                    contact_email=data["contact_email"],
                    term=data["term"],
                    duration=data["duration"],
                    start_date=data["start_date"],
                    items=lines.specs(),
                    extra_discount=form.extra_discount_fraction(),
                    language=data["language"],
                    notes=data["notes"],
                    valid_until=data["valid_until"],
                )
            except DomainError as exc:
                form.add_error(None, exc.message)
            else:
                messages.success(
                    request,
                    _("Quote %(number)s v%(version)s was saved.")
                    % {"number": quote.number, "version": quote.version},
                )
                return redirect("sales:quote_detail", pk=quote.pk)
    else:
        form = QuoteForm(quote=quote, initial=initial)
        lines = line_formset(
            initial=line_initial(quote_services.quote_items(quote)), choices=choices, extra=0
        )
    return _form_page(request, form=form, lines=lines, choices=choices, quote=quote)


@sales_required
@require_POST
def quote_preview(request: HttpRequest) -> HttpResponse:
    """The priced lines for the form as it stands; saves nothing."""
    raw = request.GET.get("quote", "")
    quote = _quote_or_404(int(raw)) if raw.isascii() and raw.isdigit() else None
    site = quote.site if quote is not None else _chosen_site(request)
    form = QuoteForm(
        request.POST, quote=quote, initial=QuoteForm.initial_for(quote) if quote else None
    )
    lines = line_formset(data=request.POST, choices=line_choices(site), extra=0 if quote else 1)
    form.is_valid()
    lines.is_valid()
    limit = quote_services.discount_limit(request.user)
    context: dict[str, Any] = {"limit": limit, "problem": "", "priced": None, "discount": None}
    specs = lines.specs()
    context["incomplete"] = sum(
        1 for f in lines.forms if f.has_changed() and not f.is_valid()
    ) + int(not lines.management_form.is_valid())
    if not form.pricing_ready():
        context["problem"] = form.pricing_error() or _(
            "Fill in the data centre, term, duration, start date and discount to see prices."
        )
    elif not specs:
        context["problem"] = _("Add a line to see prices.")
    else:
        discount = form.extra_discount_fraction()
        context["discount"] = discount
        context["needs_approval"] = discount > limit
        try:
            snapshot, priced = quote_services.quote_price_preview(
                site=form.cleaned_data["site"],
                term=form.cleaned_data["term"],
                duration=form.cleaned_data["duration"],
                start_date=form.cleaned_data["start_date"],
                items=specs,
                extra_discount=discount,
            )
        except DomainError as exc:
            context["problem"] = exc.message
        else:
            wanted: dict[int, int] = {}
            for spec in specs:
                if spec.kind == "node" and spec.node_type_id:
                    wanted[spec.node_type_id] = wanted.get(spec.node_type_id, 0) + int(
                        spec.quantity
                    )
            context.update(
                priced=priced,
                lines=quote_services.priced_lines_as_rows(snapshot, priced),
                currency=priced.currency,
                book=snapshot.book,
                shortages=quote_services.capacity_shortages(
                    site=form.cleaned_data["site"],
                    term=form.cleaned_data["term"],
                    duration=form.cleaned_data["duration"],
                    start_date=form.cleaned_data["start_date"],
                    wanted=wanted,
                ),
            )
    return render(request, "billing/sales/_preview.html", context)


# --- Detail and actions -----------------------------------------------------------------


def _can_revise(quote: Quote) -> bool:
    return quote.status not in UNREVISABLE and not Quote.objects.filter(previous=quote).exists()


def _actions(quote: Quote, user: Any) -> dict[str, bool]:
    """Which buttons to offer; the services check again when one is pressed."""
    limit = quote_services.discount_limit(user)
    profile = sales_profile(user)
    status = quote.status
    return {
        "edit": status in QUOTE_EDITABLE,
        "request_approval": status == QuoteStatus.DRAFT and quote.extra_discount > limit,
        "decide": status == QuoteStatus.PENDING_APPROVAL
        and profile is not None
        and profile.can_approve
        and quote.extra_discount <= profile.max_discount,
        "send": (status == QuoteStatus.DRAFT and quote.extra_discount <= limit)
        or status == QuoteStatus.APPROVED,
        "revise": _can_revise(quote),
    }


@sales_required
@require_GET
def quote_detail(request: HttpRequest, pk: int) -> HttpResponse:
    try:
        quote = quote_selectors.quote_detail(pk=pk)
    except Quote.DoesNotExist as exc:
        raise Http404 from exc
    customer_link = ""
    if quote.status in SHARED:
        with translation.override(quote.language):
            customer_link = request.build_absolute_uri(reverse("quote_public", args=[quote.token]))
    events = [
        {
            "event": e,
            "source": STATUS_LABELS.get(e.from_status, e.from_status),
            "target": STATUS_LABELS.get(e.to_status, e.to_status),
        }
        for e in quote.events.all()
    ]
    return render(
        request,
        "billing/sales/quote_detail.html",
        {
            "quote": quote,
            "lines": quote.lines.all(),
            "events": events,
            "versions": Quote.objects.filter(number=quote.number).order_by("version"),
            "actions": _actions(quote, request.user),
            "limit": quote_services.discount_limit(request.user),
            "customer_link": customer_link,
            # A draft for more nodes than are free says so now, not only at Send.
            "shortages": quote_services.quote_capacity_shortages(quote)
            if quote.status in QUOTE_EDITABLE
            else [],
            "comment_form": CommentForm(),
            "pdf_languages": settings.LANGUAGES,
            # A quote the customer could not accept is not sent; the page says why first.
            "send_refusal": quote_services.quote_send_refusal(quote)
            if quote.status in (QuoteStatus.DRAFT, QuoteStatus.APPROVED)
            else "",
        },
    )


def _act(
    request: HttpRequest, pk: int, action: Callable[[Quote, str], Quote], done: str
) -> HttpResponse:
    """Run one action on a quote; a refusal becomes an error message on the detail page."""
    quote = _quote_or_404(pk)
    form = CommentForm(request.POST)
    comment = form.cleaned_data["comment"] if form.is_valid() else ""
    try:
        result = action(quote, comment)
    except DomainError as exc:
        messages.error(request, exc.message)
        return redirect("sales:quote_detail", pk=quote.pk)
    messages.success(request, done % {"number": result.number, "version": result.version})
    return redirect("sales:quote_detail", pk=result.pk)


@sales_required
@require_POST
def quote_request_approval(request: HttpRequest, pk: int) -> HttpResponse:
    return _act(
        request,
        pk,
        lambda q, c: quote_services.quote_request_approval(quote=q, actor=request.user, comment=c),
        _("Quote %(number)s v%(version)s is waiting for a sales manager's approval."),
    )


@sales_required
@require_POST
def quote_approve(request: HttpRequest, pk: int) -> HttpResponse:
    return _act(
        request,
        pk,
        lambda q, c: quote_services.quote_approve(quote=q, actor=request.user, comment=c),
        _("The discount on quote %(number)s v%(version)s is approved."),
    )


@sales_required
@require_POST
def quote_decline(request: HttpRequest, pk: int) -> HttpResponse:
    return _act(
        request,
        pk,
        lambda q, c: quote_services.quote_decline_approval(quote=q, actor=request.user, comment=c),
        _("The discount on quote %(number)s v%(version)s was not approved; it is a draft again."),
    )


@sales_required
@require_POST
def quote_send(request: HttpRequest, pk: int) -> HttpResponse:
    return _act(
        request,
        pk,
        lambda q, _c: quote_services.quote_send(quote=q, actor=request.user),
        _(
            "Quote %(number)s v%(version)s was sent: its nodes are held until it expires and "
            "the customer gets it by email."
        ),
    )


@sales_required
@require_POST
def quote_revise(request: HttpRequest, pk: int) -> HttpResponse:
    return _act(
        request,
        pk,
        lambda q, _c: quote_services.quote_revise(quote=q, actor=request.user),
        _("Version %(version)s of quote %(number)s was created as a draft: edit it and send it."),
    )


@sales_required
@require_GET
def quote_pdf(request: HttpRequest, pk: int) -> HttpResponse:
    quote = _quote_or_404(pk)
    codes = [code for code, _name in settings.LANGUAGES]
    language = request.GET.get("language", "")
    language = language if language in codes else quote.language
    return documents.quote_pdf_response(
        request,
        quote=quote,
        language=language,
        filename=f"{quote.number}-v{quote.version}-{language}.pdf",
        back_url=reverse("sales:quote_detail", args=[quote.pk]),
    )
