"""Turning stored spans into text for people (and, later, HTML)."""
