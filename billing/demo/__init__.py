"""Demo price books (the seeds' offer), sales limits and a demo customer. Idempotent."""

from __future__ import annotations

from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from accounts.models import MemberRole, Membership, Organisation
from billing.models import (
    AddonPrice,
    CardOptionPrice,
    ContractSignatory,
    DiscountRule,
    FreeService,
    NodePrice,
    PriceBook,
    Promotion,
    SalesProfile,
    SellerEntity,
)
from inventory.models import GPUModel, NodeType, Site

D = Decimal
DAILY_NOTE = (
    "Derived for the demo: monthly ÷ 30 × 1.2 (the seeds rent by the day but give no daily price)."
)

# Per site: node type code -> (basis, category, monthly per unit). Shenzhen from the seeds
# (H100 ¥80,000-120,000 per node-month: the middle; A100 ¥2,800 per GPU; E5 ¥3,999).
# Hong Kong in HKD: the Shenzhen figures × 1.08, rounded (a demo rate, not a quote).
NODE_PRICES = {
    "SZ": {
        "h100-8x-nvlink": ("node", "gpu", D("100000")),
        "a100-40g-4x": ("gpu", "gpu", D("2800")),
        "e5-baremetal": ("node", "bare_metal", D("3999")),
    },
    "HK": {
        "h100-8x-nvlink": ("node", "gpu", D("108000")),
        "a100-40g-4x": ("gpu", "gpu", D("3020")),
        "e5-baremetal": ("node", "bare_metal", D("4319")),
    },
}
CARD_PRICES = {
    "SZ": {"RTX 3090 24G": D("1750"), "V100S 32G PCIe": D("1500")},
    "HK": {"RTX 3090 24G": D("1890"), "V100S 32G PCIe": D("1620")},
}
# (code, English, Chinese, unit, price SZ, price HK, note, note zh). Prices the seeds do
# not give are demo figures; what the customer fears is hidden is priced or says free.
ADDONS = [
    ("checkpoint-storage", "Checkpoint storage (distributed, 3 replicas)", "检查点存储（分布式三副本）",
     "tb_month", D("300"), D("324"), "", ""),
    ("egress", "Internet egress traffic", "公网出口流量", "tb", D("500"), D("540"),
     "Prepaid allowance for the term, on the first invoice; use beyond it billed monthly in arrears",
     "整个租期的预付流量额度，随首期付款通知书收取；超出部分按月按实际用量后付"),
    ("cross-node-traffic", "Cross-node traffic inside the cluster (InfiniBand / RoCE)",
     "集群内跨节点流量（InfiniBand / RoCE）", "month", D("0"), D("0"), "Free", "免费"),
    ("extra-ip", "Extra public IPv4 address", "额外公网 IPv4 地址", "ip_month", D("50"), D("54"), "", ""),
    # The seeds: "5-20G DDoS 防护" comes free; larger protection is priced (a demo figure).
    ("ddos-20g", "DDoS protection 5–20 Gb/s", "DDoS 防护 5–20 Gb/s", "month", D("0"), D("0"),
     "Free", "免费"),
    ("ddos-100g", "DDoS protection 100 Gb/s", "DDoS 防护 100 Gb/s", "month", D("8000"), D("8640"),
     "", ""),
    # Issue 20: the burn-in before hand-over, per node, once (a demo figure: about a
    # day's rent of a GPU); billing.pricing.engine.BURN_IN_FREE_FROM_NODES makes it free.
    ("burn-in-24h", "24-hour burn-in before hand-over (GEMM and all-reduce, per node)",
     "交付前 24 小时老化测试（GEMM 与全归约，按节点）", "once", D("800"), D("864"),
     "Free for clusters of 16 nodes or more; the result is in the acceptance report",
     "16 台及以上节点的集群免费；结果写入验收报告"),
]  # fmt: skip
# VAT per tax category and site (data): the seeds' provider holds an IDC licence, so the
# compute it operates is an IT service at 6%; traffic is basic telecom at 9%; a pure
# lease of hardware would be 13%. Hong Kong has no VAT.
TAX_RATES: dict[str, dict[str, str]] = {
    "SZ": {"it_service": "0.06", "equipment_lease": "0.13", "telecom": "0.09"},
    "HK": {"it_service": "0", "equipment_lease": "0", "telecom": "0"},
}
ADDON_TAX_CATEGORIES = {"egress": "telecom"}

