"""Reproducible benchmarks (commands, not tests). See docs/benchmarks.md."""
