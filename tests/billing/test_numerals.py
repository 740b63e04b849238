"""人民币大写: known cases (the brief's, and the People's Bank of China's own examples from
《正确填写票据和结算凭证的基本规定》), the zero rules across 万/亿, rounding, limits, and a
round trip through an independent parser over random amounts."""

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from billing.documents.numerals import MAX_AMOUNT, rmb_upper

D = Decimal

KNOWN = [
    # The brief's cases.
    ("1020000.00", "壹佰零贰万元整"),
    ("16472400.00", "壹仟陆佰肆拾柒万贰仟肆佰元整"),
    ("0.50", "伍角"),
    ("1234.56", "壹仟贰佰叁拾肆元伍角陆分"),
    ("100.05", "壹佰元零伍分"),
    ("10.00", "壹拾元整"),
    ("0", "零元整"),
    ("100000000", "壹亿元整"),
    ("1000001", "壹佰万零壹元整"),
    # PBoC examples (where the rules allow two forms, the one this module documents).
    ("1409.50", "壹仟肆佰零玖元伍角"),
    ("6007.14", "陆仟零柒元壹角肆分"),
    ("1680.32", "壹仟陆佰捌拾元叁角贰分"),
    ("107000.53", "壹拾万零柒仟元伍角叁分"),
    ("16409.02", "壹万陆仟肆佰零玖元零贰分"),
    ("325.04", "叁佰贰拾伍元零肆分"),
    # Zeros across the 万 and 亿 groups, and the 万亿 digit.
    ("100010000", "壹亿零壹万元整"),
    ("100100", "壹拾万零壹佰元整"),
    ("1010", "壹仟零壹拾元整"),
    ("110", "壹佰壹拾元整"),
    ("200000000000", "贰仟亿元整"),
    ("1000000000000", "壹万亿元整"),
    ("1000000000001", "壹万亿零壹元整"),
    ("1000100000000", "壹万零壹亿元整"),
    ("1234500000000", "壹万贰仟叁佰肆拾伍亿元整"),
    ("9999999999999.99", "玖万玖仟玖佰玖拾玖亿玖仟玖佰玖拾玖万玖仟玖佰玖拾玖元玖角玖分"),
    # Below one yuan; 角 without 分 takes no 整.
    ("0.05", "伍分"),
    ("0.55", "伍角伍分"),
    ("1.50", "壹元伍角"),
    ("10.10", "壹拾元壹角"),
]


@pytest.mark.parametrize(("amount", "words"), KNOWN)
def test_known_amounts(amount, words):
    assert rmb_upper(D(amount)) == words


def test_int_accepted():
    assert rmb_upper(1020000) == "壹佰零贰万元整"


def test_rounds_half_up_to_the_fen_first():
    assert rmb_upper(D("0.005")) == "壹分"
    assert rmb_upper(D("0.004")) == "零元整"
    assert rmb_upper(D("1.995")) == "贰元整"
    assert rmb_upper(D("99999.995")) == "壹拾万元整"


@pytest.mark.parametrize("amount", [D("-0.01"), D("-1"), D("10000000000000"), D("1E+20")])
def test_out_of_range(amount):
    with pytest.raises(ValueError):
        rmb_upper(amount)


def test_rounding_up_past_the_limit_is_out_of_range():
    assert rmb_upper(MAX_AMOUNT).startswith("玖万")
    with pytest.raises(ValueError):
        rmb_upper(D("9999999999999.995"))


@pytest.mark.parametrize("amount", [D("NaN"), D("Infinity")])
def test_non_finite(amount):
    with pytest.raises(ValueError):
        rmb_upper(amount)


def test_float_refused():
    with pytest.raises(TypeError):
        rmb_upper(1.5)


# --- An independent reader, for the round trip -------------------------------------------

READ_DIGITS = {c: i for i, c in enumerate("零壹贰叁肆伍陆柒捌玖")}
SMALL = {"拾": 10, "佰": 100, "仟": 1000}


def read_upper(words: str) -> Decimal:
    """Capital numerals back to an amount (enough of a parser for the round trip)."""
    acc = cur = n = 0
    fen_total = 0
    for ch in words:
        if ch in READ_DIGITS:
            n = READ_DIGITS[ch]
        elif ch in SMALL:
            cur += n * SMALL[ch]
            n = 0
        elif ch == "万":
            acc += (cur + n) * 10_000
            cur = n = 0
        elif ch == "亿":
            acc = (acc + cur + n) * 100_000_000
            cur = n = 0
        elif ch == "元":
            fen_total += (acc + cur + n) * 100
            acc = cur = n = 0
        elif ch == "角":
            fen_total += n * 10
            n = 0
        elif ch == "分":
            fen_total += n
            n = 0
        elif ch == "整":
            pass
        else:
            raise AssertionError(f"unexpected character {ch!r} in {words!r}")
    return Decimal(fen_total) / 100


amounts = st.integers(min_value=0, max_value=int(MAX_AMOUNT * 100)).map(
    lambda fen: Decimal(fen) / 100
)


@given(amounts)
def test_round_trip_and_shape(amount):
    words = rmb_upper(amount)
    assert read_upper(words) == amount
    assert "零零" not in words
    if amount:
        assert not words.startswith("零")
    assert not words.endswith("零")
    assert "零元" not in words or words == "零元整"
    assert "零万" not in words and "零亿" not in words
    # 整 exactly when there are no 角 and no 分.
    assert words.endswith("整") == (amount == amount.to_integral_value())
    if amount >= 1:
        assert "元" in words


@given(st.integers(min_value=0, max_value=99_999_999_999))
def test_ten_is_written_with_a_one(yuan):
    words = rmb_upper(Decimal(yuan))
    # 拾 always follows a digit: 壹拾, never a bare 拾 at the start or after a unit.
    for i, ch in enumerate(words):
        if ch == "拾":
            assert i > 0 and words[i - 1] in READ_DIGITS
