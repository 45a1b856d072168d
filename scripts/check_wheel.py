"""The release check of `make test`: build the wheel, install it into an empty venv, and use it there.

    python scripts/check_wheel.py [--wheelhouse DIR] [--refresh] [--keep]

The wheel is built from a clean copy of the checkout (pyproject.toml, README.md, LICENSE, src/), so
nothing is written into the repository and no stale ``build/`` leaks into it. It must hold every file
of ``src/otel_blackbox`` (modules, ``py.typed``, the JSON schemas, the report's HTML) and nothing
else. A new venv without pip gets it and its dependencies with the caller's pip, from the wheelhouse
first (offline) and from the index when the wheelhouse lacks something (then it is kept there: the
second run needs no network). In that venv, run from a temporary folder with no PYTHONPATH (and
``python -I``, whose ``otel_blackbox`` must come from the venv's site-packages):

* a span recorded by BlackboxSpanProcessor on a TracerProvider, then ``otel-blackbox --db X list``;
* ``cassette TRACE -o c.json``, ``verify c.json``, ``report TRACE -o r.html`` (the report's HTML),
  ``eval generate`` and ``eval run`` (the contract's JSON schema);
* ``--help`` of every command the installed CLI lists, and of every subcommand of its groups;
* ``--version``, the package's ``__version__`` and the installed metadata: the version of
  ``src/otel_blackbox/_version.py``; every entry point of the distribution loads.

Standard library only. One line per step; a failure is one line on stderr and exit 1.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "otel_blackbox"
PROG = "otel-blackbox"
# What the build needs besides src/ (those present are copied).
BUILD_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "MANIFEST.in", "README.md", "LICENSE")
TIMEOUT_S = 300
# Used below: each must be among the commands the installed CLI lists.
USED_COMMANDS = ("list", "cassette", "verify", "report", "eval")

RECORD = """\
import sys
from opentelemetry.sdk.trace import TracerProvider
from otel_blackbox import BlackboxSpanProcessor

provider = TracerProvider()
provider.add_span_processor(BlackboxSpanProcessor(sys.argv[1]))
tracer = provider.get_tracer("wheel-check")
question = "What is the weather in Paris?"
with tracer.start_as_current_span(
    "agent.run", attributes={"openinference.span.kind": "AGENT", "input.value": question}
) as root:
    with tracer.start_as_current_span("ChatCompletion", attributes={
        "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini",
        "llm.token_count.prompt": 20, "llm.token_count.completion": 5,
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": question,
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": "Sunny, 21 C.",
    }):
        pass
provider.shutdown()
print(format(root.get_span_context().trace_id, "032x"))
"""

# Run with the venv's `python -I`: where the package comes from, its version, its data files, and
# every entry point of the distribution (pytest's plugin is only found: pytest is not installed).
INSPECT = """\
import importlib.metadata, importlib.resources, importlib.util, json, sys, sysconfig
import otel_blackbox

data_files = json.loads(sys.argv[1])
entry_points = []
for ep in importlib.metadata.distribution("otel-blackbox").entry_points:
    name = f"{ep.group}: {ep.name} = {ep.value}"
    try:
        if ep.group == "pytest11":
            found = importlib.util.find_spec(ep.module) is not None
        else:
            found = ep.load() is not None
    except Exception as exc:
        found, name = False, f"{name} ({type(exc).__name__}: {exc})"
    entry_points.append([name, found])
