"""A tiny weather HTTP API on 127.0.0.1 for the agents' tools (stdlib only).

``GET /weather?city=Lisbon`` answers the current weather, ``POST /forecast`` with
``{"city": ..., "days": N}`` the daily highs. Every request is kept in ``requests`` (method, path,
body), so a test can tell what reached the API and what a replay answered from a recording.

    python examples/weather_api.py --port 8001
"""

from __future__ import annotations

import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit


def weather(city: str) -> dict[str, Any]:
    return {"city": city, "temperature_c": 8 + sum(map(ord, city)) % 17, "conditions": "sunny"}


def forecast(city: str, days: int) -> dict[str, Any]:
    highs = [8 + (sum(map(ord, city)) + 3 * day) % 17 for day in range(1, max(1, min(days, 7)) + 1)]
    return {"city": city, "days": len(highs), "daily_high_c": highs}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self, status: int, payload: Any) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        self.server.record("GET", self.path, b"")
        city = parse_qs(url.query).get("city", [""])[0]
        if url.path != "/weather" or not city:
            self._answer(404, {"error": "GET /weather?city=NAME"})
            return
        self._answer(200, weather(city))

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.record("POST", self.path, body)
        try:
            request = json.loads(body)
            answer = forecast(str(request["city"]), int(request["days"]))
        except (ValueError, KeyError, TypeError):
            self._answer(400, {"error": 'POST /forecast {"city": NAME, "days": N}'})
            return
        if self.path != "/forecast":
            self._answer(404, {"error": "no such path"})
            return
        self._answer(200, answer)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, requests: list[tuple[str, str, bytes]]) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.requests = requests
        self.lock = threading.Lock()

    def record(self, method: str, path: str, body: bytes) -> None:
        with self.lock:
            self.requests.append((method, path, body))


class WeatherAPI:
    """The API in a background thread: ``with WeatherAPI() as api: ... api.url``."""

    def __init__(self, port: int = 0) -> None:
        self.requests: list[tuple[str, str, bytes]] = []
        self._server = _Server(port, self.requests)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> WeatherAPI:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free one)")
    args = parser.parse_args()
    with WeatherAPI(args.port) as api:
        print(f"weather API on {api.url}", flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main()
