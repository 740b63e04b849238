"""The PDF fonts (issue 25, point 14): every document is set in "Noto Sans CJK SC GB2312",
the system Noto Sans CJK SC cut down by scripts/subset_pdf_fonts.py, and a character the
cut-down font lacks is drawn from the full system font instead of vanishing or turning
into a box."""

from __future__ import annotations

import subprocess
from pathlib import Path

from fontTools.ttLib import TTFont

from core import pdf

FONT_DIR = Path(pdf.PDF_TEMPLATE_DIR) / "fonts"
CUT_DOWN = "Noto Sans CJK SC GB2312"
SYSTEM = "Noto Sans CJK SC"
# Not in GB 2312, so not in the cut-down font, but in the system font: 堃 (U+5803, a common
# given name, GBK), 䶮 (U+4DAE, CJK Extension A) and 𠮷 (U+20BB7, Extension B, outside the
# Basic Multilingual Plane).
RARE = "堃䶮𠮷"


def cmap(style: str) -> dict[int, str]:
    return TTFont(FONT_DIR / f"NotoSansCJKscGB2312-{style}.otf").getBestCmap()


def used_fonts(text: str) -> dict[str, tuple[set[str], dict[int, int]]]:
    """family → (characters drawn with it, characters it had no glyph for)."""
    document = pdf.render_document("pdf/fonts_sample.html", {"text": text}, language="zh-hans")
    document.write_pdf()
    out: dict[str, tuple[set[str], dict[int, int]]] = {}
    for font in document.fonts.values():
        chars, missing = out.setdefault(font.family, (set(), {}))
        chars.update(font.to_unicode.values())
        missing.update(font.missing)
    return out


def test_shipped_fonts_cover_gb2312_and_carry_their_licence():
    for style in ("Regular", "Bold"):
        font = TTFont(FONT_DIR / f"NotoSansCJKscGB2312-{style}.otf")
        covered = font.getBestCmap()
        assert font["name"].getDebugName(1) == CUT_DOWN  # never taken for the full family
        assert "Open Font License" in font["name"].getDebugName(13)
        assert all(ord(ch) in covered for ch in "报价单合同发票红字壹贰叁肆伍陆柒捌玖拾佰仟万元整")
        assert all(ord(ch) in covered for ch in "Äéāǎü€¥×÷≤≥–—“”‘’…·　，。：；（）【】％")
        assert not any(ord(ch) in covered for ch in RARE)  # so the next test means something
    licence = (FONT_DIR / "OFL.txt").read_text(encoding="utf-8")
    assert "SIL OPEN FONT LICENSE Version 1.1" in licence
    assert "scripts/subset_pdf_fonts.py" in licence


def test_a_rare_character_comes_from_the_full_system_font(tmp_path):
    fonts = used_fonts(f"王{RARE}报价 ok")
    chars, missing = fonts[CUT_DOWN]
    assert {"王", "报", "价", "o", "k"} <= chars and not missing
    # Each rare character was drawn, with a real glyph, by the full system font.
    system_chars, system_missing = fonts[SYSTEM]
    assert set(RARE) <= system_chars, fonts
    assert not system_missing
    # …and is in the PDF's text (copy, search, screen readers).
    path = tmp_path / "rare.pdf"
    path.write_bytes(pdf.render_pdf("pdf/fonts_sample.html", {"text": RARE}, language="zh-hans"))
    text = subprocess.run(
        ["pdftotext", str(path), "-"], capture_output=True, text=True, check=True
    ).stdout
    assert RARE in text


def test_a_character_no_font_has_is_reported_missing_not_silently_dropped():
    # The counter-check of the test above: a private-use character is in neither font, and
    # WeasyPrint marks it missing (drawn as .notdef); the rare characters never are.
    fonts = used_fonts("缺\U000f0001字")
    assert any(0xF0001 in missing for _chars, missing in fonts.values()), fonts


def test_ordinary_text_needs_only_the_cut_down_font():
    fonts = used_fonts("深圳珠江智算科技有限公司 H100 × 16, ¥1,234.50 (含税 6 %) “报价”")
    assert set(fonts) == {CUT_DOWN}, fonts