root = importlib.resources.files("otel_blackbox")
print(json.dumps({
    "file": otel_blackbox.__file__,
    "purelib": sysconfig.get_paths()["purelib"],
    "path": sys.path,
    "version": otel_blackbox.__version__,
    "metadata_version": importlib.metadata.version("otel-blackbox"),
    "data_missing": [name for name in data_files if not root.joinpath(name).is_file()],
    "entry_points": entry_points,
}))
"""


class CheckFailed(Exception):
    """One line: what failed."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--wheelhouse", type=Path, default=Path(sys.prefix) / "wheelhouse",
        help="the wheels of the build and run dependencies, kept between runs (default: in this venv)",
    )  # fmt: skip
    parser.add_argument("--refresh", action="store_true", help="download the dependencies again first")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder, and print it")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="wheel-check-"))
    started = time.monotonic()
    try:
        check(work, args.wheelhouse.resolve(), refresh=args.refresh)
    except CheckFailed as exc:
        print(f"wheel-check: FAIL: {exc} (files in {work})", file=sys.stderr)
        return 1
    if args.keep:
        print(f"wheel-check: files kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    print(f"wheel-check: passed in {time.monotonic() - started:.1f} s")
    return 0


def check(work: Path, wheelhouse: Path, *, refresh: bool) -> None:
    version = source_version()
    wheelhouse.mkdir(parents=True, exist_ok=True)
    step = Step()

    wheel = build(work, wheelhouse, version, refresh=refresh)
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(f"{PACKAGE}-{version}.dist-info/METADATA").decode()
    data_files = check_contents(names, metadata, version, work / "source" / "src" / PACKAGE)
    step.done(f"built {wheel.name}: {len(names)} files, every one of src/{PACKAGE} and no other")

    venv = work / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], "create the venv")
    python = venv / "bin" / "python"
    install(python, wheel, wheelhouse, refresh=refresh)
    step.done(f"installed into an empty venv (dependencies from {wheelhouse})")

    here = work / "run"  # not the checkout: nothing of it on sys.path
    here.mkdir()
    env = venv_env(venv)
    inspect_installed(python, version, data_files, env, here)
    used = use_installed(venv, python, version, env, here)
    step.done(f"used: {used}")


class Step:
    """Prints each step with the seconds it took."""

    def __init__(self) -> None:
        self.start = time.monotonic()

    def done(self, what: str) -> None:
        now = time.monotonic()
        print(f"wheel-check: {what} ({now - self.start:.1f} s)", flush=True)
        self.start = now


def source_version() -> str:
    text = (ROOT / "src" / PACKAGE / "_version.py").read_text(encoding="utf-8")
    found = re.search(r'^__version__ = "([^"]+)"$', text, re.MULTILINE)
    if found is None:
        raise CheckFailed(f'no __version__ = "..." line in src/{PACKAGE}/_version.py')
    return found.group(1)


