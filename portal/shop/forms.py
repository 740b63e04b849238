"""Forms of the customer-facing pages."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

from django import forms
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from billing.models import PaymentMethod, Term
from billing.pricing.engine import TERM_DURATION
from billing.pricing.engine import Term as PricingTerm
from billing.pricing.terms import earliest_start_for, payment_methods_offered
from billing.shop.selfservice import (
    Configuration,
    ConfigurationInvalid,
    configuration_check,
    term_units,
)
from inventory import sizing
from inventory.models import Site


def _default_start() -> Any:
    return timezone.localdate() + timedelta(days=7)


class WizardForm(forms.Form):
    """The sizing wizard's questions; the answers are checked by inventory.sizing."""

    mode = forms.ChoiceField(
        label=_("What for"),
        choices=[("train", _("Training")), ("infer", _("Inference (serving)"))],
        initial="train",
    )
    arch = forms.ChoiceField(
        label=_("Architecture"),
        required=False,
        choices=[("", _("Other: give the size below"))]
        + [(code, a.name) for code, a in sizing.ARCHITECTURES.items()],
    )
    params_billion = forms.DecimalField(
        label=_("Model size (billions of parameters)"),
        required=False,
        max_digits=12,
        decimal_places=3,
        help_text=_("e.g. 7, 70 or 175"),
    )
    precision = forms.ChoiceField(
        label=_("Precision"),
        choices=[
            ("bf16", "bf16"),
            ("fp16", "fp16"),
            ("fp8", "fp8"),
            ("fp32", "fp32"),
            ("int8", _("int8 (inference)")),
            ("int4", _("int4 (inference)")),
        ],
        initial="bf16",
    )
    optimizer = forms.ChoiceField(
        label=_("Optimizer"),
        choices=[
            ("adamw", "AdamW"),
            ("sgd", _("SGD with momentum")),
            ("adafactor", "Adafactor"),
            ("adam8bit", _("8-bit Adam")),
        ],
        initial="adamw",
    )
    zero_stage = forms.TypedChoiceField(
        label=_("DeepSpeed ZeRO stage"),
        choices=[(0, "0"), (1, "1"), (2, "2"), (3, "3")],
        coerce=int,
        initial=3,
    )
    offload = forms.ChoiceField(
        label=_("Offload optimizer states"),
        choices=[("none", _("No")), ("cpu", _("To host RAM")), ("nvme", _("To NVMe"))],
        initial="none",
    )
    seq_len = forms.IntegerField(
        label=_("Sequence length (training)"), initial=4096, min_value=1, max_value=1_048_576
    )
    micro_batch = forms.IntegerField(
        label=_("Micro-batch per GPU"), initial=1, min_value=1, max_value=4096
    )
    checkpointing = forms.BooleanField(
        label=_("Activation checkpointing"), required=False, initial=True
    )
    context = forms.IntegerField(
        label=_("Context length (inference)"), initial=8192, min_value=1, max_value=1_048_576
    )
    concurrency = forms.IntegerField(
        label=_("Concurrent sequences (inference)"), initial=1, min_value=1, max_value=100_000
    )
    kv_precision = forms.ChoiceField(
        label=_("KV cache precision (inference)"),
        choices=[
            ("auto", _("As the activations (bf16/fp16): the engines' default")),
            ("fp8", _("fp8 (--kv-cache-dtype fp8)")),
        ],
        initial="auto",
        required=False,
    )
    mfu = forms.DecimalField(
        label=_("MFU (assumed)"),
        initial=sizing.DEFAULT_MFU,
        min_value=Decimal("0.01"),
        max_value=Decimal("1"),
        max_digits=4,
        decimal_places=2,
        help_text=_("Share of the measured GEMM throughput a step sustains; 0.40 by default."),
    )
    target_tokens_billion = forms.DecimalField(
        label=_("Training tokens (billions, optional)"),
        required=False,
        max_digits=14,
        decimal_places=3,
    )
    target_days = forms.DecimalField(
        label=_("Finish within (days, optional)"), required=False, max_digits=8, decimal_places=2
    )
    site = forms.ModelChoiceField(
        label=_("Data centre"), queryset=Site.objects.order_by("code"), empty_label=None
    )
    start_date = forms.DateField(
        label=_("Start date"),
        initial=_default_start,
        widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d"),
    )

    def __init__(self, data: Any = None, *args: Any, **kwargs: Any) -> None:
        if data is not None:
            # Fields left out of a link take their initial value (old links keep working;
            # an unticked box is sent as absence, so only a full form can untick it).
            data = data.copy()
            for name in ("mode", "offload", "seq_len", "micro_batch", "context", "concurrency"):
                if not data.get(name):
                    data[name] = str(self.base_fields[name].initial)
            if not data.get("mfu"):
                data["mfu"] = str(sizing.DEFAULT_MFU)
            if "submitted" not in data and "checkpointing" not in data:
                data["checkpointing"] = "on"
        super().__init__(data, *args, **kwargs)

    def clean_start_date(self) -> Any:
        value = self.cleaned_data["start_date"]
        if value < timezone.localdate():
            raise forms.ValidationError(_("The start date is in the past."))
        return value

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if self.errors:
            return data
        try:
            self.sizing_input = sizing.validate(
                sizing.SizingInput(
                    params_billion=data.get("params_billion"),
                    precision=data["precision"],
                    optimizer=data["optimizer"],
                    zero_stage=data["zero_stage"],
                    target_tokens_billion=data.get("target_tokens_billion"),
                    target_days=data.get("target_days"),
                    mode=data["mode"],
                    arch=data.get("arch") or "",
                    seq_len=data["seq_len"],
                    micro_batch=data["micro_batch"],
                    checkpointing=bool(data.get("checkpointing")),
                    offload=data["offload"] if data["mode"] == "train" else "none",
                    context=data["context"],
                    concurrency=data["concurrency"],
                    kv_precision=data.get("kv_precision") or "auto",
                    mfu=data["mfu"],
                )
            )
        except sizing.SizingError as exc:
            self.add_error(exc.field if exc.field in self.fields else None, exc.message)
        return data


