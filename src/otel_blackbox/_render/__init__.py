"""Stored spans and cassettes made readable: terminal text, Markdown, and the HTML report."""
