"""Size a model from the command line: the wizard's calculator (inventory.sizing), as JSON.

    python manage.py size_model --params 70e9 --mode train --precision bf16 \\
        --optimizer adamw --zero 3 --seq 4096 --micro-batch 1 --json
    python manage.py size_model --arch llama3-70b --mode infer --context 32768 \\
        --concurrency 16 --json
    python manage.py size_model --arch llama3-70b --zero 3 --gpus 16 \\
        --node-type h100-8x-nvlink --tp 8 --pp 1 --json   # one layout: fits true/false
"""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from billing.pricing import selectors as billing_selectors
from core.errors import DomainError
from inventory import sizing
from inventory.models import NodeType, Site


def _node_type_options() -> list[sizing.NodeOption]:
    """Every node type with its own GPUs, unpriced (no price book to read)."""
    return [
        sizing.NodeOption(
            code=nt.code,
            name=nt.name,
            gpu_model=nt.gpu_model.name,
            gpus_per_node=nt.gpu_count,
            gpu_memory_gib=nt.gpu_model.memory_gb,
            bf16_tflops=nt.gpu_model.reference_tflops,
            intra_node=nt.interconnect,
            nic_count=nt.nic_count,
            nic_speed_gbps=nt.nic_speed_gbps,
            fabric=nt.fabric,
            host_ram_gb=nt.ram_gb,
            memory_bandwidth_tbs=nt.gpu_model.memory_bandwidth_tbs,
        )
        for nt in NodeType.objects.select_related("gpu_model").exclude(gpu_model=None)
    ]


class Command(BaseCommand):
    help = "Size a model (training or inference) on the node types on offer; --json prints all."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--params", help="parameters, e.g. 70e9 (or use --arch)")
        parser.add_argument("--arch", default="", help="known architecture, e.g. llama3-70b")
        parser.add_argument("--mode", default="train", choices=sizing.MODES)
        parser.add_argument("--precision", default="bf16")
        parser.add_argument("--optimizer", default="adamw", choices=sizing.OPTIMIZERS)
        parser.add_argument("--zero", type=int, default=0)
        parser.add_argument("--offload", default="none", choices=sizing.OFFLOADS)
        parser.add_argument("--seq", type=int, default=4096)
        parser.add_argument("--micro-batch", type=int, default=1)
        parser.add_argument("--no-checkpointing", action="store_true")
        parser.add_argument("--context", type=int, default=8192)
        parser.add_argument("--concurrency", type=int, default=1)
        parser.add_argument("--kv-precision", default="auto", choices=sizing.KV_PRECISIONS)
        parser.add_argument("--mfu", default=str(sizing.DEFAULT_MFU))
        parser.add_argument("--tokens", help="training tokens, e.g. 1e12")
        parser.add_argument("--days", help="finish within this many days")
        parser.add_argument("--site", help="data centre code (prices); default the first")
        parser.add_argument("--gpus", type=int, help="evaluate this many GPUs instead of searching")
        parser.add_argument("--node-type", help="node type code for --gpus")
        parser.add_argument("--tp", type=int, default=1)
        parser.add_argument("--pp", type=int, default=1)
        parser.add_argument("--ep", type=int)
        parser.add_argument("--json", action="store_true", help="print the whole result as JSON")

    def handle(self, *args: Any, **opts: Any) -> None:
        inp = sizing.SizingInput(
            params_billion=_billions(opts["params"], "--params"),
            precision=opts["precision"],
            optimizer=opts["optimizer"],
            zero_stage=opts["zero"],
            target_tokens_billion=_billions(opts["tokens"], "--tokens"),
            target_days=opts["days"],
            mode=opts["mode"],
            arch=opts["arch"],
            seq_len=opts["seq"],
            micro_batch=opts["micro_batch"],
            checkpointing=not opts["no_checkpointing"],
            offload=opts["offload"],
            context=opts["context"],
            concurrency=opts["concurrency"],
            kv_precision=opts["kv_precision"],
            mfu=opts["mfu"],
        )
        options = self._options(opts["site"])
        try:
            if opts["gpus"] is not None:
                code = opts["node_type"]
                option = next((o for o in options if o.code == code), None)
                if option is None:
                    raise CommandError(
                        f"--node-type {code!r} is not one of: " + ", ".join(o.code for o in options)
                    )
                result = sizing.evaluate(
                    inp, option, gpus=opts["gpus"], tp=opts["tp"], pp=opts["pp"], ep=opts["ep"]
                )
            else:
                result = sizing.size(inp, options)
        except sizing.SizingError as exc:
            raise CommandError(f"{exc.field}: {exc.message}") from exc
        data = sizing.result_json(result)
        if opts["json"]:
            self.stdout.write(json.dumps(data, ensure_ascii=False, indent=2))
            return
        self.stdout.write(result.rule_comparison)
        for plan in result.plans:
            m = plan.memory
            self.stdout.write(
                f"{'fits' if plan.fits else 'does not fit'}: {plan.gpus} × {plan.option.gpu_model}"
                f" ({plan.option.code}, {plan.nodes} nodes, {plan.layout}, {plan.zero_label}):"
                f" {m.total:.1f} of {plan.gpu_memory_gib:.0f} GiB per GPU"
                f" ({plan.memory_share:.0%}{', over 90%' if plan.memory_warning else ''})"
                + (" network-bound" if plan.network_bound else "")
                + (f" [{', '.join(plan.frameworks)}]" if plan.frameworks else "")
                + ("" if plan.fits else f" — {'; '.join(plan.problems)}")
            )
        if not result.plans or result.cheapest is None:
            self.stdout.write(result.reason_if_none)
            if result.what_would_fit:
                self.stdout.write(result.what_would_fit)

    def _options(self, site_code: str | None) -> list[sizing.NodeOption]:
        sites = Site.objects.order_by("code")
        site = sites.filter(code=site_code).first() if site_code else sites.first()
        if site_code and site is None:
            raise CommandError(f"No site {site_code!r}.")
        if site is not None:
            try:
                return billing_selectors.sizing_options(site=site)
            except DomainError:
                pass
        return _node_type_options()


def _billions(value: str | None, flag: str) -> Decimal | None:
    """ "70e9" -> Decimal("70") (billions)."""
    if value in (None, ""):
        return None
    try:
        return Decimal(value) / Decimal(10) ** 9
    except InvalidOperation as exc:
        raise CommandError(f"{flag} must be a number, e.g. 70e9") from exc
