"""A workbench (`otel-blackbox ui`'s server) on a free port in this process, and a client that
speaks to it as a browser would: GET pages, POST urlencoded forms, redirects not followed."""

from __future__ import annotations

import http.client
import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from otel_blackbox._web.server import ViewerServer, make_server

TOKEN_FIELD = re.compile(r'name="token" value="([^"]+)"')
OTHER_PROVIDERS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "GEMINI_API_KEY",
                   "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_GENAI_USE_VERTEXAI")  # fmt: skip


def only_openai(monkeypatch: Any, openai_base_url: str) -> None:
    """openai reachable (the fake provider at ``openai_base_url``), no other provider: what the
    workbench's form then offers."""
    for name in OTHER_PROVIDERS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-workbench-not-a-real-key")


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: str

    @property
    def location(self) -> str:
        return self.headers.get("location", "")


class Client:
    def __init__(self, server: ViewerServer) -> None:
        self.server = server
        self.host, self.port = str(server.server_address[0]), int(server.server_address[1])

    @property
    def origin(self) -> str:
        return f"http://{self.host}:{self.port}"

    def request(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> Answer:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            response = conn.getresponse()
            text = response.read().decode("utf-8")
            return Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, text)
        finally:
            conn.close()

    def get(self, path: str, headers: dict[str, str] | None = None) -> Answer:
        return self.request("GET", path, headers=headers)

    def post(self, path: str, fields: dict[str, Any], headers: dict[str, str] | None = None) -> Answer:
        body = urlencode(fields, doseq=True).encode()
        sent = {"Content-Type": "application/x-www-form-urlencoded", "Origin": self.origin, **(headers or {})}
        return self.request("POST", path, body, {k: v for k, v in sent.items() if v is not None})

    def token(self, page: str = "/contracts") -> str:
        found = TOKEN_FIELD.search(self.get(page).body)
        assert found, f"no token field on {page}"
        return found.group(1)

    def wait(self, job_path: str, timeout: float = 60.0) -> dict[str, Any]:
        """The job's progress once it is no longer running."""
        deadline = time.monotonic() + timeout
        while True:
            progress: dict[str, Any] = json.loads(self.get(f"/api{job_path}").body)
            if progress["state"] != "running" or time.monotonic() > deadline:
                return progress
            time.sleep(0.1)


@contextmanager
def workbench(db: Path, workdir: Path, **options: Any) -> Iterator[Client]:
    server = make_server(db, port=0, workdir=workdir, **options)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Client(server)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
