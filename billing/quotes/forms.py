"""Forms for the staff sales pages: parse and check input; the services decide the rest."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Q, QuerySet
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from accounts.models import Organisation
from billing.models import ItemKind, PriceBook, QuoteStatus, Term
from billing.pricing import engine as pricing
from billing.pricing import selectors
from billing.pricing.periods import site_today
from billing.quotes.services import ItemSpec
from core.errors import DomainError
from core.forms import NameField
from inventory.models import GPUModel, NodeType, Site

HUNDRED = Decimal("100")

# --- What a line may pick, from the price book in force at the chosen site -------------


@dataclass(frozen=True)
class LineChoices:
    """The node types, GPU cards and add-ons a site's price book in force offers."""

    book: PriceBook | None
    node_type_ids: frozenset[int] = frozenset()
    card_model_ids: frozenset[int] = frozenset()
    addons: tuple[tuple[str, str], ...] = ()
    problem: str = ""


def line_choices(site: Site | None) -> LineChoices:
    """What the price book in force at ``site`` offers (nothing when there is none)."""
    if site is None:
        return LineChoices(book=None)
    try:
        book = selectors.price_book_in_force(site=site)
    except DomainError as exc:
        return LineChoices(book=None, problem=exc.message)
    return LineChoices(
        book=book,
        node_type_ids=frozenset(book.node_prices.values_list("node_type_id", flat=True)),
        card_model_ids=frozenset(book.card_prices.values_list("gpu_model_id", flat=True)),
        addons=tuple(
            (a.code, a.localized_name())
            for a in book.addons.order_by("position", "code").only("code", "name", "name_zh")
        ),
    )


# --- The quote's header -----------------------------------------------------------------


class DateInput(forms.DateInput):
    input_type = "date"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(format="%Y-%m-%d", **kwargs)


