"""The reservation calendar of the operations console: every node row of the page with its
bars (holds with their expiry, firm bookings, cleaning, maintenance, faulty periods,
swaps), the order, customer and contract behind each booking and the conflicts, in a fixed
number of queries whatever the number of nodes shown (pinned in
tests/portal/test_operations_calendar.py, measured by bench/operations.py).

- ``rows``: the row query (the filters, the order by site, unit and rack, the page);
- ``bars``: one read and one builder per kind of bar, and where a bar sits in the window;
- ``conflicts``: the rules that make a bar stand out;
- ``texts``: the texts of both, translated once per page;
- ``selectors``: ``calendar_window``, the one selector that puts them together.
"""

from portal.operations.calendar.bars import BAR_KINDS, Bar
from portal.operations.calendar.rows import Row
from portal.operations.calendar.selectors import ZOOM_DAYS, Calendar, calendar_window

__all__ = ["BAR_KINDS", "ZOOM_DAYS", "Bar", "Calendar", "Row", "calendar_window"]
