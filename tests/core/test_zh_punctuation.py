"""Chinese text uses full-width punctuation: "当前空闲：8", "（所有者，您）", not
"当前空闲: 8" or "(所有者, 您)". A guard over the compiled zh_Hans catalogue: no ASCII
colon, comma or semicolon directly after a Chinese character in any translation."""

from __future__ import annotations

import gettext
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = ROOT / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.mo"
HALF_WIDTH_AFTER_CJK = re.compile(r"[\u3400-\u9fff\u3001-\u3011\uff01-\uff5e][:,;]")
# Where a value follows on purpose in ASCII form: none so far. Add the msgid with why.
EXCEPTIONS: dict[str, str] = {}


def _translations() -> dict[str, str]:
    with CATALOGUE.open("rb") as fh:
        catalogue = gettext.GNUTranslations(fh)
    found: dict[str, str] = {}
    for key, text in catalogue._catalog.items():
        msgid = key[0] if isinstance(key, tuple) else key
        if msgid and msgid not in EXCEPTIONS:
            found[str(msgid)] = str(text)
    return found


def test_the_chinese_catalogue_has_no_ascii_colon_or_comma_after_chinese():
    translations = _translations()
    assert len(translations) > 1000  # the compiled catalogue was read
    bad = {k: v for k, v in translations.items() if HALF_WIDTH_AFTER_CJK.search(v)}
    assert bad == {}


def test_the_guard_sees_the_mistakes_the_reviewer_saw():
    for wrong in ("当前空闲: 8", "最便宜方案: 1 × H100", "(所有者, 您)", "注意; 还有"):
        assert HALF_WIDTH_AFTER_CJK.search(wrong), wrong
    for right in ("当前空闲：8", "（所有者，您）", "NCCL: 2", "GPU, CPU"):
        assert not HALF_WIDTH_AFTER_CJK.search(right), right
