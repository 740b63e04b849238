"""Benchmark validation: parsers of tool output and acceptance rules (pure, no Django)."""
