"""Amounts in Chinese capital numerals (人民币大写), as written on invoices and contracts.

Pure Python, no Django. The rules are those of the People's Bank of China for payment
and settlement documents (《支付结算办法》附件一《正确填写票据和结算凭证的基本规定》),
which banks and the national tax invoice system follow:

- digits 零壹贰叁肆伍陆柒捌玖, units 拾佰仟万亿 and 元角分; a leading ten is written in
  full (壹拾元, not 拾元);
- a run of zeros between two non-zero digits is written as one 零, wherever the run lies
  (inside a group, or across a 万 or 亿 boundary): 1,020,000 → 壹佰零贰万元整,
  1,000,001 → 壹佰万零壹元整, 107,000 → 壹拾万零柒仟元整; zeros at the end of the yuan
  part are not written (100,000,000 → 壹亿元整);
- the yuan part ends in 元; when there are no 角 and no 分 it is followed by 整;
- when 角 is zero and 分 is not, 零 follows 元 (100.05 → 壹佰元零伍分);
- when 元位 is zero and 角 is not, no 零 is written between 元 and 角 (1,680.32 →
  壹仟陆佰捌拾元叁角贰分; the rules allow either form, we pick the shorter one);
- **no 整 after 角** (1.50 → 壹元伍角): the rules say it "may be omitted" after 角 and
  current bank and tax-invoice practice omits it; nothing follows 分 either;
- below one yuan the yuan part is left out (0.50 → 伍角, 0.05 → 伍分); zero is 零元整.

The amount is first rounded half up to the fen (the project's money rounding rule).
Negative amounts and amounts above 9,999,999,999,999.99 (玖万玖仟…亿, thirteen digits of
yuan) raise ``ValueError``.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

DIGITS = "零壹贰叁肆伍陆柒捌玖"
# Unit after the digit at each position of the yuan part, counted from the right: the
# 13th digit is 万 inside the 亿 group (万亿).
POSITION_UNITS = ("", "拾", "佰", "仟", "", "拾", "佰", "仟", "", "拾", "佰", "仟", "万")
# Group units written after the lowest position of a group that has a non-zero digit.
GROUP_UNITS = {4: ("万", range(4, 8)), 8: ("亿", range(8, 13))}
MAX_AMOUNT = Decimal("9999999999999.99")
FEN = Decimal("0.01")


def _yuan_words(yuan: int) -> str:
    """The yuan part (a positive integer below 10**13) without the trailing 元."""
    digits = [int(c) for c in reversed(str(yuan))]  # digits[p] is the digit at position p
    out: list[str] = []
    pending_zero = False
    for p in range(len(digits) - 1, -1, -1):
        d = digits[p]
        if d == 0:
            # Only zeros after a written digit can stand between two non-zero digits.
            pending_zero = pending_zero or bool(out)
        else:
            if pending_zero:
                out.append("零")
                pending_zero = False
            out.append(DIGITS[d] + POSITION_UNITS[p])
        if p in GROUP_UNITS:
            unit, span = GROUP_UNITS[p]
            if any(digits[q] for q in span if q < len(digits)):
                out.append(unit)
    return "".join(out)


def rmb_upper(amount: Decimal | int) -> str:
    """``amount`` (yuan) in capital numerals: ``Decimal("1234.56")`` → 壹仟贰佰叁拾肆元伍角陆分.

    See the module docstring for the rules. Raises ``ValueError`` for negative, non-finite
    or too large amounts, ``TypeError`` for a float (binary floats are not money).
    """
    if isinstance(amount, bool) or not isinstance(amount, Decimal | int):
        raise TypeError(f"rmb_upper takes a Decimal or an int, not {type(amount).__name__}")
    value = Decimal(amount)
    if not value.is_finite():
        raise ValueError(f"not a finite amount: {amount}")
    if value < 0:
        raise ValueError(f"a negative amount has no capital numerals form: {amount}")
    try:
        value = value.quantize(FEN, rounding=ROUND_HALF_UP)
    except InvalidOperation as exc:  # far too many digits for the context
        raise ValueError(f"amount too large: {amount}") from exc
    if value > MAX_AMOUNT:
        raise ValueError(f"amount too large for capital numerals (max {MAX_AMOUNT:,}): {amount}")
    fen_total = int(value * 100)
    yuan, cents = divmod(fen_total, 100)
    jiao, fen = divmod(cents, 10)
    if yuan == 0 and cents == 0:
        return "零元整"
    parts: list[str] = []
    if yuan:
        parts.append(_yuan_words(yuan) + "元")
    if jiao:
        parts.append(DIGITS[jiao] + "角")
    elif fen and yuan:
        parts.append("零")
    if fen:
        parts.append(DIGITS[fen] + "分")
    if not cents:
        parts.append("整")
    return "".join(parts)
