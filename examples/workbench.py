"""`make workbench`: the workbench (`otel-blackbox ui`) over the demo's database, with the fake
provider running, so the incident path can be clicked through with no API key.

It needs ./demo.db (`make demo` makes it; this script runs the demo first when it is missing). The fake
OpenAI-compatible provider listens on 127.0.0.1:8400 (any free port when that one is taken), and the
workbench on http://127.0.0.1:8765. On the refund run (the one whose refund_order failed): rerun with
the model `thorough` and the stub `"refunded 12.00 on order Alpha"`: failure fixed. Ctrl-C stops both.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from fake_llm import FakeLLMServer  # noqa: E402 (examples/ is not a package)

DB = Path("demo.db")
FAKE_PROVIDER_PORT = 8400
UI_PORT = 8765
CLI = shutil.which("otel-blackbox", path=str(Path(sys.executable).parent)) or "otel-blackbox"


def provider() -> FakeLLMServer:
    try:
        return FakeLLMServer(FAKE_PROVIDER_PORT).start()
    except OSError:  # taken: any free port does, the workbench is told which
        return FakeLLMServer().start()


def main() -> int:
    if not DB.exists():
        print(f"{DB} is missing: running the demo first", flush=True)
        subprocess.run([sys.executable, str(HERE / "demo.py")], check=True, stdout=subprocess.DEVNULL)
    llm = provider()
    env = {**os.environ, "OPENAI_BASE_URL": llm.openai_base_url, "OPENAI_API_KEY": "sk-demo-not-a-real-key"}
    print(f"fake provider on {llm.openai_base_url}; the workbench on http://127.0.0.1:{UI_PORT}", flush=True)
    hint = 'On the refund run: model "thorough", stub refund_order "refunded 12.00 on order Alpha".'
    print(hint, flush=True)
    try:
        return subprocess.run([CLI, "--db", str(DB), "ui", "--port", str(UI_PORT)], env=env).returncode
    except KeyboardInterrupt:
        return 0
    finally:
        llm.stop()


if __name__ == "__main__":
    sys.exit(main())
