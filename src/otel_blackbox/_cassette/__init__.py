"""Cassettes: one run as hash-chained, provider-neutral steps (Blackbox trace format v2).

The modules here only read and write JSON files; none imports the HTTP hook, a provider
translation, the session or a network module (tests/integration/test_boundaries.py checks it).
"""
