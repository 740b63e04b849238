"""core.ratelimit: the one fixed-window counter (login throttle, estimate renders)."""

from __future__ import annotations

import uuid

import pytest
from django.core.cache import cache

from core import ratelimit


@pytest.fixture
def key():
    name = f"test-ratelimit:{uuid.uuid4().hex}"
    yield name
    cache.delete(name)


def test_counts_hits_in_the_window(key):
    assert [ratelimit.hit(key, window=60) for _ in range(3)] == [1, 2, 3]


def test_keys_count_apart(key):
    other = key + ":other"
    ratelimit.hit(key, window=60)
    assert ratelimit.hit(other, window=60) == 1
    cache.delete(other)


def test_a_new_window_starts_at_one_when_the_old_one_ended(key):
    ratelimit.hit(key, window=60)
    cache.delete(key)  # the window ran out
    assert ratelimit.hit(key, window=60) == 1


def test_a_window_that_ends_between_add_and_incr_counts_the_hit(key, monkeypatch):
    monkeypatch.setattr(cache, "add", lambda *args, **kwargs: False)  # gone again at once
    assert ratelimit.hit(key, window=60) == 1
    monkeypatch.undo()
    assert ratelimit.hit(key, window=60) == 2


def test_over_limit_past_the_limit(key):
    assert [ratelimit.over_limit(key, limit=2, window=60) for _ in range(3)] == [
        False,
        False,
        True,
    ]
