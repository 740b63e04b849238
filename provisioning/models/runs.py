"""Provisioning runs and what they need (issue 11)."""
