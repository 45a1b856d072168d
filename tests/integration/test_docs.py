"""The guide in docs/ and the README hold what the code does.

- The generated pages (docs/cli.md, docs/configuration.md) are what scripts/gen_docs.py makes now.
- Every command and subcommand is shown in use (``otel-blackbox ... CMD``, in code) in a page of
  the guide, not only in the generated reference.
- Every setting (each ``OTEL_BLACKBOX_*`` variable the code reads, each ``BlackboxConfig`` field)
  is in docs/configuration.md, and every variable named there is read by the code.
- Every relative link of README.md and docs/*.md reaches a file, and every ``#anchor`` a heading
  of that file (GitHub's slugs).
- README.md is at most 250 lines.

Each check is a function that returns what is wrong, and each is shown to catch a made-up fault.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import unicodedata
from pathlib import Path
from types import ModuleType

import pytest
from helpers import ROOT

from otel_blackbox._config import ENV_VARS, BlackboxConfig

DOCS = ROOT / "docs"
README = ROOT / "README.md"
README_MAX_LINES = 250


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen_docs = _load_generator()
GENERATED: frozenset[str] = frozenset({gen_docs.CLI_PAGE, gen_docs.CONFIG_PAGE})


def _guide_pages() -> dict[str, str]:
    """The pages a user reads: docs/*.md but the generated ones."""
    return {
        p.name: p.read_text(encoding="utf-8") for p in sorted(DOCS.glob("*.md")) if p.name not in GENERATED
    }


# --- Markdown, as far as these checks need it ------------------------------------------------------

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)


def split_code(text: str) -> tuple[str, list[str]]:
    """(the text with its code taken out, the code: each fenced block and each inline code span)."""
    prose: list[str] = []
    code: list[str] = []
    block: list[str] = []
    fence = ""
    for line in text.splitlines():
        match = _FENCE.match(line)
        if fence:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                code.append("\n".join(block))
                fence, block = "", []
            else:
                block.append(line)
        elif match:
            fence = match.group(1)
        else:
            prose.append(line)
    if fence:  # an unclosed block runs to the end, as in CommonMark
        code.append("\n".join(block))
    rest = "\n".join(prose)
    code += [m.group(2) for m in _INLINE_CODE.finditer(rest)]
    return _INLINE_CODE.sub(" ", rest), code


# --- (b) every command shown in use ------------------------------------------------------------------

# `otel-blackbox`, the group's own options (`--db PATH`), then the command and, on the same line, a
# subcommand (`eval generate`).
_USE = re.compile(
    r"(?<![\w./-])otel-blackbox(?:\s+(?:--db(?:=|\s+)\S+|-h|--help))*"
    r"\s+([a-z][a-z-]*)(?:[ \t]+([a-z][a-z-]*))?"
)


def commands_in_use(texts: list[str]) -> set[str]:
    """The command paths (`list`, `eval generate`...) the code of these pages runs."""
    used: set[str] = set()
    for text in texts:
        for snippet in split_code(text)[1]:
            for match in _USE.finditer(snippet):
                used.add(match.group(1))
                if match.group(2):
                    used.add(f"{match.group(1)} {match.group(2)}")
    return used


def commands_not_shown(pages: dict[str, str]) -> list[str]:
    used = commands_in_use(list(pages.values()))
    paths: list[str] = gen_docs.command_paths()
    return [path for path in paths if path not in used]


def test_every_command_is_shown_in_use_in_the_guide() -> None:
    paths: list[str] = gen_docs.command_paths()
    assert {"list", "eval", "eval generate", "eval run", "mcp"} <= set(paths)
    assert commands_not_shown(_guide_pages()) == []


def test_a_command_shown_only_in_prose_or_in_the_reference_is_caught() -> None:
    paths: list[str] = gen_docs.command_paths()
    shown = "\n".join(f"    otel-blackbox --db x.db {path} ARG" for path in paths if path != "verify")
    page = f"```\n{shown}\n```\n\nThen run otel-blackbox verify on it.\n"
    assert commands_not_shown({"page.md": page}) == ["verify"]
    # The generated reference shows every command, but it is not a page of the guide.
    assert commands_not_shown({"cli.md": gen_docs.render_cli()}) == []
    assert GENERATED.isdisjoint(_guide_pages()) and {"index.md", "playback.md"} <= set(_guide_pages())
    # Inline code counts, a subcommand needs its group in front of it, and --db may come first.
    assert commands_in_use(["Run `otel-blackbox --db a.db eval run c.json r.json`."]) >= {"eval", "eval run"}
    assert "run" not in commands_in_use(["`otel-blackbox eval run c.json`"])
    assert commands_in_use(["`pip install 'otel-blackbox[mcp]'`", "`python agent.py`"]) == set()


# --- (a) the generated pages are current -------------------------------------------------------------


def test_the_generated_pages_are_current() -> None:
    stale: list[str] = gen_docs.stale(DOCS)
    assert stale == [], f"run: python scripts/gen_docs.py ({', '.join(stale)} not current)"


def test_the_generated_pages_do_not_depend_on_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "43")
    monkeypatch.setenv("OTEL_BLACKBOX_DB", "elsewhere.db")
    monkeypatch.setenv("OTEL_BLACKBOX_RETENTION", "1d")
    assert gen_docs.pages() == {name: (DOCS / name).read_text(encoding="utf-8") for name in GENERATED}


def test_a_stale_or_missing_generated_page_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, text in gen_docs.pages().items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert gen_docs.stale(tmp_path) == []
    assert gen_docs.main(["--check", "--docs", str(tmp_path)]) == 0
    cli_page = tmp_path / gen_docs.CLI_PAGE
    cli_page.write_text(cli_page.read_text(encoding="utf-8").replace("--expect-head", "--expect-tail"))
    assert gen_docs.stale(tmp_path) == [gen_docs.CLI_PAGE]
    capsys.readouterr()
    assert gen_docs.main(["--check", "--docs", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cli.md is not current" in err
    (tmp_path / gen_docs.CONFIG_PAGE).unlink()
    assert gen_docs.stale(tmp_path) == [gen_docs.CLI_PAGE, gen_docs.CONFIG_PAGE]
    assert gen_docs.main(["--docs", str(tmp_path)]) == 0  # rewrites both
    assert gen_docs.stale(tmp_path) == []


# --- (c) every setting documented --------------------------------------------------------------------

_VARIABLE = re.compile(r"\bOTEL_BLACKBOX_[A-Z0-9_]*[A-Z0-9]\b")


def _variables_in_src() -> set[str]:
    source = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "src").rglob("*.py"))
    return set(_VARIABLE.findall(source))


def settings_not_documented(page: str) -> list[str]:
    """Each variable the code reads and each BlackboxConfig field that the page does not name."""
    names = sorted(set(ENV_VARS) | _variables_in_src())
    names += [field.name for field in dataclasses.fields(BlackboxConfig)]
    return [name for name in names if f"`{name}`" not in page]


def variables_not_in_code(page: str) -> list[str]:
    """Each OTEL_BLACKBOX_* variable the page names that the code no longer reads."""
    return sorted(set(_VARIABLE.findall(page)) - _variables_in_src())


def test_every_setting_is_in_the_configuration_page() -> None:
    page = (DOCS / gen_docs.CONFIG_PAGE).read_text(encoding="utf-8")
    assert {"OTEL_BLACKBOX_ENABLED", "OTEL_BLACKBOX_MAX_CASSETTE_MB", "OTEL_BLACKBOX_SERVE_TOKEN"} <= (
        _variables_in_src()
    )
    assert settings_not_documented(page) == []
    assert variables_not_in_code(page) == []
    for var, (name, doc) in ENV_VARS.items():  # each in its own row, with its field and its doc
        (row,) = [line for line in page.splitlines() if line.startswith(f"| `{var}` |")]
        assert f"| `{name}` |" in row and doc.replace("|", "\\|") in row


def test_a_setting_left_out_or_made_up_is_caught() -> None:
    page = (DOCS / gen_docs.CONFIG_PAGE).read_text(encoding="utf-8")
    without = "\n".join(line for line in page.splitlines() if "busy_timeout_ms" not in line)
    assert settings_not_documented(without) == ["busy_timeout_ms"]
    without = page.replace("`OTEL_BLACKBOX_MAX_CASSETTE_MB`", "the cassette size limit")
    assert settings_not_documented(without) == ["OTEL_BLACKBOX_MAX_CASSETTE_MB"]
    assert variables_not_in_code(page + "\n| `OTEL_BLACKBOX_TURBO` | on |\n") == ["OTEL_BLACKBOX_TURBO"]


def test_a_field_without_a_variable_or_a_doc_fails_generation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(gen_docs.FIELD_DOCS, "busy_timeout_ms")
    with pytest.raises(SystemExit, match=r"BlackboxConfig\.busy_timeout_ms has no variable"):
        gen_docs.render_configuration()


# --- (d) links -------------------------------------------------------------------------------------

_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.MULTILINE)
_EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # http:, https:, mailto:...


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text, lowercase, with spaces as '-' and every other
    character that is not a letter, a mark, a digit, '-' or '_' dropped."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]*>", "", text).strip().lower()  # an HTML tag: nothing
    kept = "".join(
        c for c in text if c in " -" or unicodedata.category(c)[0] in "LMN" or unicodedata.category(c) == "Pc"
    )
    return kept.replace(" ", "-")


def _headings_with_code(text: str) -> str:
    """The page with its fenced blocks blanked but its inline code kept (headings hold code)."""
    lines, fence = [], ""
    for line in text.splitlines():
        match = _FENCE.match(line)
        if fence:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = ""
            lines.append("")
        elif match:
            fence = match.group(1)
            lines.append("")
        else:
            lines.append(line)
    return "\n".join(lines)


def page_anchors(text: str) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in _headings_with_code(text).splitlines():
        match = _HEADING.match(line)
        if not match:
            continue
        slug = github_slug(match.group(1))
        count = seen.get(slug, -1) + 1
        seen[slug] = count
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def broken_links(path: Path, text: str, root: Path = ROOT) -> list[str]:
    """Each relative link of the page at ``path`` that reaches no file, or no heading of it."""
    prose = split_code(text)[0]
    targets = [m.group(1) for m in _LINK.finditer(prose)] + _REFERENCE.findall(prose)
    broken = []
    for target in targets:
        if not target or _EXTERNAL.match(target):
            continue
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path.resolve()
        if not linked.exists() or not linked.is_relative_to(root.resolve()):
            broken.append(f"{path.name}: {target}: no such file")
        elif (
            anchor
            and linked.suffix == ".md"
            and anchor not in page_anchors(linked.read_text(encoding="utf-8"))
        ):
            broken.append(f"{path.name}: {target}: no such heading")
    return broken


def _pages_with_links() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def test_every_link_reaches_a_file_and_a_heading() -> None:
    pages = _pages_with_links()
    assert len(pages) >= 12
    broken = [line for page in pages for line in broken_links(page, page.read_text(encoding="utf-8"))]
    assert broken == []


def test_a_broken_link_or_anchor_is_caught(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "other.md").write_text(
        "# Other page\n\n## Tools: `--stub-tools`\n\n## Step 1\n\n## Step 1\n"
    )
    page = tmp_path / "docs" / "page.md"
    text = (
        "# Page: the *first* one\n\n"
        "[ok](other.md) [ok](other.md#tools---stub-tools) [ok](other.md#step-1-1) [ok](#page-the-first-one)\n"
        '[ok](https://example.com/none.md) ![ok](other.md "a title")\n'
        "[gone](missing.md) [gone](other.md#tools) [gone](#nowhere) [gone](other.md#step-1-2)\n"
        "[outside](../../etc/passwd)\n\n"
        "`[not a link](in-code.md)`\n\n```\n[not a link](in-a-block.md)\n```\n\n"
        "[ref]: ../nothing-here.md\n"
    )
    page.write_text(text)
    assert broken_links(page, text, root=tmp_path) == [
        "page.md: missing.md: no such file",
        "page.md: other.md#tools: no such heading",
        "page.md: #nowhere: no such heading",
        "page.md: other.md#step-1-2: no such heading",
        "page.md: ../../etc/passwd: no such file",
        "page.md: ../nothing-here.md: no such file",
    ]


def test_github_slugs() -> None:
    assert github_slug("Zero code: `opentelemetry-instrument`") == "zero-code-opentelemetry-instrument"
    assert (
        github_slug("Tools that must not run again: `--stub-tools`")
        == "tools-that-must-not-run-again---stub-tools"
    )
    assert github_slug("The host under load: a share of the interpreter, memory in bytes") == (
        "the-host-under-load-a-share-of-the-interpreter-memory-in-bytes"
    )
    assert github_slug("A [linked](x.md) heading → done, 100% (v2)") == "a-linked-heading--done-100-v2"
    assert github_slug("snake_case and Ünïcode") == "snake_case-and-ünïcode"


# --- (e) the README stays a few screens ---------------------------------------------------------------


def lines_over(text: str, limit: int = README_MAX_LINES) -> int:
    """How many lines past ``limit`` the text has (0: within it)."""
    return max(0, len(text.splitlines()) - limit)


def test_the_readme_is_a_few_screens() -> None:
    text = README.read_text(encoding="utf-8")
    assert lines_over(text) == 0, f"README.md is {len(text.splitlines())} lines; at most {README_MAX_LINES}"
    assert lines_over("line\n" * (README_MAX_LINES + 1)) == 1


def test_the_readme_leads_into_the_guide() -> None:
    text = README.read_text(encoding="utf-8")
    guide = (
        "index",
        "recording",
        "investigating",
        "playback",
        "incident-to-fix",
        "ingest",
        "configuration",
        "cli",
    )
    for page in guide:
        assert f"](docs/{page}.md" in text, page
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    for page in sorted(p.name for p in DOCS.glob("*.md") if p.name != "index.md"):
        assert f"]({page}" in index, f"docs/index.md does not link {page}"
