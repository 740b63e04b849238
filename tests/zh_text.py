"""What a Chinese page shows in English: the words a reader sees (text, button labels,
titles, placeholders), less scripts, styles, data and technical names.

``english_words(html)`` returns the Latin-letter words left once ``allowed`` (product
and technical names such as GPU, NVLink, InfiniBand, SWIFT, currency codes) and the
given data values are removed. Tests assert it is empty on zh-hans pages.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

TECHNICAL = frozenset(
    """GPU GPUs CPU CSV PDF SSH SHA URL IP IPv4 ID BMC Redfish Stripe SXM PCIe NVLink NVSwitch
    InfiniBand NDR HDR RoCE Ethernet TFLOPS GEMM NCCL CUDA PyTorch DeepSpeed FlashAttention
    ZeRO MFU RAID SSD NVMe DDR DDR4 DDR5 ECC EPYC AMD Intel Xeon Platinum ConnectX RTX UTC
    CNY HKD USD VAT ICP DDoS IDC SWIFT BIC CNAPS TB GB Gb IB English Alipay WeChat Pay
    Control Command Mac LDAP H100 A100 V100S HK kW IPv""".split()
)

_WORD = re.compile(r"[A-Za-z][A-Za-z'’]+")


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        values = dict(attrs)
        for name in ("title", "placeholder", "aria-label"):
            if values.get(name):
                self.parts.append(str(values[name]))
        if tag == "input" and values.get("type") in ("submit", "button") and values.get("value"):
            self.parts.append(str(values["value"]))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip and data.strip():
            self.parts.append(data)


def visible_text(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    return "\n".join(parser.parts)


def english_words(
    html: str, *, data: tuple[str, ...] = (), allowed: frozenset[str] = TECHNICAL
) -> list[str]:
    text = visible_text(html)
    for value in sorted(data, key=len, reverse=True):
        text = text.replace(value, " ")
    return [w for w in _WORD.findall(text) if w not in allowed]
