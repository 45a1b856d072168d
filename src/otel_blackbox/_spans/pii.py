"""PII masks, each turned on by name (``OTEL_BLACKBOX_REDACT_PII``, ``BlackboxConfig.redact_pii``); all
off by default. The Redactor (redact.py) applies the ones turned on after the credential rules,
wherever it masks credentials, each with its own replacement ``[REDACTED:<kind>]``:

* ``email``: an e-mail address, ``local@domain.tld`` (a local part of letters, digits and ``._%+-``;
  a domain of dot-separated labels ending in a top-level domain of 2 to 24 letters);
* ``card``: a payment card number, 13 to 19 digits, one space or dash allowed between digits, whose
  first digit is a card network's (2 to 6) and which passes the Luhn check: an order number or a
  timestamp of as many digits is kept (their first digit, or the check, tells them apart). A whole
  number attribute of that shape is masked too;
* ``phone``: a phone number in one of these shapes: international, ``+`` and a country code then
  digits, in groups or not, 8 to 15 digits in all (``+1 415 555 2671``, ``+44 (0)20 7946 0958``,
  ``+14155552671``); North American, 3-3-4 digits with one separator, an optional leading ``1``
  (``415-555-2671``, ``1 415 555 2671``, ``415.555.2671``) or the area code in parentheses
  (``(415) 555-2671``); national with a trunk ``0``, 9 to 12 digits in three groups or more with
  one separator, space or dash (``06 12 34 56 78``, ``020 7946 0958``). A number without ``+``,
  parentheses or separators (an amount, a year, an id, ``5551234``) is never a phone number, and
  neither is a date (``2024-01-15``, ``01-02-2024``), an address (``192.168.1.100``) or a signed
  decimal (``+1234567.89``);
* ``iban``: an IBAN, two letters, two check digits and 11 to 30 letters or digits (grouped by four
  with single spaces, or not), which passes the ISO 13616 mod-97 check.

They run e-mail first, then IBAN (whose digits are not a card's), card, and phone (international
first); each pattern is compiled once, at import, and nothing of this module runs when no mask is on.
A value right after a JSON escape (``\\n``, ``\\u00a0``, in JSON text stored as an attribute) is masked
as one after a space is, and the JSON stays valid.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterable, Iterator

__all__ = ["PII_MASKS", "PiiMasks", "luhn_ok", "mod97_ok"]

PII_MASKS = ("email", "card", "phone", "iban")

# Work only where a match can be: an address around each "@" (its local part read backwards from it,
# its domain forwards); the international phone numbers from each "+" (a literal the regex engine
# finds fast); cards, IBANs and national phone numbers only in a text of 9 digits or more (each
# holds that many; one pass finds out). Each pattern starts with a character class or a literal;
# the boundary before a match is a lookbehind placed after that first character ("[2-6](?<![\w.].)":
# what comes before the 2 is no letter, digit or dot), so that the engine still skips ahead to where
# a match can start.
_A = re.ASCII
_LOCAL_CHARS = frozenset(string.ascii_letters + string.digits + "_.%+-")
_DOMAIN = re.compile(
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![\w\-]|\.[A-Za-z0-9])", _A
)


def _after_first(forbidden: str) -> str:
    """A lookbehind placed after a pattern's first character: the one before it is not in
    ``forbidden``, or ends a JSON escape (``\\n``, ``\\t``, ``\\u00a0``: JSON text stored as an attribute
    holds them, and a value right after one is still a value)."""
    return rf"(?:(?<!{forbidden}.)|(?<=\\[nrtbf].)|(?<=\\u[0-9a-fA-F]{{4}}.))"


_IBAN = re.compile(
    r"[A-Z]"
    + _after_first(r"[\w\-]")
    + r"[A-Z][0-9]{2}(?: ?[A-Za-z0-9]{4}){2,7}(?: ?[A-Za-z0-9]{1,3})?(?![\w\-])",
    _A,
)
# Not after an IBAN's country and check digits ("DE89 "): an IBAN that fails its check is kept whole.
_CARD = re.compile(
    r"[2-6]"
    + _after_first(r"[\w.,+\-]")
    + r"(?<![A-Z]{2}[0-9]{2} .)[0-9](?:[ \-]?[0-9]){11,17}(?![\w]|[.,\-][0-9])",
    _A,
)
_NOT_AFTER = _after_first(r"[\w.,+\-/:]")  # what may not come before a national number
_NOT_BEFORE = r"(?![\w]|[.,\-/:][0-9])"
# International: + and a country code, then groups (an area code may be in parentheses).
_PHONE_INTERNATIONAL = re.compile(
    r"\+" + _after_first(r"[\w+]") + r"[0-9]{1,3}(?:[ .\-]?(?:\([0-9]{1,4}\)|[0-9]{1,6})){1,6}" + _NOT_BEFORE,
    _A,
)
_PHONES_NATIONAL = (
    # North American: 415-555-2671, 1-415-555-2671, 415.555.2671, 415 555 2671; (415) 555-2671.
    re.compile(
        r"[0-9]"
        + _NOT_AFTER
        + r"(?:(?<=1)[ .\-][0-9]{3}|[0-9]{2})(?P<s>[ .\-])[0-9]{3}(?P=s)[0-9]{4}"
        + _NOT_BEFORE,
        _A,
    ),
    re.compile(r"\(" + _NOT_AFTER + r"[0-9]{3}\)[ \-]?[0-9]{3}[ .\-][0-9]{4}" + _NOT_BEFORE, _A),
    # National with a trunk 0: three groups or more, one separator.
    re.compile(
        r"0" + _NOT_AFTER + r"[0-9]{1,4}(?P<s>[ \-])[0-9]{2,4}(?:(?P=s)[0-9]{2,4}){1,4}" + _NOT_BEFORE, _A
    ),
)
_Pass = tuple[re.Pattern[str], Callable[[re.Match[str]], str]]  # a pattern and what replaces a match
# Nine digits, whatever is between them: the fewest a card number (13), an IBAN or a national phone
# number (9) holds.
_NINE_DIGITS = re.compile(r"[0-9](?:[^0-9]*[0-9]){8}")
_NON_DIGITS = re.compile(r"[^0-9]")


def luhn_ok(digits: str) -> bool:
    """Whether a string of digits passes the Luhn check (the last digit is the check digit)."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def mod97_ok(iban: str) -> bool:
    """Whether an IBAN (no spaces) passes the ISO 13616 check: its first four characters moved to the
    end, each letter made 10 to 35, the number modulo 97 is 1."""
    moved = (iban[4:] + iban[:4]).upper()
    if not moved.isascii() or not moved.isalnum():
        return False
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def _emails(text: str) -> Iterator[tuple[int, int]]:
    """Where the e-mail addresses of ``text`` are, in order: (start, end)."""
    done, at = 0, text.find("@")
    while at != -1:
        floor, start = max(done, at - 65), at
        while start > floor and text[start - 1] in _LOCAL_CHARS:  # the local part, read backwards
            start -= 1
        if 0 < start < at and text[start - 1] == "\\":  # after a JSON escape: \\n, \\u00a0
            start += 5 if text[start] == "u" else 1
        while start < at and text[start] == ".":  # a local part starts with no dot
            start += 1
        domain = _DOMAIN.match(text, at + 1) if 0 < at - start <= 64 else None
        if domain is not None:
            yield start, domain.end()
            done = domain.end()
            at = text.find("@", done)
        else:
            at = text.find("@", at + 1)


