"""Forms of the customer-facing pages."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django import forms
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from billing import sizing
from inventory.models import Site


def _default_start() -> Any:
    return timezone.localdate() + timedelta(days=7)


class WizardForm(forms.Form):
    """The sizing wizard's questions; the answers are checked by billing.sizing."""

    params_billion = forms.DecimalField(
        label=_("Model size (billions of parameters)"),
        max_digits=12,
        decimal_places=3,
        help_text=_("e.g. 7, 70 or 175"),
    )
    precision = forms.ChoiceField(
        label=_("Training precision"),
        choices=[("bf16", "bf16"), ("fp16", "fp16"), ("fp8", "fp8"), ("fp32", "fp32")],
        initial="bf16",
    )
    optimizer = forms.ChoiceField(
        label=_("Optimizer"),
        choices=[("adamw", "AdamW"), ("sgd", "SGD"), ("adafactor", "Adafactor")],
        initial="adamw",
    )
    zero_stage = forms.TypedChoiceField(
        label=_("DeepSpeed ZeRO stage"),
        choices=[(0, "0"), (1, "1"), (2, "2"), (3, "3")],
        coerce=int,
        initial=3,
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
        widget=forms.DateInput(attrs={"type": "date"}),
    )

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
                    params_billion=data["params_billion"],
                    precision=data["precision"],
                    optimizer=data["optimizer"],
                    zero_stage=data["zero_stage"],
                    target_tokens_billion=data.get("target_tokens_billion"),
                    target_days=data.get("target_days"),
                )
            )
        except sizing.SizingError as exc:
            self.add_error(exc.field if exc.field in self.fields else None, exc.message)
        return data
