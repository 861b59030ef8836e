"""Predicates and scorers: pure functions of a snapshot (or session) and one pod."""