class QuoteForm(forms.Form):
    """Customer, site, term and the rest of a quote's header.

    ``quote`` given: the edit form (the site is fixed; the validity date can change).
    """

    organisation = forms.ModelChoiceField(
        label=_("Customer organisation"), queryset=Organisation.objects.none()
    )
    contact_name = NameField(label=_("Contact name"), max_length=200)
    contact_email = forms.EmailField(label=_("Contact email"))
    language = forms.ChoiceField(label=_("Quote language"), choices=settings.LANGUAGES)
    site = forms.ModelChoiceField(label=_("Data centre"), queryset=Site.objects.none())
    term = forms.ChoiceField(label=_("Term"), choices=Term.choices)
    duration = forms.IntegerField(
        label=_("Duration"),
        min_value=1,
        help_text=_("In units of the term: days 1–89, months 1–36, quarters 1–12, years 1–5."),
    )
    start_date = forms.DateField(label=_("Start date"), widget=DateInput())
    valid_until = forms.DateField(label=_("Valid until"), widget=DateInput(), required=False)
    extra_discount = forms.DecimalField(
        label=_("Extra discount (%)"),
        min_value=Decimal("0"),
        max_value=Decimal("99.99"),
        decimal_places=2,
        # 5 digits, so that 100 or 250 meets only the bound below: one error, not two.
        max_digits=5,
        error_messages={
            "max_value": _("The extra discount must be below 100 percent (at most 99.99)."),
            "max_digits": _("The extra discount must be below 100 percent (at most 99.99)."),
            "max_whole_digits": _("The extra discount must be below 100 percent (at most 99.99)."),
        },
        initial=Decimal("0"),
        help_text=_("In percent: 5 means 5 percent off the discounted price."),
    )
    notes = forms.CharField(
        label=_("Notes for the customer"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
    )

    def __init__(self, *args: Any, quote: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.quote = quote
        self.fields["organisation"].queryset = Organisation.objects.order_by("name")
        self.fields["site"].queryset = Site.objects.order_by("code")
        if quote is None:
            del self.fields["valid_until"]
        else:
            self.fields["site"].disabled = True
            self.fields["site"].help_text = _("A quote stays at its site; make a new one.")
            self.fields["valid_until"].required = True

    @classmethod
    def initial_for(cls, quote: Any) -> dict[str, Any]:
        return {
            "organisation": quote.organisation_id,
            "contact_name": quote.contact_name,
            "contact_email": quote.contact_email,
            "language": quote.language,
            "site": quote.site_id,
            "term": quote.term,
            "duration": quote.duration,
            "start_date": quote.start_date,
            "valid_until": quote.valid_until,
            "extra_discount": (quote.extra_discount * HUNDRED).normalize(),
            "notes": quote.notes,
        }

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        term, duration = data.get("term"), data.get("duration")
        if term and duration is not None:
            lo, hi = pricing.TERM_DURATION[pricing.Term(term)]
            if not lo <= duration <= hi:
                self.add_error(
                    "duration",
                    _("A %(term)s term runs from %(lo)s to %(hi)s; %(n)s is outside that.")
                    % {"term": Term(term).label, "lo": lo, "hi": hi, "n": duration},
                )
        site = data.get("site")
        if site is not None:
            today = site_today(site)
            start = data.get("start_date")
            if start is not None and start < today:
                self.add_error(
                    "start_date",
                    _("The start date is in the past (today at %(site)s is %(today)s).")
                    % {"site": site.display_name, "today": today.isoformat()},
                )
            valid_until = data.get("valid_until")
            if valid_until is not None and valid_until < today:
                self.add_error("valid_until", _("The validity date is in the past."))
        return data

    def extra_discount_fraction(self) -> Decimal:
        """The discount as the services take it: 5 (%) becomes 0.05."""
        return (self.cleaned_data["extra_discount"] / HUNDRED).quantize(Decimal("0.0001"))

    def pricing_error(self) -> str:
        """The first error of a price-setting field that was filled in wrongly (one
        message for the live preview), or "" when those fields are only missing."""
        for name in ("site", "term", "duration", "start_date", "extra_discount"):
            if self.data.get(name) and self.errors.get(name):
                return f"{self.fields[name].label}: {self.errors[name][0]}"
        return ""

    def pricing_ready(self) -> bool:
        """Whether the fields that set the price are valid (for the live preview)."""
        return all(
            name in self.cleaned_data
            for name in ("site", "term", "duration", "start_date", "extra_discount")
        )


# --- Lines ------------------------------------------------------------------------------


class QuoteLineForm(forms.Form):
    kind = forms.ChoiceField(label=_("Kind"), choices=ItemKind.choices, initial=ItemKind.NODE)
    node_type = forms.ModelChoiceField(
        label=_("Node type"), queryset=NodeType.objects.none(), required=False
    )
    quantity = forms.DecimalField(
        label=_("Quantity"), max_digits=10, decimal_places=2, required=False
    )
    card_gpu_model = forms.ModelChoiceField(
        label=_("GPU cards"), queryset=GPUModel.objects.none(), required=False
    )
    cards_per_node = forms.IntegerField(
        label=_("Cards per node"), min_value=0, max_value=16, required=False
    )
    addon_code = forms.ChoiceField(label=_("Add-on"), choices=(), required=False)
    description = forms.CharField(label=_("Description"), max_length=300, required=False)
    unit_price = forms.DecimalField(
        label=_("Unit price"),
        max_digits=settings.MONEY_MAX_DIGITS,
        decimal_places=settings.MONEY_DECIMAL_PLACES,
        required=False,
    )
    discountable = forms.BooleanField(label=_("Sales discount applies"), required=False)

    def __init__(self, *args: Any, choices: LineChoices | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = choices or LineChoices(book=None)
        self.fields["node_type"].queryset = NodeType.objects.filter(
            pk__in=choices.node_type_ids
        ).order_by("name")
        self.fields["card_gpu_model"].queryset = GPUModel.objects.filter(
            pk__in=choices.card_model_ids
        ).order_by("name")
        self.fields["addon_code"].choices = [("", "---------"), *choices.addons]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        kind = data.get("kind")
        quantity = data.get("quantity")
        if kind == ItemKind.NODE:
            if not data.get("node_type") and "node_type" not in self.errors:
                self.add_error("node_type", _("Choose a node type."))
            if "quantity" not in self.errors and (
                quantity is None or quantity < 1 or quantity != int(quantity)
            ):
                self.add_error("quantity", _("Nodes are rented whole: give a whole number ≥ 1."))
            model, cards = data.get("card_gpu_model"), data.get("cards_per_node") or 0
            if model and cards < 1:
                self.add_error("cards_per_node", _("Say how many cards per node (at least 1)."))
            if cards and not model and "card_gpu_model" not in self.errors:
                self.add_error("card_gpu_model", _("Choose the GPU card model."))
        elif kind == ItemKind.ADDON:
            if not data.get("addon_code") and "addon_code" not in self.errors:
                self.add_error("addon_code", _("Choose an add-on."))
            if "quantity" not in self.errors and (quantity is None or quantity <= 0):
                self.add_error("quantity", _("The quantity must be more than 0."))
        elif kind == ItemKind.CUSTOM:
            if not data.get("description", "").strip():
                self.add_error("description", _("A custom line needs a description."))
            price = data.get("unit_price")
            if "unit_price" not in self.errors and (price is None or price < 0):
                self.add_error("unit_price", _("Give a unit price of 0 or more."))
            if "quantity" not in self.errors and (quantity is None or quantity <= 0):
                self.add_error("quantity", _("The quantity must be more than 0."))
        return data

    def to_spec(self) -> ItemSpec:
        data = self.cleaned_data
        kind = data["kind"]
        if kind == ItemKind.NODE:
            model = data.get("card_gpu_model")
            return ItemSpec(
                kind=kind,
                quantity=data["quantity"],
                node_type_id=data["node_type"].pk,
                card_gpu_model_id=model.pk if model else None,
                cards_per_node=(data.get("cards_per_node") or 0) if model else 0,
            )
        if kind == ItemKind.ADDON:
            return ItemSpec(kind=kind, quantity=data["quantity"], addon_code=data["addon_code"])
        return ItemSpec(
            kind=kind,
            quantity=data["quantity"],
            description=data["description"].strip(),
            unit_price=data["unit_price"],
            discountable=data.get("discountable", False),
        )


class BaseLineFormSet(forms.BaseFormSet):
    def specs(self) -> list[ItemSpec]:
        """The lines that were filled in and not deleted, in order (after is_valid)."""
        initial = self.initial_form_count()
        return [
            form.to_spec()
            for i, form in enumerate(self.forms)
            if (i < initial or form.has_changed())
            and form.is_valid()
            and not self._should_delete_form(form)
        ]

    def clean(self) -> None:
        super().clean()
        if any(self.errors):
            return
        if not self.specs():
            raise forms.ValidationError(_("Add at least one line to the quote."))


LINES_PREFIX = "lines"


def line_formset(
    *,
    data: Any = None,
    initial: list[dict[str, Any]] | None = None,
    choices: LineChoices,
    extra: int = 1,
) -> BaseLineFormSet:
    formset_class = forms.formset_factory(
        QuoteLineForm, formset=BaseLineFormSet, extra=extra, can_delete=True
    )
    return formset_class(
        data=data, initial=initial, prefix=LINES_PREFIX, form_kwargs={"choices": choices}
    )


def line_initial(items: list[ItemSpec]) -> list[dict[str, Any]]:
    return [
        {
            "kind": item.kind,
            "node_type": item.node_type_id,
            "quantity": item.quantity.normalize() if item.quantity is not None else None,
            "card_gpu_model": item.card_gpu_model_id,
            "cards_per_node": item.cards_per_node or None,
            "addon_code": item.addon_code,
            "description": item.description,
            "unit_price": item.unit_price,
            "discountable": item.discountable,
        }
        for item in items
    ]


# --- The list's filters and the actions' comments ---------------------------------------


def salespeople() -> QuerySet[Any]:
    return (
        get_user_model()
        .objects.filter(Q(sales_profile__isnull=False) | Q(quotes_created__isnull=False))
        .distinct()
        .order_by("username")
    )


class QuoteFilterForm(forms.Form):
    status = forms.ChoiceField(
        label=_("Status"), choices=[("", _("All statuses")), *QuoteStatus.choices], required=False
    )
    salesperson = forms.ModelChoiceField(
        label=_("Salesperson"),
        queryset=get_user_model().objects.none(),
        required=False,
        empty_label=_("Everyone"),
    )
    customer = forms.ModelChoiceField(
        label=_("Customer"),
        queryset=Organisation.objects.none(),
        required=False,
        empty_label=_("All customers"),
    )
    q = forms.CharField(label=_("Search"), required=False, max_length=100)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["salesperson"].queryset = salespeople()
        self.fields["customer"].queryset = Organisation.objects.order_by("name")
        self.fields["q"].widget.attrs["placeholder"] = _("Number or customer")

    def selector_kwargs(self) -> dict[str, Any]:
        if not self.is_valid():
            return {}
        data = self.cleaned_data
        return {
            "status": data.get("status") or None,
            "created_by": data["salesperson"].pk if data.get("salesperson") else None,
            "organisation": data["customer"].pk if data.get("customer") else None,
            "search": (data.get("q") or "").strip() or None,
        }


class CommentForm(forms.Form):
    comment = forms.CharField(
        label=_("Comment"), required=False, max_length=2000, widget=forms.Textarea({"rows": 2})
    )


def today_at(site: Site | None) -> date:
    """Today at the site (the default start date of a new quote)."""
    return site_today(site) if site is not None else timezone.localdate()
