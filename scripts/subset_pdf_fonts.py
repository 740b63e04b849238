"""Write the PDF fonts: Noto Sans CJK SC Regular and Bold cut down to what documents use.

Every PDF (``templates/pdf/quote.css``) names "Noto Sans CJK SC GB2312" first and the full
system "Noto Sans CJK SC" (Debian ``fonts-noto-cjk``) after it. The full font is a 65,535-
glyph CFF collection of about 20 MB; WeasyPrint copies the whole file into memory and
HarfBuzz subsets it again for every document, which cost about 100 ms of each render. The
cut-down fonts hold about 8,000 glyphs (1.6 MB each), and a character they lack is drawn
from the system font by the usual per-character fallback (it never disappears; see
``tests/billing/test_pdf_fonts.py``).

What is kept, where the source font has it: Basic Latin, Latin-1 and Latin Extended-A
(names and addresses in European languages; the source font lacks most of Extended-A,
which comes from DejaVu Sans as before), general punctuation, super- and subscripts,
currency signs, letter-like symbols, number forms, arrows, mathematical operators,
enclosed alphanumerics, geometric shapes, CJK symbols and punctuation, half- and
full-width forms, all of GB 2312 (the 6,763 hanzi of levels 1 and 2, pinyin, Greek,
Cyrillic, kana and box drawing), and every character of the zh-Hans translations and of
the PDF templates at the time the script runs.

The OpenType features HarfBuzz applies to horizontal text are kept (``ccmp``, ``locl``,
``liga``, ``calt``, ``clig``, ``rlig``, ``kern``, ``mark``, ``mkmk``), for each script's
default language system and for Simplified Chinese (ZHS); vertical forms and the
Japanese, Korean and Traditional Chinese alternates are not. With these, all four kinds
of document (quote, contract, invoice, credit note, in zh-Hans and English) rendered to
the same pixels as with the system font. Hinting is dropped (WeasyPrint drops it when
embedding).

The fonts are renamed (family "Noto Sans CJK SC GB2312") so that fontconfig never takes
them for the full system family; the copyright, licence (SIL OFL 1.1, see
``templates/pdf/fonts/OFL.txt``) and vendor names are kept.

Usage, from the repository root (after ``scripts/system_deps.sh`` installed the fonts)::

    .venv/bin/python scripts/subset_pdf_fonts.py            # writes templates/pdf/fonts/
    .venv/bin/python scripts/subset_pdf_fonts.py --check    # exit 1 if they are stale

The output does not depend on the time it is made (``head.modified`` is kept), so running
it again on the same system font and texts writes the same bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import shutil
import subprocess
import sys
from pathlib import Path

from fontTools import subset
from fontTools.ttLib import TTFont

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "templates" / "pdf" / "fonts"
FAMILY = "Noto Sans CJK SC GB2312"
POSTSCRIPT_FAMILY = "NotoSansCJKscGB2312"
SOURCE_FAMILY = "Noto Sans CJK SC"
STYLES = ("Regular", "Bold")

# (first, last) inclusive ranges kept besides GB 2312 and the project's own texts.
RANGES = (
    (0x0020, 0x007E),  # Basic Latin
    (0x00A0, 0x017F),  # Latin-1 Supplement, Latin Extended-A
    (0x2000, 0x206F),  # General Punctuation
    (0x2070, 0x209F),  # Superscripts and Subscripts
    (0x20A0, 0x20BF),  # Currency Symbols
    (0x2100, 0x214F),  # Letterlike Symbols
    (0x2150, 0x218F),  # Number Forms (Roman numerals, fractions)
    (0x2190, 0x21FF),  # Arrows
    (0x2200, 0x22FF),  # Mathematical Operators
    (0x2460, 0x24FF),  # Enclosed Alphanumerics
    (0x25A0, 0x25FF),  # Geometric Shapes
    (0x3000, 0x303F),  # CJK Symbols and Punctuation
    (0xFF00, 0xFFEF),  # Halfwidth and Fullwidth Forms
)
KEPT_LANGUAGES = {"ZHS "}
FEATURES = ["ccmp", "locl", "liga", "calt", "clig", "rlig", "kern", "mark", "mkmk"]
TEXT_SOURCES = ("locale/zh_Hans/LC_MESSAGES/django.po", "templates/pdf")


def gb2312() -> set[int]:
    """Every character of GB 2312 (rows 0xA1–0xF7, columns 0xA1–0xFE)."""
    out = set()
    for row in range(0xA1, 0xF8):
        for col in range(0xA1, 0xFF):
            try:
                out.add(ord(bytes((row, col)).decode("gb2312")))
            except UnicodeDecodeError:
                continue
    return out


def project_texts() -> set[int]:
    """The characters of the zh-Hans translations and the PDF templates."""
    out: set[int] = set()
    for name in TEXT_SOURCES:
        path = ROOT / name
        files = (
            [path] if path.is_file() else sorted(path.rglob("*.html")) + sorted(path.rglob("*.css"))
        )
        for file in files:
            out.update(ord(ch) for ch in file.read_text(encoding="utf-8") if ord(ch) >= 0x20)
    return out


def wanted_codepoints() -> set[int]:
    kept = gb2312() | project_texts()
    for first, last in RANGES:
        kept.update(range(first, last + 1))
    return kept


def system_font(style: str) -> tuple[Path, int]:
    """The file and collection index fontconfig gives for the full family in ``style``."""
    fc_match = shutil.which("fc-match") or "fc-match"
    found = subprocess.run(  # noqa: S603 - fixed argv, fontconfig's tool found on PATH
        [fc_match, "--format=%{file}\n%{index}\n%{family[0]}", f"{SOURCE_FAMILY}:style={style}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    if len(found) < 3 or found[2] != SOURCE_FAMILY:
        raise SystemExit(
            f"fontconfig has no {SOURCE_FAMILY!r} {style} (found {found!r}); "
            "install fonts-noto-cjk (scripts/system_deps.sh)"
        )
    return Path(found[0]), int(found[1])


def rename(font: TTFont, style: str) -> None:
    """Give the cut-down font its own family name (OFL: a Modified Version)."""
    full = FAMILY if style == "Regular" else f"{FAMILY} {style}"
    postscript = f"{POSTSCRIPT_FAMILY}-{style}"
    name = font["name"]
    version = name.getDebugName(5) or ""
    for record in list(name.names):
        if record.nameID in (16, 17, 21, 22):  # typographic names: family/style say it all
            name.removeNames(nameID=record.nameID)
    name.setName(FAMILY, 1, 3, 1, 0x409)
    name.setName(style, 2, 3, 1, 0x409)
    name.setName(f"{version.split(';')[0]};{postscript}", 3, 3, 1, 0x409)
    name.setName(full, 4, 3, 1, 0x409)
    name.setName(postscript, 6, 3, 1, 0x409)
    name.setName(
        f"Subset of {SOURCE_FAMILY} {style} (GB 2312, Latin, punctuation and the portal's "
        "own texts) made by scripts/subset_pdf_fonts.py for the portal's PDFs.",
        10,
        3,
        1,
        0x409,
    )
    # Keep only the Windows English records that matter; other-language names of the
    # source family would still say "Noto Sans CJK SC".
    for record in list(name.names):
        if record.nameID in (1, 2, 3, 4, 6) and (record.platformID, record.langID) != (3, 0x409):
            name.names.remove(record)
    cff = font["CFF "].cff
    cff.fontNames = [postscript]
    top = cff.topDictIndex[0]
    for key in ("FullName", "FamilyName"):
        if hasattr(top, key):
            setattr(top, key, full if key == "FullName" else FAMILY)


def keep_language_systems(font: TTFont) -> None:
    """Drop the Japanese, Korean and Traditional Chinese language systems of GSUB and GPOS:
    their ``locl`` alternates would add some 6,000 glyphs that no document selects (HarfBuzz
    shapes ``lang="zh-Hans"`` text with ZHS, and other text with each script's default,
    which both stay)."""
    for tag in ("GSUB", "GPOS"):
        for record in font[tag].table.ScriptList.ScriptRecord:
            script = record.Script
            script.LangSysRecord = [
                lang for lang in script.LangSysRecord if lang.LangSysTag in KEPT_LANGUAGES
            ]
            script.LangSysCount = len(script.LangSysRecord)


def build(style: str, codepoints: set[int]) -> bytes:
    path, index = system_font(style)
    font = TTFont(path, fontNumber=index, recalcTimestamp=False, lazy=False)
    keep_language_systems(font)
    options = subset.Options()
    options.layout_features = FEATURES
    options.name_IDs = ["*"]
    options.name_languages = ["*"]
    options.notdef_outline = True
    options.hinting = False
    options.drop_tables += ["VORG", "vhea", "vmtx", "BASE"]
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=codepoints)
    subsetter.subset(font)
    rename(font, style)
    out = io.BytesIO()
    font.save(out)
    return out.getvalue()


def output_path(style: str) -> Path:
    return OUT_DIR / f"{POSTSCRIPT_FAMILY}-{style}.otf"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only compare with the files")
    args = parser.parse_args()
    codepoints = wanted_codepoints()
    stale = []
    for style in STYLES:
        data = build(style, codepoints)
        target = output_path(style)
        digest = hashlib.sha256(data).hexdigest()[:16]
        if target.is_file() and target.read_bytes() == data:
            print(f"{target.relative_to(ROOT)}: up to date ({len(data):,} bytes, {digest})")
            continue
        if args.check:
            stale.append(target)
            print(f"{target.relative_to(ROOT)}: STALE (would be {len(data):,} bytes, {digest})")
            continue
        OUT_DIR.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        print(f"{target.relative_to(ROOT)}: written ({len(data):,} bytes, {digest})")
    print(f"{len(codepoints):,} characters asked for")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
