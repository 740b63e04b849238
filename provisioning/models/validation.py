"""Validation runs, rules as data and acceptance reports (issue 12)."""
