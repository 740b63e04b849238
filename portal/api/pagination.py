"""Cursor pagination: ``?cursor=…`` from ``next`` / ``previous``, newest first, stable
while rows are added (DRF's ``CursorPagination`` over the primary key)."""

from __future__ import annotations

from rest_framework.pagination import CursorPagination


class Cursor(CursorPagination):
    ordering = "-pk"
    page_size = 50
    page_size_query_param = "limit"
    max_page_size = 200
