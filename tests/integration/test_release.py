"""The release a user sees: ``otel-blackbox --version`` and CHANGELOG.md, whose newest entry is that
version. (`make test` then builds the wheel and uses it in an empty venv: scripts/check_wheel.py.)"""

from __future__ import annotations

import datetime
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from helpers import ROOT

import otel_blackbox
from otel_blackbox._cli.app import COMMANDS

CHANGELOG = ROOT / "CHANGELOG.md"
# Keep a Changelog 1.1.0: the kinds of change, in its order.
SECTIONS = ("Added", "Changed", "Deprecated", "Removed", "Fixed", "Security")
RELEASE = re.compile(r"## \[(?P<version>\d+\.\d+\.\d+)\] - (?P<date>\d{4}-\d{2}-\d{2})")


def _modules_after(args: list[str], tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """The console script's code with ``args`` in a fresh interpreter: its result and what it loaded."""
    loaded = tmp_path / "modules.json"
    code = (
        "import json, sys\n"
        "from otel_blackbox.cli import main\n"
        "try:\n"
        f"    main({args!r})\n"
        "finally:\n"
        f"    open({str(loaded)!r}, 'w').write(json.dumps(sorted(sys.modules)))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    return result, set(json.loads(loaded.read_text()))


def test_version_prints_the_package_version_and_loads_no_more_than_help(tmp_path: Path) -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", otel_blackbox.__version__)
    version, loaded = _modules_after(["--version"], tmp_path)
    assert (version.returncode, version.stdout, version.stderr) == (
        0, f"otel-blackbox, version {otel_blackbox.__version__}\n", "",
    )  # fmt: skip
    helped, loaded_by_help = _modules_after(["--help"], tmp_path)
    assert helped.returncode == 0 and "Commands:" in helped.stdout
    assert loaded <= loaded_by_help, sorted(loaded - loaded_by_help)


def _releases(text: str) -> list[tuple[str, datetime.date, list[str], str]]:
    """Each ``## [X] - DATE`` entry: its version, date, section names and text (an ``[Unreleased]``
    entry on top is allowed and skipped)."""
    entries = re.split(r"^(?=## )", text, flags=re.MULTILINE)
    assert entries[0].startswith("# Changelog\n"), "CHANGELOG.md starts with '# Changelog'"
    assert "https://keepachangelog.com/en/1.1.0/" in entries[0]
    releases = []
    for number, entry in enumerate(entries[1:]):
        heading, _, body = entry.partition("\n")
        if number == 0 and heading == "## [Unreleased]":
            continue
        match = RELEASE.fullmatch(heading)
        assert match, f"not '## [X.Y.Z] - YYYY-MM-DD': {heading!r}"
        date = datetime.date.fromisoformat(match["date"])
        sections = re.findall(r"^### (.*)$", body, flags=re.MULTILINE)
        releases.append((match["version"], date, sections, body))
    return releases


def test_changelog_newest_entry_is_this_version_in_keep_a_changelog_form() -> None:
    releases = _releases(CHANGELOG.read_text(encoding="utf-8"))
    assert releases and releases[0][0] == otel_blackbox.__version__
    versions = [tuple(int(part) for part in version.split(".")) for version, *_ in releases]
    assert versions == sorted(versions, reverse=True) and len(set(versions)) == len(versions)
    dates = [date for _, date, *_ in releases]
    assert dates == sorted(dates, reverse=True)
    for version, _, sections, body in releases:
        assert set(sections) <= set(SECTIONS), (version, sections)
        assert len(sections) == len(set(sections)), (version, sections)
        assert sections == sorted(sections, key=SECTIONS.index), (version, sections)
        for section in re.split(r"^### .*$", body, flags=re.MULTILINE)[1:]:
            assert re.search(r"^- \S", section, flags=re.MULTILINE), f"{version}: a section with no entry"
    newest_sections = releases[0][2]
    assert newest_sections, "the newest entry says what changed, by kind"


def test_changelog_format_check_rejects_what_it_should() -> None:
    """The checks above fail on a misplaced version, an unknown section or a heading without a date."""
    head = "# Changelog\n\nhttps://keepachangelog.com/en/1.1.0/\n\n"
    ok = _releases(head + "## [Unreleased]\n\n## [1.2.0] - 2026-01-02\n\n### Fixed\n\n- a bug.\n")
    assert [(version, sections) for version, _, sections, _ in ok] == [("1.2.0", ["Fixed"])]
    for bad in ("## [1.2.0]\n", "## 1.2.0 - 2026-01-02\n", "## [1.2.0] - 2026-13-01\n"):
        try:
            _releases(head + bad)
        except (AssertionError, ValueError):
            continue
        raise AssertionError(f"accepted {bad!r}")


def _check_wheel() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_wheel", ROOT / "scripts" / "check_wheel.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_wheel_check_finds_every_command_in_help() -> None:
    """scripts/check_wheel.py walks the --help of the commands --help lists: it finds them all."""
    commands_in_help = _check_wheel().commands_in_help
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    for columns in ("60", "200"):  # summaries wrapped onto continuation lines, or not
        env["COLUMNS"] = columns
        code = "import sys; from otel_blackbox.cli import main; main(sys.argv[1:])"
        top, group, command = (
            subprocess.run([sys.executable, "-c", code, *args, "--help"], capture_output=True, text=True,
                           env=env, timeout=60).stdout
            for args in ([], ["eval"], ["list"])
        )  # fmt: skip
        assert commands_in_help(top) == sorted(COMMANDS)
        assert commands_in_help(group) == ["generate", "run", "run-all"]
        assert commands_in_help(command) == []