# Add-on codes of earlier demo data, removed when the demo is seeded again.
RETIRED_ADDONS = ("ddos-5g",)
FREE_SERVICES = [
    ("Snapshots", "快照"),
    (
        "Environment set-up: CUDA 12.4, PyTorch 2.3, DeepSpeed 0.14, FlashAttention-2",
        "环境部署：CUDA 12.4、PyTorch 2.3、DeepSpeed 0.14、FlashAttention-2",
    ),
    ("NCCL tuning sheet", "NCCL 调优参数表"),
]
# ICP filing (ICP 备案) is a mainland China requirement for websites served from the
# mainland: its support is a free service at mainland sites only, not in Hong Kong.
MAINLAND_FREE_SERVICES = [("ICP filing support (备案)", "ICP 备案协助")]
MAINLAND_SITES = ("SZ",)


def free_services_for(site_code: str) -> list[tuple[str, str]]:
    return FREE_SERVICES + (MAINLAND_FREE_SERVICES if site_code in MAINLAND_SITES else [])


DISCOUNTS = [
    # code, English, Chinese, term, multiplier, category, GPU model
    ("gpu-quarterly", "GPU quarterly", "GPU 季付 95 折", "quarter", D("0.95"), "gpu", None),
    ("gpu-annual", "GPU annual", "GPU 年付 8 折", "year", D("0.80"), "gpu", None),
    ("h100-annual", "H100 annual", "H100 年付 85 折", "year", D("0.85"), None, "H100 80G SXM"),
]


def seed_price_books() -> list[PriceBook]:
    books = []
    types = {nt.code: nt for nt in NodeType.objects.all()}
    gpus = {g.name: g for g in GPUModel.objects.all()}
    for site in Site.objects.filter(code__in=NODE_PRICES):
        start = datetime.combine(date(2026, 1, 1), time.min, tzinfo=site.tzinfo)
        book, _ = PriceBook.objects.get_or_create(
            site=site,
            currency=site.currency,
            effective_from=start,
            defaults={"name": f"{site.name} 2026"},
        )
        if book.tax_rates != TAX_RATES[site.code]:
            book.tax_rates = TAX_RATES[site.code]
            book.save(update_fields=["tax_rates"])
        for code, (basis, category, monthly) in NODE_PRICES[site.code].items():
            if code not in types:
                continue
            NodePrice.objects.update_or_create(
                price_book=book,
                node_type=types[code],
                defaults={
                    "basis": basis,
                    "category": category,
                    "monthly": monthly,
                    "daily": (monthly / 30 * D("1.2")).quantize(D("0.01")),
                    "daily_note": DAILY_NOTE,
                },
            )
        if "e5-baremetal" in types:
            for gpu_name, monthly in CARD_PRICES[site.code].items():
                CardOptionPrice.objects.update_or_create(
                    price_book=book,
                    node_type=types["e5-baremetal"],
                    gpu_model=gpus[gpu_name],
                    defaults={
                        "monthly": monthly,
                        "daily": (monthly / 30 * D("1.2")).quantize(D("0.01")),
                        "max_per_node": 4,
                    },
                )
        AddonPrice.objects.filter(price_book=book, code__in=RETIRED_ADDONS).delete()
        for i, (code, name, name_zh, unit, sz, hk, note, note_zh) in enumerate(ADDONS):
            AddonPrice.objects.update_or_create(
                price_book=book,
                code=code,
                defaults={
                    "name": name,
                    "name_zh": name_zh,
                    "unit": unit,
                    "price": sz if site.code == "SZ" else hk,
                    "note": note,
                    "note_zh": note_zh,
                    "position": i,
                    "tax_category": ADDON_TAX_CATEGORIES.get(code, "it_service"),
                },
            )
        services = free_services_for(site.code)
        FreeService.objects.filter(price_book=book).exclude(
            name__in=[name for name, _zh in services]
        ).delete()
        for i, (name, name_zh) in enumerate(services):
            FreeService.objects.update_or_create(
                price_book=book, name=name, defaults={"name_zh": name_zh, "position": i}
            )
        for code, name, name_zh, term, multiplier, category, gpu in DISCOUNTS:
            DiscountRule.objects.update_or_create(
                price_book=book,
                code=code,
                defaults={
                    "name": name,
                    "name_zh": name_zh,
                    "term": term,
                    "multiplier": multiplier,
                    "category": category or "",
                    "gpu_model": gpus.get(gpu) if gpu else None,
                },
            )
        if site.code == "HK":
            Promotion.objects.update_or_create(
                price_book=book,
                code="hk-baremetal-bogo",
                defaults={
                    "name": "Overseas bare metal: buy one, get one",
                    "name_zh": "海外裸金属买一送一",
                    "valid_from": date(2026, 1, 1),
                    "valid_until": date(2027, 6, 30),
                    "buy": 1,
                    "get": 1,
                    "category": "bare_metal",
                },
            )
        books.append(book)
    return books


