"""The catalogue's 13-week availability table at a 1280-pixel-wide window, in both
languages: every week's column is inside the node type's box, readable without the page
scrolling sideways (the reviewer saw the 13th column cut off)."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from billing.pricing import catalog

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# Where each calendar's last week column ends, beside its table's box, its scrolling
# wrapper's box and the node type's article around it.
MEASURE = """() => [...document.querySelectorAll('table.calendar')].map(t => {
  const last = t.querySelector('thead th:last-child').getBoundingClientRect();
  const wrap = t.closest('.calendar-wrap');
  const box = t.closest('.node-type').getBoundingClientRect();
  return {calendar: t.dataset.calendar, columns: t.querySelectorAll('thead th').length,
          lastRight: last.right, boxRight: box.right, wrapRight: wrap.getBoundingClientRect().right,
          wrapScrolls: wrap.scrollWidth > wrap.clientWidth,
          pageScrolls: document.documentElement.scrollWidth > window.innerWidth};
})"""


def test_all_13_weeks_fit_the_box_at_1280_px(pages):
    call_command("seed_demo", verbosity=0)
    catalog.calendar_refresh()  # the beat job: the page shows the stored calendar
    page = pages.new("visitor")
    page.set_viewport_size({"width": 1280, "height": 900})
    for lang in ("en", "zh-hans"):
        page.goto(f"/{lang}/")
        tables = page.evaluate(MEASURE)
        assert tables, f"no availability calendar on the {lang} catalogue"
        for t in tables:
            assert t["columns"] == 14, t  # the row labels and 13 weeks
            assert not t["pageScrolls"], t
            assert t["lastRight"] <= t["wrapRight"] + 0.5, str(t)  # the 13th week is inside
            assert t["wrapRight"] <= t["boxRight"], t
            assert not t["wrapScrolls"], t  # and fits: nothing to scroll to
    pages.assert_no_server_errors()
