"""Issue 24 point 14: a Chinese acceptance report carries the rules' sources in Chinese.
The seed rules' sources are rendered from their translated templates (with the GPU facts
they cite); a source staff wrote stays as written."""

from __future__ import annotations

import re

from django.utils import translation

from provisioning.validation.default_rules import DEFAULT_RULES
from provisioning.validation.report import localized_source

# English prose words the sources use; none may be left in the Chinese text (tool names,
# flags, file names and figures are technical and stay).
PROSE = frozenset(
    """the of and per at on with below above measured datasheet GUESS node reference figure
    calibrate every whatever used lower sold only fails passes noted judged sampled reason
    other than none idle quick result not is an to in or by from same""".split()
)


def _prose_words(text: str) -> set[str]:
    plain = re.sub(r"`[^`]*`", " ", text)  # commands and flags in backticks
    tokens = re.findall(r"[A-Za-z][\w./-]*", plain)  # identifiers and file names stay whole
    return {t for t in tokens if t in PROSE}


def test_every_seed_rule_source_reads_in_chinese_and_stays_english_in_english():
    sources = {rule.source for rule in DEFAULT_RULES}
    assert len(sources) > 15
    for source in sources:
        with translation.override("en"):
            assert localized_source(source) == source
        with translation.override("zh-hans"):
            zh = localized_source(source)
        assert zh != source
        assert not _prose_words(zh), (zh, _prose_words(zh))
    # The GPU facts a source cites are translated inside it, figures kept.
    h100 = next(r.source for r in DEFAULT_RULES if r.check == "gemm" and r.gpu_model == "H100")
    with translation.override("zh-hans"):
        text = localized_source(h100)
    assert "实测约 790 TFLOPS" in text and "参考值的 90%" in text


def test_a_source_staff_wrote_is_shown_as_written():
    with translation.override("zh-hans"):
        assert localized_source("Our own burn-in rule, see ticket 42") == (
            "Our own burn-in rule, see ticket 42"
        )