def _mask_emails(text: str) -> str:
    parts: list[str] = []
    done = 0
    for start, end in _emails(text):
        parts += (text[done:start], "[REDACTED:email]")
        done = end
    return "".join((*parts, text[done:])) if parts else text


def _card(match: re.Match[str]) -> str:
    digits = _NON_DIGITS.sub("", match.group(0))
    return "[REDACTED:card]" if 13 <= len(digits) <= 19 and luhn_ok(digits) else match.group(0)


def _phone(match: re.Match[str]) -> str:
    text = match.group(0)
    digits = sum(c.isdigit() for c in text)
    if text[0] == "+":  # +1234567.89 is a signed decimal
        ok = 8 <= digits <= 15 and [c for c in text if c in " .-()"] != ["."]
    elif text[0] == "0":  # 01-02-2024 is a date
        ok = 9 <= digits <= 12
    else:
        ok = True  # North American: 10 digits, or 11 with the leading 1, by the pattern
    return "[REDACTED:phone]" if ok else text


def _iban(match: re.Match[str]) -> str:
    compact = match.group(0).replace(" ", "")
    return "[REDACTED:iban]" if 15 <= len(compact) <= 34 and mod97_ok(compact) else match.group(0)


def _nine_digits(text: str) -> bool:
    # A digit first, by ten substring searches (far cheaper than a regex pass over text without any).
    return any(map(text.__contains__, "0123456789")) and _NINE_DIGITS.search(text) is not None


class PiiMasks:
    """The PII masks turned on, in their order; ``mask`` applies them to a text."""

    def __init__(self, names: Iterable[str]) -> None:
        chosen = set(names)
        unknown = sorted(chosen - set(PII_MASKS))
        if unknown:
            raise ValueError(f"unknown PII mask {unknown[0]!r}: expected {', '.join(PII_MASKS)}")
        self.names = tuple(name for name in PII_MASKS if name in chosen)
        self._email = "email" in chosen
        self._international = "phone" in chosen
        # In this order: the addresses (whose digits are no one's), the IBAN (whose digits are not a
        # card's), the card, then the phone numbers, international first (+1 415 555 2671 holds a
        # North American number).
        self._before: list[_Pass] = [(_IBAN, _iban)] if "iban" in chosen else []
        if "card" in chosen:
            self._before.append((_CARD, _card))
        self._national: list[_Pass] = [(p, _phone) for p in _PHONES_NATIONAL] if "phone" in chosen else []
        self._digit_passes = bool(self._before or self._national)
        self.cards = "card" in chosen
        # Every mask's shortest match: an e-mail address a@b.io is 6 characters, the rest longer.
        self.min_len = 6 if self._email else 8

    def mask(self, text: str) -> str:
        if len(text) < self.min_len:
            return text
        if self._email and "@" in text:
            text = _mask_emails(text)
        numbers = self._digit_passes and _nine_digits(text)
        if numbers:
            for pattern, replacement in self._before:
                text = pattern.sub(replacement, text)
        if self._international and "+" in text:
            text = _PHONE_INTERNATIONAL.sub(_phone, text)
        if numbers:
            for pattern, replacement in self._national:
                text = pattern.sub(replacement, text)
        return text

    def might_mask(self, text: str) -> bool:
        """False only when ``mask`` would leave ``text`` as it is (a match may still be kept)."""
        if len(text) < self.min_len:
            return False
        if self._email and "@" in text and next(_emails(text), None) is not None:
            return True
        if self._international and "+" in text and _PHONE_INTERNATIONAL.search(text) is not None:
            return True
        return (
            self._digit_passes
            and _nine_digits(text)
            and any(pattern.search(text) is not None for pattern, _ in (*self._before, *self._national))
        )

    def number(self, value: int) -> int | str:
        """A whole number that is a card number (card mask on) as its mask; any other as it is."""
        if self.cards and 10**12 <= value < 10**19 and 2 <= value // 10 ** (len(str(value)) - 1) <= 6:
            return "[REDACTED:card]" if luhn_ok(str(value)) else value
        return value
