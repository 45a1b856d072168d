"""The redactor alone: ``Redactor.redact_text`` per call with the credential rules only (the default),
with each PII mask on, and with all of them, on three texts (ordinary prose, an LLM request body in
JSON, a text full of credentials and PII). The writer runs it on every string of every span.

Run it as a script (it is not a test and asserts nothing about timing)::

    python bench/bench_redact.py [--calls N] [--repeat R] [--json out.json]

Each line is the minimum over R repeats of N calls, in µs a call, and its ratio to the default's.
"""

from __future__ import annotations

import argparse
import functools
import json
import timeit
from pathlib import Path

from otel_blackbox._spans.pii import PII_MASKS
from otel_blackbox._spans.redact import Redactor

TEXTS = {
    "prose": (
        "What is the weather in Paris for the next three days? Please include temperatures in Celsius "
        "and the chance of rain for each day, and tell me whether I need an umbrella on Saturday."
    ),
    "request body": json.dumps(
        {
            "model": "gpt-4.1-mini",
            "temperature": 0.2,
            "max_tokens": 512,
            "messages": [
                {"role": "system", "content": "You are a helpful shop assistant."},
                {"role": "user", "content": "Where is order 12345, paid 99.50 on 2024-05-01?"},
            ],
            "created": 1733582000,
        }
    ),
    "secrets and PII": (
        "key sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z, mail "
        "jane.doe@example.com, card 4111 1111 1111 1111, call +44 20 7946 0958, pay "
        "GB82WEST12345698765432, Authorization: Bearer eyJhbGciOiJIUzI1NiJ9abcdefgh12345678"
    ),
}
SETTINGS: dict[str, tuple[str, ...]] = {
    "default (credentials)": (),
    **{f"+ {mask}": (mask,) for mask in PII_MASKS},
    "+ all four": PII_MASKS,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=5000, help="calls a repeat (5000)")
    parser.add_argument("--repeat", type=int, default=7, help="repeats; the minimum is kept (7)")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    figures: dict[str, dict[str, float]] = {}
    for text_name, text in TEXTS.items():
        print(f"\n{text_name} ({len(text)} characters): µs a call, and x the default")
        base = 0.0
        for setting, masks in SETTINGS.items():
            call = functools.partial(Redactor(pii=masks).redact_text, text)
            best = min(timeit.repeat(call, number=args.calls, repeat=args.repeat))
            us = best / args.calls * 1e6
            base = base or us
            figures.setdefault(text_name, {})[setting] = us
            print(f"  {setting:24} {us:8.2f}  {us / base:5.2f}x")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