# --- Configure: node type, count, term, start, add-ons -> instant quote ------------------


def _common_words(names: list[str]) -> str:
    """The words all names start with: "DDoS protection" for "DDoS protection 5 Gb/s"…"""
    words = [n.split() for n in names]
    common: list[str] = []
    for column in zip(*words, strict=False):
        if len(set(column)) != 1:
            break
        common.append(column[0])
    return " ".join(common)


class ConfigureForm(forms.Form):
    """The customer's configuration, read from the query string (shareable links).

    The choices come from what the view loaded once (sites, node types, the chosen site's
    price book snapshot); the field errors say what is wrong in the customer's words.
    Add-ons are fields of their own, built from the price book: a quantity for metered
    ones (storage, traffic, IPs), one choice per tier group (DDoS), a tick box for other
    flat monthly ones; free flat ones are always included.
    """

    site = forms.ChoiceField(label=_("Data centre"))
    node_type = forms.ChoiceField(label=_("Node type"))
    node_count = forms.IntegerField(
        label=_("Nodes"),
        required=False,
        help_text=_("Whole servers, yours alone."),
    )
    gpu_count = forms.IntegerField(
        label=_("…or GPUs"),
        required=False,
        help_text=_("Rounded up to whole nodes; when given, it decides the node count."),
    )
    card = forms.ChoiceField(label=_("GPU cards"), required=False)
    cards_per_node = forms.IntegerField(label=_("Cards per node"), required=False)
    term = forms.ChoiceField(label=_("Term"))
    duration = forms.IntegerField(label=_("Duration"))
    start_date = forms.DateField(
        label=_("Start date"),
        widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d"),
        help_text=_("From midnight, the data centre's time."),
    )
    payment_method = forms.ChoiceField(label=_("Payment"), required=False, widget=forms.RadioSelect)

    def __init__(
        self,
        data: Any,
        *,
        sites: list[Any],
        node_types: list[Any],
        snapshot: Any,
        **kwargs: Any,
    ) -> None:
        super().__init__(data, **kwargs)
        self.sites = {s.code: s for s in sites}
        self.node_types = {nt.code: nt for nt in node_types}
        self.snapshot = snapshot
        self.fields["site"].choices = [(s.code, s.display_name) for s in sites]
        self.fields["node_type"].choices = [(nt.code, nt.display_name) for nt in node_types]
        self.fields["term"].choices = Term.choices
        self.fields["payment_method"].choices = [
            (m, PaymentMethod(m).label) for m in payment_methods_offered()
        ]
        self.card_options: dict[int, list[Any]] = {}
        self.addon_rows: list[dict[str, Any]] = []
        self.included_addons: list[Any] = []
        if snapshot is not None:
            for cp in snapshot.book.card_prices.all():
                self.card_options.setdefault(cp.node_type_id, []).append(cp)
            self._addon_fields(list(snapshot.book.addons.all()))
        cards = {(cp.code, cp.gpu_model.name) for opts in self.card_options.values() for cp in opts}
        self.fields["card"].choices = [("", _("none")), *sorted(cards, key=lambda c: c[1])]
        term = (self.data or {}).get("term") or "month"
        if term in TERM_DURATION:
            lo, hi = TERM_DURATION[PricingTerm(term)]
            self.fields["duration"].help_text = _("%(lo)s to %(hi)s %(units)s.") % {
                "lo": lo,
                "hi": hi,
                "units": self.term_units(term),
            }
        self.gpu_note: dict[str, int] | None = None
        self.configuration: Any = None

    # --- Add-on fields from the price book ------------------------------------------------

    def _addon_fields(self, addons: list[Any]) -> None:
        flat: dict[str, list[Any]] = {}
        for a in addons:
            if a.unit == "month":
                flat.setdefault(a.code.split("-")[0], []).append(a)
        for a in addons:
            if a.unit != "month":
                name = f"addon_{a.code}"
                self.fields[name] = forms.DecimalField(
                    label=a.localized_name(),
                    required=False,
                    min_value=0,
                    max_value=100000,
                    max_digits=9,
                    decimal_places=0 if a.unit == "ip_month" else 2,
                    initial=0,
                    error_messages={
                        "min_value": _("Cannot be negative."),
                        "max_value": _("At most 100,000."),
                    },
                )
                self.addon_rows.append({"name": name, "addons": [a], "kind": "quantity"})
                continue
            group = flat[a.code.split("-")[0]]
            if len(group) > 1:
                if group[0] is not a:
                    continue  # one choice field per tier group, built at its first member
                name = f"tier_{a.code.split('-')[0]}"
                cheapest = min(group, key=lambda g: (g.price, g.position))
                common = _common_words([g.localized_name() for g in group])
                common = common or cheapest.localized_name()
                self.fields[name] = forms.ChoiceField(
                    label=common,
                    choices=[(g.code, g.localized_name()) for g in group],
                    initial=cheapest.code,
                )
                self.addon_rows.append({"name": name, "addons": group, "kind": "tier"})
            elif a.price == 0:
                self.included_addons.append(a)
            else:
                name = f"addon_{a.code}"
                self.fields[name] = forms.BooleanField(label=a.localized_name(), required=False)
                self.addon_rows.append({"name": name, "addons": [a], "kind": "flag"})

    def addon_fields(self) -> list[dict[str, Any]]:
        """The add-on rows for the template: the bound field and the price book rows."""
        return [{**row, "field": self[row["name"]]} for row in self.addon_rows]

    def _addon_quantities(self, data: dict[str, Any]) -> dict[str, Decimal]:
        quantities: dict[str, Decimal] = {a.code: Decimal(1) for a in self.included_addons}
        for row in self.addon_rows:
            value = data.get(row["name"])
            if row["kind"] == "quantity":
                if value:
                    quantities[row["addons"][0].code] = value
            elif row["kind"] == "tier":
                if value:
                    quantities[value] = Decimal(1)
            elif value:
                quantities[row["addons"][0].code] = Decimal(1)
        return quantities

    # --- Defaults ----------------------------------------------------------------------------

    @classmethod
    def defaults(cls, *, site: Any, node_types: list[Any], snapshot: Any) -> dict[str, str]:
        """The configuration a bare /configure/ shows: one node, a month, from the earliest
        start the site can deliver, paid by the first method offered."""
        priced = set(snapshot.engine.nodes) if snapshot is not None else set()
        node_type = next((nt for nt in node_types if nt.code in priced), None)
        data = {
            "site": site.code,
            "node_type": node_type.code if node_type else "",
            "node_count": "1",
            "term": "month",
            "duration": "1",
            # The earliest start every offered method can meet: with bank transfer
            # offered, late enough for the transfer to arrive (Accept refuses sooner).
            "start_date": earliest_start_for(site, payment_methods_offered()).isoformat(),
            "payment_method": payment_methods_offered()[0],
        }
        if snapshot is not None:
            form = cls(None, sites=[site], node_types=node_types, snapshot=snapshot)
            for row in form.addon_rows:
                initial = form.fields[row["name"]].initial
                if initial not in (None, False):
                    data[row["name"]] = str(initial)
        return data

    # --- Validation --------------------------------------------------------------------------

    def clean_site(self) -> Any:
        return self.sites[self.cleaned_data["site"]]

    def clean_node_type(self) -> Any:
        return self.node_types[self.cleaned_data["node_type"]]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        site, node_type = data.get("site"), data.get("node_type")
        if site is None or node_type is None:
            return data
        if self.snapshot is None or self.snapshot.book.site_id != site.pk:
            self.add_error(
                "site", _("No prices for %(site)s are in force yet.") % {"site": site.display_name}
            )
            return data
        if node_type.code not in self.snapshot.engine.nodes:
            self.add_error("node_type", self.not_offered_message(site))

        # Cards: only where the node type offers them.
        card_code = data.get("card") or ""
        card = None
        if card_code:
            card = next(
                (cp for cp in self.card_options.get(node_type.pk, []) if cp.code == card_code),
                None,
            )
            if card is None:
                self.add_error(
                    "card",
                    _("%(type)s takes no optional GPU cards of this kind.")
                    % {"type": node_type.display_name},
                )
        cards_per_node = 0
        if card is not None:
            cards_per_node = data.get("cards_per_node") or 1
            if not (1 <= cards_per_node <= card.max_per_node):
                self.add_error(
                    "cards_per_node",
                    _("From 1 to %(n)s cards per node.") % {"n": card.max_per_node},
                )

        term, duration, start = data.get("term"), data.get("duration"), data.get("start_date")
        node_count = None
        if term and duration is not None and start is not None:
            try:
                count = configuration_check(
                    site=site,
                    node_type=node_type,
                    node_count=data.get("node_count"),
                    gpu_count=data.get("gpu_count"),
                    cards_per_node=cards_per_node,
                    term=term,
                    duration=duration,
                    start_date=start,
                )
            except ConfigurationInvalid as exc:
                for field, message in exc.errors.items():
                    if field not in self.errors:
                        self.add_error(field, message)
            else:
                node_count = count.nodes
                if count.from_gpus:
                    self.gpu_note = {
                        "gpus": count.gpus,
                        "per_node": count.per_node,
                        "nodes": count.nodes,
                    }

        if not self.errors:
            self.configuration = Configuration(
                site=site,
                node_type=node_type,
                node_count=node_count,
                term=term,
                duration=duration,
                start_date=start,
                card_gpu_model_id=card.gpu_model_id if card else None,
                cards_per_node=cards_per_node,
                addons=tuple(self._addon_quantities(data).items()),
            )
        return data

    @staticmethod
    def term_units(term: str) -> str:
        return term_units(term)

    @staticmethod
    def not_offered_message(site: Any) -> str:
        return _("Not offered at that site (%(site)s): choose another node type or site.") % {
            "site": site.display_name
        }

    def check_offered(self, capacity: dict[tuple[int, int], Any]) -> bool:
        """After ``is_valid``: the node type must have nodes at the site. False if not."""
        config = self.configuration
        if config is None:
            return False
        cap = capacity.get((config.site.pk, config.node_type.pk))
        if cap is None or not cap.total:
            self.add_error("node_type", self.not_offered_message(config.site))
            self.configuration = None
            return False
        return True
