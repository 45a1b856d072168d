"""The venvs of the instrumentation families whose pins conflict with the main one (tests/conformance/).

One venv per tests/conformance/requirements/NAME.txt, holding those pins and this project's own
dependencies (not the project: the conformance agents run it from src/ on PYTHONPATH, so one venv
serves every checkout). Each is kept in a cache folder under a key made of the requirements, the
project's dependencies and the interpreter, and .venv-conformance/NAME points to it: a clean clone
on a machine that built them once reuses them, and a changed pin builds a new one. A venv is marked
complete when its installs are done: one whose build was interrupted is made again, never used.

    python scripts/conformance_venvs.py --python python3.11 [--cache DIR] [--jobs 2] [NAME ...]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = ROOT / "tests" / "conformance" / "requirements"
LINKS = ROOT / ".venv-conformance"
DEFAULT_CACHE = (
    Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "otel-blackbox" / "conformance"
)


def project_dependencies() -> list[str]:
    """The project's runtime dependencies, as pyproject.toml lists them."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pip's own copy of tomli
        from pip._vendor import tomli as tomllib
    with (ROOT / "pyproject.toml").open("rb") as file:
        return [str(d) for d in tomllib.load(file)["project"]["dependencies"]]


def interpreter_id(python: str) -> str:
    code = "import sys; print(sys.version.split()[0], sys.base_prefix)"
    return subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def key_of(name: str, python_id: str, dependencies: list[str]) -> str:
    digest = hashlib.sha256()
    for part in ((REQUIREMENTS / f"{name}.txt").read_text(), "\n".join(dependencies), python_id):
        digest.update(part.encode() + b"\0")
    return f"{name}-{digest.hexdigest()[:16]}"


def build(name: str, python: str, cache: Path, key: str, dependencies: list[str]) -> str:
    """The venv of ``name`` in the cache (built unless it is there), linked from .venv-conformance/."""
    venv = cache / key
    started = time.monotonic()
    built = not (venv / ".complete").exists()
    if built:  # made where it stays: a venv's scripts name their folder
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
        subprocess.run([*pip, "--upgrade", "pip"], check=True)
        subprocess.run([*pip, "-r", str(REQUIREMENTS / f"{name}.txt"), *dependencies], check=True)
        (venv / ".complete").touch()
    link = LINKS / name
    if link.is_symlink() or link.is_file():
        link.unlink()
    elif link.exists():
        shutil.rmtree(link)
    link.symlink_to(venv, target_is_directory=True)
    return f"{name}: {'built' if built else 'cached'} in {venv} ({time.monotonic() - started:.0f} s)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", required=True, help="the interpreter the venvs are made with")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("names", nargs="*", help="default: every requirements file")
    args = parser.parse_args()
    names = args.names or sorted(p.stem for p in REQUIREMENTS.glob("*.txt"))
    args.cache.mkdir(parents=True, exist_ok=True)
    LINKS.mkdir(exist_ok=True)
    dependencies = project_dependencies()
    python_id = interpreter_id(args.python)
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        jobs = [
            pool.submit(build, n, args.python, args.cache, key_of(n, python_id, dependencies), dependencies)
            for n in names
        ]
        for job in jobs:
            print(f"conformance venv {job.result()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
