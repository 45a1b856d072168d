"""After `make unit`: no writer process started by the test run may outlive it by more than a few seconds.

    python tests/programs/writers_left.py TAG

Each writer process carries its agent's environment (minus OTEL_*), so the run's tag
(BLACKBOX_TEST_RUN=TAG, set by the Makefile) tells the run's writers from anyone else's.
Exit 1, listing them, when some are still there after the grace period.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

GRACE_S = 10.0


def writers_of(tag: str) -> list[str]:
    found = []
    marker = f"BLACKBOX_TEST_RUN={tag}".encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            if b"otel-blackbox-writer" in cmdline and marker in (proc / "environ").read_bytes().split(b"\0"):
                command = cmdline.replace(b"\0", b" ").decode(errors="replace")
                found.append(f"{proc.name}: {command[:120]}")
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


def main() -> None:
    tag = sys.argv[1]
    deadline = time.monotonic() + GRACE_S
    while (left := writers_of(tag)) and time.monotonic() < deadline:
        time.sleep(0.2)
    if left:
        print(f"{len(left)} writer process(es) outlived the test run by {GRACE_S:.0f} s:", *left, sep="\n  ")
        sys.exit(1)
    print("no writer process left behind")


if __name__ == "__main__":
    main()
