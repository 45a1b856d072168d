"""Counts in words: ``1 call``, ``2 calls``, the one way every message and page says a count; and
the article a word takes (``a chat log``, ``an openai-chat chat log``)."""

from __future__ import annotations

__all__ = ["counted", "with_article"]

# Words spelt with a vowel that start with a consonant's sound, and the other way round.
_A_BEFORE = ("one", "once", "uni", "usa", "use", "usu", "uti", "eu")
_AN_BEFORE = ("hour", "honest", "honor", "honour", "heir")


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun``, plural unless the count is 1 (``plural`` for an irregular noun)."""
    if count == 1:
        return f"1 {noun}"
    return f"{count} {plural if plural is not None else noun + 's'}"


def with_article(word: str) -> str:
    """``word`` after ``a`` or ``an``, by the sound it starts with as far as its spelling tells
    (``an openai-chat``, ``an anthropic``, ``a chat``; ``a user``, ``an hour``)."""
    lowered = word.lower()
    if lowered.startswith(_AN_BEFORE):
        return f"an {word}"
    vowel = lowered[:1] in ("a", "e", "i", "o", "u") and not lowered.startswith(_A_BEFORE)
    return f"{'an' if vowel else 'a'} {word}"