def run(
    argv: list[str], what: str, *, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``argv``; any exit but 0 fails the check with ``what`` and the last line of its stderr."""
    done = attempt(argv, env=env, cwd=cwd)
    if done.returncode != 0:
        lines = (done.stderr.strip() or done.stdout.strip()).splitlines() or ["(no output)"]
        raise CheckFailed(f"{what}: exit {done.returncode}: {lines[-1].strip()}")
    return done


def attempt(
    argv: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise CheckFailed(f"{' '.join(argv[:4])} ...: no answer in {TIMEOUT_S} s") from None


def pip(*args: str) -> list[str]:
    return [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", *args]


def offline(wheelhouse: Path) -> list[str]:
    return ["--no-index", "--find-links", str(wheelhouse)]


def build_requires() -> list[str]:
    """``[build-system] requires`` of pyproject.toml (tomllib is not in Python 3.10)."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    section = re.search(r"^\[build-system\]$(.*?)(?=^\[|\Z)", text, re.MULTILINE | re.DOTALL)
    requires = section and re.search(r"^requires\s*=\s*\[(.*?)\]", section.group(1), re.MULTILINE | re.DOTALL)
    if not requires:
        raise CheckFailed("pyproject.toml: no [build-system] requires")
    return re.findall(r"\"([^\"]+)\"", requires.group(1))


def build(work: Path, wheelhouse: Path, version: str, *, refresh: bool) -> Path:
    """The wheel, built by pip (isolated, its build backend from the wheelhouse) from a clean copy."""
    source = work / "source"
    source.mkdir()
    for name in BUILD_FILES:
        if (ROOT / name).is_file():
            shutil.copy2(ROOT / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    shutil.copytree(ROOT / "src", source / "src", ignore=ignore)
    dist = work / "dist"
    command = pip("wheel", "--quiet", "--no-deps", "--wheel-dir", str(dist), *offline(wheelhouse))
    command.append(str(source))
    if refresh or attempt(command).returncode != 0:
        download = pip("download", "--quiet", "--dest", str(wheelhouse), *build_requires())
        run(download, "download the build backend")
        run(command, "build the wheel")
    wheels = sorted(path.name for path in dist.glob("*.whl"))
    expected = f"{PACKAGE}-{version}-py3-none-any.whl"
    if wheels != [expected]:
        raise CheckFailed(f"the build made {wheels or 'no wheel'}, not {expected} (_version.py's version)")
    return dist / expected


def check_contents(names: list[str], metadata: str, version: str, package_dir: Path) -> list[str]:
    """The wheel holds every file of the package it was built from (``package_dir``, the copy of
    src/otel_blackbox) and nothing else; returns its data files."""
    dist_info = f"{PACKAGE}-{version}.dist-info"
    tops = {PurePosixPath(name).parts[0] for name in names}
    if tops != {PACKAGE, dist_info}:
        raise CheckFailed(f"the wheel's top level is {sorted(tops)}, not [{PACKAGE!r}, {dist_info!r}]")
    if f"\nVersion: {version}\n" not in metadata:
        raise CheckFailed(f"{dist_info}/METADATA does not say Version: {version}")
    packaged = {name[len(PACKAGE) + 1 :] for name in names if name.startswith(f"{PACKAGE}/")}
    source = {
        path.relative_to(package_dir).as_posix()
        for path in package_dir.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }
    if missing := sorted(source - packaged):
        raise CheckFailed(f"the wheel lacks files of src/{PACKAGE}: {some(missing)}")
    if extra := sorted(packaged - source):
        raise CheckFailed(f"the wheel has files that src/{PACKAGE} has not: {some(extra)}")
    data = sorted(name for name in packaged if not name.endswith(".py"))
    for pattern in ("py.typed", "*.schema.json", "report.html"):  # what the package loads at run time
        if not any(PurePosixPath(name).match(pattern) for name in data):
            raise CheckFailed(f"the wheel has no {pattern} in {PACKAGE}/")
    return data


def some(names: list[str], shown: int = 5) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def install(python: Path, wheel: Path, wheelhouse: Path, *, refresh: bool) -> None:
    """The wheel and its dependencies into the venv: from the wheelhouse, filled from the index first
    when it lacks one (only the dependencies are kept there, never this project's wheel)."""
    target = ["--python", str(python)]
    command = pip(*target, "install", "--quiet", *offline(wheelhouse), str(wheel))
    if refresh or attempt(command).returncode != 0:
        run(pip(*target, "download", "--quiet", "--dest", str(wheelhouse), str(wheel)),
            "download the dependencies")  # fmt: skip
        for copied in wheelhouse.glob(f"{PACKAGE}-*.whl"):
            copied.unlink()
        run(command, "install the wheel")


def venv_env(venv: Path) -> dict[str, str]:
    """The caller's environment without anything that would put another Python path in (PYTHON*,
    VIRTUAL_ENV) or change the recorder (OTEL_*): the venv's bin first on PATH, no user site."""
    dropped = ("PYTHON", "OTEL_", "VIRTUAL_ENV", "__PYVENV")
    env = {key: value for key, value in os.environ.items() if not key.startswith(dropped)}
    path = os.pathsep.join([str(venv / "bin"), env.get("PATH", "")])
    return env | {"PATH": path, "PYTHONNOUSERSITE": "1", "PYTHONSAFEPATH": "1", "COLUMNS": "200"}


def inspect_installed(
    python: Path, version: str, data_files: list[str], env: dict[str, str], here: Path
) -> None:
    """Where ``import otel_blackbox`` finds the package, its version, its data and entry points."""
    argv = [str(python), "-I", "-c", INSPECT, json.dumps(data_files)]
    done = run(argv, "inspect the installed package", env=env, cwd=here)
    found = json.loads(done.stdout)
    purelib = Path(found["purelib"])
    if not Path(found["file"]).is_relative_to(purelib):
        raise CheckFailed(f"{PACKAGE} was imported from {found['file']}, not from the venv's {purelib}")
    inside = [entry for entry in found["path"] if entry and Path(entry).resolve().is_relative_to(ROOT)]
    if inside:
        raise CheckFailed(f"the checkout is on the venv's sys.path: {inside[0]}")
    for key in ("version", "metadata_version"):
        if found[key] != version:
            raise CheckFailed(f"the installed package's {key} is {found[key]}, not {version}")
    if found["data_missing"]:
        raise CheckFailed(f"the installed package cannot load {', '.join(found['data_missing'])}")
    broken = [name for name, loaded in found["entry_points"] if not loaded]
    if broken or not found["entry_points"]:
        raise CheckFailed(f"entry point does not load: {broken[0] if broken else 'none declared'}")


def use_installed(venv: Path, python: Path, version: str, env: dict[str, str], here: Path) -> str:
    """Record, list, write a cassette, verify it, report, eval; --version and every --help."""
    program = str(venv / "bin" / PROG)

    def cli(*args: str) -> str:
        return run([program, *args], f"{PROG} {' '.join(args)}", env=env, cwd=here).stdout

    shown = cli("--version").strip()
    if shown != f"{PROG}, version {version}":
        raise CheckFailed(f"{PROG} --version printed {shown!r}, not '{PROG}, version {version}'")

    (here / "record.py").write_text(RECORD, encoding="utf-8")
    db = "blackbox.db"
    trace = run([str(python), "-I", "record.py", db], "record a span", env=env, cwd=here).stdout.strip()
    if not re.fullmatch(r"[0-9a-f]{32}", trace):
        raise CheckFailed(f"record.py printed {trace[:80]!r}, not a trace id")
    listed = cli("--db", db, "list")
    if trace not in listed or "agent.run" not in listed:
        raise CheckFailed(f"{PROG} --db {db} list does not show trace {trace} (agent.run)")

    cli("--db", db, "cassette", trace, "-o", "c.json")
    verified = cli("verify", "c.json").splitlines()
    if not verified or (failed := [line for line in verified if not line.startswith("PASS")]):
        raise CheckFailed(f"{PROG} verify c.json: {failed[0] if verified else 'no output'}")
    cli("--db", db, "report", trace, "-o", "r.html")
    report = (here / "r.html").read_text(encoding="utf-8")
    if 'id="blackbox-data"' not in report or trace not in report:
        raise CheckFailed(f"{PROG} report wrote an r.html without the report page or trace {trace}")
    cli("eval", "generate", "c.json", "-o", "contract.json")
    if not cli("eval", "run", "contract.json", "c.json").startswith("PASS"):
        raise CheckFailed(f"{PROG} eval run contract.json c.json did not pass")

    helped = help_of_every_command(cli)
    done = "--version, a span recorded and listed, a cassette written and verified, report, eval"
    return f"{done}, {helped} --help"


def commands_in_help(text: str) -> list[str]:
    """The names a click group's --help lists: the rows of its "Commands:" section (a row's
    continuation lines are indented deeper)."""
    names: list[str] = []
    inside = False
    for line in text.splitlines():
        if line.rstrip() == "Commands:":
            inside = True
        elif inside and (row := re.match(r"  (\S+)", line)):
            names.append(row.group(1))
        elif inside and not line.startswith("   "):
            inside = False
    return names


def help_of_every_command(cli: Callable[..., str]) -> int:
    """--help of the CLI, of every command it lists and of every subcommand of a group; the count."""
    pending: list[list[str]] = [[]]
    helped = 0
    while pending:
        path = pending.pop(0)
        text = cli(*path, "--help")
        usage = " ".join(["Usage:", PROG, *path])
        if not text.startswith(usage + " "):
            raise CheckFailed(f"{' '.join([PROG, *path, '--help'])} does not start with {usage!r}")
        names = commands_in_help(text)
        if not path and (missing := [name for name in USED_COMMANDS if name not in names]):
            raise CheckFailed(f"{PROG} --help lists no {missing[0]!r} command (it lists {names})")
        pending += [[*path, name] for name in names]
        helped += 1
    return helped


if __name__ == "__main__":
    sys.exit(main())
