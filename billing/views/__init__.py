"""Billing pages: ``public`` (the customer's quote link), ``sales`` (staff)."""
