"""The pure pricing engine names its terms, categories and add-on units as ``StrEnum``s
(no Django); the models store them as ``TextChoices`` with translated labels. One fact in
two spellings: these tests pin them equal, member by member and in order, so neither can
gain, lose, rename or reorder a value without the other."""

from __future__ import annotations

import pytest

from billing import models
from billing.pricing import engine

PAIRS = [
    (engine.Term, models.Term),
    (engine.Category, models.Category),
    (engine.AddonUnit, models.AddonUnit),
]


@pytest.mark.parametrize(("pure", "stored"), PAIRS, ids=lambda c: c.__name__)
def test_the_engine_enum_and_the_model_choices_are_the_same(pure, stored):
    assert [(m.name, m.value) for m in pure] == [(m.name, m.value) for m in stored]


@pytest.mark.parametrize(("pure", "stored"), PAIRS, ids=lambda c: c.__name__)
def test_a_stored_value_is_the_engine_member(pure, stored):
    for member in stored:
        assert pure(member.value) == member  # both are str: a model value feeds the engine


def test_the_engine_term_order_is_the_model_order():
    assert [t.value for t in engine.TERM_ORDER] == list(models.Term.values)