# Valid 统一社会信用代码 (GB 32100-2015 check character; tests/portal/test_uscc.py).
DEMO_ORGANISATION_TAX_IDS = ("91440300MA5DEM0006",)
# The demo customer is a Shenzhen company: its name and its owner's as a Chinese customer
# writes them (its pages, quotes and contract show them).
DEMO_ORGANISATION_NAME = "珠江智算实验室"
DEMO_CUSTOMER_NAME = "李伟"


def seed_sales_and_customers() -> None:
    users = get_user_model().objects
    for username, limit, approves in (("sales", "0.10", False), ("manager", "0.25", True)):
        user = users.filter(username=username).first()
        if user:
            SalesProfile.objects.update_or_create(
                user=user, defaults={"max_discount": D(limit), "can_approve": approves}
            )
    # Found by its tax ID: a database seeded before keeps the name it was given.
    org, _ = Organisation.objects.get_or_create(
        tax_id=DEMO_ORGANISATION_TAX_IDS[0],
        defaults={
            "name": DEMO_ORGANISATION_NAME,
            "legal_name": "深圳珠江智算科技有限公司",
            "billing_address": "深圳市南山区科技园 1 号",
            "country": "CN",
            "billing_email": "finance@pearlriver.example",
        },
    )
    customer = users.filter(username="customer").first()
    if customer:
        Membership.objects.get_or_create(
            organisation=org, user=customer, defaults={"role": MemberRole.OWNER}
        )


# The seller at each site (demo entities and accounts; registration numbers are valid
# in form: the 统一社会信用代码 carries its GB 32100-2015 check character).
SELLERS: dict[str, dict[str, Any]] = {
    "SZ": {
        "legal_name": "Shenzhen Zhisuan Cloud Technology Co., Ltd.",
        "legal_name_zh": "深圳市智算云科技有限公司",
        "registration_kind": "uscc",
        "registration_number": "91440300MA5H2K8L07",
        "address": "12/F, Building 8, Science Park South, Nanshan, Shenzhen, Guangdong, China",
        "address_zh": "中国广东省深圳市南山区科技园南区 8 栋 12 层",
        "bank_name": "China Merchants Bank, Shenzhen Science Park Sub-branch",
        "bank_name_zh": "招商银行深圳科技园支行",
        "account_name": "深圳市智算云科技有限公司",
        "account_number": "755900000000001",
        "cnaps_code": "308584001234",
        "swift_code": "CMBCCNBS",
        "telecom_licence": "B1-20260000",
        "issues_fapiao": True,
    },
    "HK": {
        "legal_name": "GPU Cloud (Hong Kong) Limited",
        "legal_name_zh": "智算云（香港）有限公司",
        "registration_kind": "hk_br",
        "registration_number": "72345678",
        "address": "Unit 1201, 12/F, Cyberport 3, 100 Cyberport Road, Hong Kong",
        "address_zh": "香港數碼港道 100 號數碼港 3 座 12 樓 1201 室",
        "bank_name": "The Hongkong and Shanghai Banking Corporation Limited",
        "bank_name_zh": "香港上海滙豐銀行有限公司",
        "account_name": "GPU Cloud (Hong Kong) Limited",
        "account_number": "004-123-456789-838",
        "cnaps_code": "",
        "swift_code": "HSBCHKHHHKH",
        "telecom_licence": "SBO-0000-00",
        "issues_fapiao": False,
    },
}


def seed_signatories() -> None:
    """The demo's authorised signatory: the sales manager countersigns for every seller
    entity (the ``countersign_contract`` permission and a signatory record)."""
    manager = get_user_model().objects.filter(username="manager").first()
    if manager is None:
        return
    manager.user_permissions.add(
        Permission.objects.get(codename="countersign_contract", content_type__app_label="billing")
    )
    ContractSignatory.objects.update_or_create(
        user=manager,
        defaults={
            "name": "Wang Fang",
            "name_zh": "王芳",
            "title": "Chief Financial Officer",
            "title_zh": "首席财务官",
        },
    )


def seed_sellers() -> None:
    for site in Site.objects.filter(code__in=SELLERS):
        seller, _ = SellerEntity.objects.update_or_create(site=site, defaults=SELLERS[site.code])
        seller.full_clean()
