"""No credential leaves the process: realistic keys and tokens planted everywhere an agent run puts
data are searched for in every artifact the project writes, in every encoding it writes them.

One real run per SDK (openai, anthropic streamed), both instrumented by OpenInference and by the OTel
httpx instrumentation (every request header captured), is recorded at once by BlackboxSpanProcessor
(a SQLite file), CassetteSpanExporter and a record session. A seeded corpus of credentials is in the
prompt, the tool arguments, the tool results, a tool's own HTTP call, the request headers, an
exception message and the resource. Every file and output made from that (the database and its WAL,
cassettes, both exports, a push, HTML reports, the CLI's text and JSON) is searched as bytes for
each secret in each encoding (JSON, HTML, URL, base64 at every alignment, gzip), for fragments of
it, and again after decoding the JSON it holds.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import html
import json
import os
import random
import re
import sqlite3
import string
import subprocess
import sys
import zlib
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import anthropic
import anthropic_agent  # examples/ is on sys.path (conftest.py)
import httpx
import openai
import pytest
import weather_agent
from fake_llm import FakeLLMServer
from google.protobuf import json_format  # type: ignore[import-untyped]
from helpers import Receiver, figure, run_cli, sized, stored_rows
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam
from openinference.instrumentation.anthropic import AnthropicInstrumentor
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.instrumentation.httpx import HTTPX2ClientInstrumentor, HTTPXClientInstrumentor
from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Tracer

import otel_blackbox
from otel_blackbox import BlackboxConfig, BlackboxSpanProcessor
from otel_blackbox._cassette.io import load_cassette
from otel_blackbox._cassette.verify import verify_cassette
from otel_blackbox._recorder.cassette_exporter import CassetteSpanExporter
from otel_blackbox.errors import CredentialLeak

pytestmark = pytest.mark.reliability

TEST = "test_secrets"
SEED = 7  # the same corpus on every run: a failure names a secret that can be found again

# -- the corpus -------------------------------------------------------------------------------------

ALNUM = string.ascii_letters + string.digits
B64URL = ALNUM + "-_"
# User-defined secrets, shaped like nothing built in: masked only through OTEL_BLACKBOX_REDACT_PATTERNS
# and OTEL_BLACKBOX_REDACT_FIELDS.
ACME_PATTERN = r"ACME-[A-Z0-9]{24}"
ACME_FIELD = "x-acme-key"
MASK = "[REDACTED"


@dataclass(frozen=True)
class Secret:
    kind: str
    value: str  # the credential: no part of it may be written anywhere
    text: str  # how the agent's data holds it, with its usual context


def _chars(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _jwt(rng: random.Random) -> str:
    header = {"alg": rng.choice(["RS256", "HS256", "ES256"]), "typ": "JWT", "kid": _chars(rng, ALNUM, 16)}
    claims = {
        "sub": f"user-{_chars(rng, ALNUM, 12)}",
        "iss": "https://auth.example.com/",
        "iat": 1_700_000_000 + rng.randrange(10**7),
        "scope": "deploy read:secrets",
    }
    signature = rng.randbytes(256 if header["alg"] == "RS256" else 64 if header["alg"] == "ES256" else 32)
    compact = (",", ":")
    parts = (json.dumps(header, separators=compact).encode(), json.dumps(claims, separators=compact).encode())
    return ".".join(_b64url(part) for part in (*parts, signature))


def make_corpus(rng: random.Random, copies: int) -> list[Secret]:
    """Credentials with the real prefixes, alphabets and lengths; none is live."""
    secrets: list[Secret] = []
    for _ in range(copies):
        legacy = f"sk-{_chars(rng, ALNUM, 20)}T3BlbkFJ{_chars(rng, ALNUM, 20)}"
        project = f"sk-proj-{_chars(rng, B64URL, 74)}T3BlbkFJ{_chars(rng, B64URL, 74)}"
        service = f"sk-svcacct-{_chars(rng, B64URL, 74)}T3BlbkFJ{_chars(rng, B64URL, 74)}"
        claude = f"sk-ant-api03-{_chars(rng, B64URL, 93)}AA"
        bearer = f"ya29.{_chars(rng, B64URL, 120)}"
        aws_id = f"AKIA{_chars(rng, string.ascii_uppercase + '234567', 16)}"
        aws_secret = _chars(rng, ALNUM + "/+", 40)
        classic, oauth = f"ghp_{_chars(rng, ALNUM, 36)}", f"gho_{_chars(rng, ALNUM, 36)}"
        fine_grained = f"github_pat_{_chars(rng, ALNUM, 22)}_{_chars(rng, ALNUM, 59)}"
        jwt = _jwt(rng)
        https_password, pg_password = _chars(rng, ALNUM, 16), _chars(rng, ALNUM, 20)
        acme = f"ACME-{_chars(rng, string.ascii_uppercase + string.digits, 24)}"
        db_password, session_cookie = _chars(rng, ALNUM, 18), _chars(rng, ALNUM, 32)
        secrets += [
            Secret("openai-legacy", legacy, f"old key {legacy}"),
            Secret("openai-project", project, f"project key {project}"),
            Secret("openai-service-account", service, f"service account {service}"),
            Secret("anthropic", claude, f"claude key {claude}"),
            Secret("bearer", bearer, f"Authorization: Bearer {bearer}"),
            Secret("aws-access-key-id", aws_id, f"aws_access_key_id = {aws_id}"),
            Secret("aws-secret-access-key", aws_secret, f"aws_secret_access_key = {aws_secret}"),
            Secret("github-classic", classic, f"gh token {classic}"),
            Secret("github-oauth", oauth, f"oauth {oauth}"),
            Secret("github-fine-grained", fine_grained, f"pat {fine_grained}"),
            Secret("jwt", jwt, f"session {jwt}"),
            Secret("url-password", https_password, f"https://deploy:{https_password}@git.example.com/a.git"),
            Secret("url-password", pg_password, f"postgres://app:{pg_password}@db.internal:5432/prod"),
            Secret("user-pattern", acme, f"internal token {acme}"),
            Secret("env-password", db_password, f"DB_PASSWORD={db_password}"),
            # The secret is the second pair of the line; the line ends there.
            Secret("cookie", session_cookie, f"Cookie: theme=dark; sessionid={session_cookie}\n"),
            Secret("user-field", (field := _chars(rng, "0123456789abcdef", 32)), f"{ACME_FIELD}: {field}"),
        ]
    return secrets


@dataclass(frozen=True)
class Corpus:
    planted: list[Secret]  # in prompts, tool arguments and results, exceptions, resource, headers
    # The SDKs' api_key, only in the Authorization header they send (a record session refuses a
    # cassette holding the program's own key: see the refused run).
    openai_key: Secret
    anthropic_key: Secret

    @property
    def all(self) -> list[Secret]:
        return [*self.planted, self.openai_key, self.anthropic_key]

    def text(self, tag: str) -> str:
        """Every planted secret in its context, between two markers that must survive redaction."""
        return f"<<{tag}-START {'; '.join(s.text for s in self.planted)} {tag}-END>>"

    def field_value(self) -> str:
        return self.first("user-field")

    def first(self, kind: str) -> str:
        return next(s.value for s in self.planted if s.kind == kind)


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    rng = random.Random(SEED)
    planted = make_corpus(rng, sized(1, 6))
    header_keys = make_corpus(rng, 1)
    return Corpus(
        planted,
        next(s for s in header_keys if s.kind == "openai-project"),
        next(s for s in header_keys if s.kind == "anthropic"),
    )


def assert_masked(text: str, tag: str, corpus: Corpus) -> None:
    """What surrounded the secrets is still there, with a mask in the place of each."""
    start, end = text.find(f"<<{tag}-START "), text.find(f" {tag}-END>>")
    assert 0 <= start < end, f"{tag} markers lost: {text[:200]!r}"
    masked = text[start:end]
    assert masked.count(MASK) >= len(corpus.planted), masked
    assert "aws_secret_access_key = [REDACTED]" in masked and f"{ACME_FIELD}: [REDACTED]" in masked


# -- the scanner ------------------------------------------------------------------------------------


def _base64_cores(value: bytes) -> Iterator[bytes]:
    """What the base64 (and base64url) of any bytes containing ``value`` must contain, at each of the
    three alignments: its encoding without the characters it shares with its neighbours."""
    for shift in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            yield encode(b"\0" * shift + value).rstrip(b"=")[4 if shift else 0 : -4]


def _forms(value: str) -> set[bytes]:
    """``value`` in each encoding an artifact could hold it in."""
    texts = {
        value,
        json.dumps(value)[1:-1],
        json.dumps(value)[1:-1].replace("/", "\\/"),
        "".join(c if c.isalnum() else f"\\u{ord(c):04x}" for c in value),  # every symbol escaped
        html.escape(value),
        "".join(c if c.isalnum() else f"&#{ord(c)};" for c in value),
        "".join(c if c.isalnum() else f"&#x{ord(c):x};" for c in value),
        quote(value, safe=""),
        quote_plus(value, safe=""),
    }
    return {t.encode() for t in texts} | set(_base64_cores(value.encode()))


def _fragments(value: str) -> list[str]:
    """What a partial mask would leave: 12 characters a quarter in (past any fixed prefix), 16 from
    the middle, and the last 12 (a mask that keeps the tail of a key still leaks it)."""
    if len(value) < 24:
        return []
    quarter, middle = len(value) // 4, len(value) // 2
    return [value[quarter : quarter + 12], value[middle - 8 : middle + 8], value[-12:]]


def _strings(value: Any) -> Iterator[str]:
    """Every string of a JSON value, and of the JSON held in its strings, decoded."""
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            yield item
            if item.lstrip()[:1] in ("{", "["):
                with contextlib.suppress(ValueError):  # only looks like JSON
                    todo.append(json.loads(item))
        elif isinstance(item, dict):
            todo.extend(item.keys())
            todo.extend(item.values())
        elif isinstance(item, list):
            todo.extend(item)


@dataclass(frozen=True)
class Leak:
    artifact: str
    secret: Secret
    how: str  # "whole" (in some encoding) or "fragment"
    context: bytes

    def __str__(self) -> str:
        return f"{self.artifact}: {self.secret.kind} ({self.how}): {self.context!r}"


@dataclass
class Scanner:
    """Searches artifacts, as bytes, for every secret of the corpus in every form."""

    needles: list[tuple[Secret, str, bytes]] = field(default_factory=list)
    scanned: dict[str, int] = field(default_factory=dict)  # artifact -> bytes searched
    leaks: list[Leak] = field(default_factory=list)

    @classmethod
    def of(cls, corpus: Corpus) -> Scanner:
        scanner = cls()
        for secret in corpus.all:
            scanner.needles += [(secret, "whole", form) for form in sorted(_forms(secret.value))]
            for fragment in _fragments(secret.value):
                scanner.needles += [(secret, "fragment", form) for form in sorted(_forms(fragment))]
        return scanner

    def scan(self, artifact: str, data: bytes | str) -> None:
        raw = data.encode() if isinstance(data, str) else data
        if raw[:2] == b"\x1f\x8b":  # gzip: what it holds
            raw = gzip.decompress(raw)
        self.scanned[artifact] = self.scanned.get(artifact, 0) + len(raw)
        for secret, how, needle in self.needles:
            where = raw.find(needle)
            if where >= 0:
                self.leaks.append(
                    Leak(artifact, secret, how, raw[max(0, where - 50) : where + len(needle) + 10])
                )

    def scan_json(self, artifact: str, data: bytes | str, *, lines: bool = False) -> None:
        """The bytes, then every string decoded (JSON inside JSON strings too)."""
        self.scan(artifact, data)
        text = data.decode() if isinstance(data, bytes) else data
        values = (
            [json.loads(line) for line in text.splitlines() if line.strip()] if lines else [json.loads(text)]
        )
        self.scan(f"{artifact} (decoded)", "\n".join(_strings(values)))

    def scan_html(self, artifact: str, page: str) -> None:
        self.scan(artifact, page)
        embedded = re.search(r'<script type="application/json" id="blackbox-data">(.*?)</script>', page, re.S)
        assert embedded, f"{artifact}: no embedded data"
        self.scan_json(f"{artifact} data", embedded.group(1))

    def assert_clean(self, test: str) -> None:
        figure(test, "artifacts scanned", len(self.scanned))
        figure(test, "bytes scanned", sum(self.scanned.values()))
        by_artifact: dict[str, list[Leak]] = {}
        for leak in self.leaks:
            by_artifact.setdefault(leak.artifact, []).append(leak)
        report = [f"{len(found)} in {name}, e.g. {found[0]}" for name, found in by_artifact.items()]
        assert not self.leaks, "secrets leaked:\n" + "\n".join(report)


# -- the agent run ----------------------------------------------------------------------------------


@dataclass
class SecretTools(weather_agent.WeatherTools):
    """Tools that hand the model credentials: in what they fetch and return, and in what they raise."""

    corpus: Corpus | None = None
    status_url: str = ""

    def fetch_credentials(self, **arguments: Any) -> str:
        assert self.corpus is not None
        # Its own HTTP call: the fake answers 404 quoting the path, credentials in the query included.
        status = httpx.get(self.status_url, timeout=10).text
        found = {"found": self.corpus.text("RESULT"), "status": status, ACME_FIELD: self.corpus.field_value()}
        return json.dumps({**found, "aws_secret_access_key": self.corpus.first("aws-secret-access-key")})

    def deploy(self, target: str) -> str:
        assert self.corpus is not None
        raise PermissionError(f"deploy to {target} refused: {self.corpus.text('EXCEPTION')}")

    # The Anthropic run keeps the weather tools: one returns credentials, the other raises them.
    def get_weather(self, city: str) -> str:
        return self.fetch_credentials(city=city)

    def get_forecast(self, city: str, days: int = 3) -> str:
        return self.deploy(city)

    def functions(self) -> dict[str, Callable[..., str]]:
        return {**super().functions(), "fetch_credentials": self.fetch_credentials, "deploy": self.deploy}


def openai_tools(corpus: Corpus) -> list[ChatCompletionToolParam]:
    """The fake model fills an enum property with its first value: that is how it "decides" to pass
    credentials as tool arguments."""
    notes = {"type": "string", "enum": [corpus.text("ARGS")]}
    target = {"type": "string", "enum": ["prod"]}
    return [
        {
            "type": "function",
            "function": {"name": name, "parameters": {"type": "object", "properties": properties}},
        }
        for name, properties in (("fetch_credentials", {"notes": notes}), ("deploy", {"target": target}))
    ]


def run_openai_agent(
    client: openai.OpenAI, tracer: Tracer, corpus: Corpus, tools: SecretTools, question: str
) -> str:
    """weather_agent's loop with the credential tools: the model calls both, then answers."""
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": question}]
    with weather_agent.agent_span(tracer, "secrets-agent", question, "session-secrets") as span:
        for _ in range(weather_agent.MAX_TURNS):
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=messages, tools=openai_tools(corpus)
            )
            message = reply.choices[0].message
            messages.append(weather_agent.assistant_turn(message))
            calls = [c for c in message.tool_calls or [] if c.type == "function"]
            if not calls:
                span.set_attribute("output.value", message.content or "")
                return f"{span.get_span_context().trace_id:032x}"
            for call in calls:
                result = weather_agent.run_tool(tracer, tools, call.function.name, call.function.arguments)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    raise AssertionError("the fake model never answered")


def question(corpus: Corpus) -> str:
    return f"Use both tools. {corpus.text('PROMPT')}"


@dataclass
class Run:
    """What the recorded runs left behind."""

    db: Path
    live_files: dict[str, bytes]  # the database and its WAL while the recorder still had them open
    openai_trace: str
    anthropic_trace: str
    sessions: list[Path]  # the record sessions' cassettes
    exported: list[Path]  # CassetteSpanExporter's
    refusal: str  # the CredentialLeak of the session whose prompt held the program's own key
    refused: Path
    openai_base_url: str
    status_url: str


@contextlib.contextmanager
def environment(*, redact: bool) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as env:
        env.setenv("OTEL_BLACKBOX_REDACT", str(redact).lower())
        # The user's own secrets, configured the documented way, for the recorder and the sessions.
        env.setenv("OTEL_BLACKBOX_REDACT_PATTERNS", json.dumps([ACME_PATTERN]))
        env.setenv("OTEL_BLACKBOX_REDACT_FIELDS", ACME_FIELD)
        # Every request and response header becomes a span attribute (http.request.header.*).
        env.setenv("OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_CLIENT_REQUEST", ".*")
        env.setenv("OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_CLIENT_RESPONSE", ".*")
        for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
            env.delenv(name, raising=False)
        yield


@pytest.fixture(scope="module")
def run(corpus: Corpus, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    with environment(redact=True):  # kept for the module: the replay reads the same settings
        yield record(corpus, tmp_path_factory.mktemp("secrets"))


def record(corpus: Corpus, workdir: Path) -> Run:
    db = workdir / "blackbox.db"
    resource = Resource.create(
        {
            "service.name": "secrets-agent",
            "deploy.notes": corpus.text("RESOURCE"),
            ACME_FIELD: corpus.field_value(),
        }
    )
    provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    processor = BlackboxSpanProcessor(config=BlackboxConfig.from_env(db_path=db))
    provider.add_span_processor(processor)
    provider.add_span_processor(SimpleSpanProcessor(CassetteSpanExporter(workdir / "exported")))
    tracer = provider.get_tracer("secrets")
    instrumentors: list[BaseInstrumentor] = [
        OpenAIInstrumentor(),
        AnthropicInstrumentor(),
        HTTPXClientInstrumentor(),
        HTTPX2ClientInstrumentor(),
    ]
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=provider)
    sessions = [workdir / "openai-session.json", workdir / "anthropic-session.json"]
    refused = workdir / "refused.json"
    # Secret headers of the program's own, beside the Authorization header the SDKs send.
    headers = {ACME_FIELD: corpus.field_value(), "x-debug-auth": f"Bearer {corpus.first('bearer')}"}
    try:
        with FakeLLMServer() as server:
            base_url = server.openai_base_url
            query = f"token={corpus.first('github-classic')}&api_key={corpus.first('user-pattern')}"
            status_url = f"{base_url}/status?{query}"
            tools = SecretTools(corpus=corpus, status_url=status_url)
            with openai.OpenAI(
                base_url=base_url,
                api_key=corpus.openai_key.value,
                default_headers=headers,
                max_retries=0,
            ) as client:
                with otel_blackbox.session(mode="record", cassette=sessions[0]):
                    openai_trace = run_openai_agent(client, tracer, corpus, tools, question(corpus))
                # The program's own key in its prompt: the session refuses to write the cassette.
                with (
                    pytest.raises(CredentialLeak) as refusal,
                    otel_blackbox.session(mode="record", cassette=refused),
                ):
                    run_openai_agent(
                        client, tracer, corpus, tools, f"{question(corpus)} {corpus.openai_key.text}"
                    )
            with (
                anthropic.Anthropic(
                    base_url=server.anthropic_base_url,
                    api_key=corpus.anthropic_key.value,
                    default_headers=headers,
                    max_retries=0,
                    open_telemetry=False,
                ) as claude,
                otel_blackbox.session(mode="record", cassette=sessions[1]),
            ):
                _, anthropic_trace = anthropic_agent.run_agent(
                    claude, tracer, question(corpus), stream=True, tools=tools
                )
    finally:
        for instrumentor in instrumentors:
            instrumentor.uninstrument()
    assert processor.force_flush(10_000)
    live = {path.name: path.read_bytes() for path in (db, db.with_name(f"{db.name}-wal")) if path.exists()}
    provider.shutdown()
    return Run(
        db=db,
        live_files=live,
        openai_trace=openai_trace,
        anthropic_trace=anthropic_trace,
        sessions=sessions,
        exported=sorted((workdir / "exported").glob("*.json")),
        refusal=str(refusal.value),
        refused=refused,
        openai_base_url=base_url,
        status_url=status_url,
    )


def spans(db: Path) -> list[dict[str, Any]]:
    """Every row of the spans table, its JSON columns decoded (those stored apart read back)."""
    rows = [dict(row) for row in stored_rows(db)]
    conn = sqlite3.connect(db)
    try:  # resource and scope as the view gives them (stored_rows reads span_rows)
        shared = {r[0]: (r[1], r[2]) for r in conn.execute("SELECT id, resource, scope FROM spans")}
    finally:
        conn.close()
    for row in rows:
        row["resource"], row["scope"] = shared[row["id"]]
        for column in ("attributes", "events", "links", "resource", "scope"):
            row[column] = json.loads(row[column])
    return rows


def span(db: Path, name: str) -> dict[str, Any]:
    return next(row for row in spans(db) if row["name"] == name)


# -- the tests --------------------------------------------------------------------------------------


def test_the_corpus_has_the_real_shapes(corpus: Corpus) -> None:
    lengths = {s.kind: len(s.value) for s in corpus.planted}
    expected = {
        "openai-legacy": 51, "anthropic": 108, "aws-access-key-id": 20, "aws-secret-access-key": 40,
        "github-classic": 40, "github-oauth": 40, "github-fine-grained": 93, "user-pattern": 29,
    }  # fmt: skip
    assert {kind: lengths[kind] for kind in expected} == expected
    assert lengths["openai-project"] > 150 and lengths["openai-service-account"] > 150
    assert all("T3BlbkFJ" in s.value for s in corpus.all if s.kind.startswith("openai"))
    assert all(s.value.endswith("AA") for s in corpus.all if s.kind == "anthropic")
    for jwt in (s.value for s in corpus.planted if s.kind == "jwt"):
        header = json.loads(base64.urlsafe_b64decode(jwt.split(".")[0] + "=="))
        assert header["typ"] == "JWT" and len(jwt.split(".")) == 3
    figure(TEST, "secrets in the corpus", len(corpus.all))
    figure(TEST, "kinds", len({s.kind for s in corpus.all}))
    figure(TEST, "places planted", "prompt, tool arguments, tool results, a tool's HTTP call, request "
           "headers, exception message, resource, model answer")  # fmt: skip
    figure(TEST, "needles (encodings and fragments)", len(Scanner.of(corpus).needles))


def test_the_scanner_finds_every_encoding_and_fragment(corpus: Corpus) -> None:
    scanner = Scanner.of(corpus)
    for secret in corpus.all:
        for shift in range(3):  # each base64 alignment
            blob = f"{'x' * shift}{secret.value} and more".encode()
            planted = {
                "raw": blob,
                "json": json.dumps({"v": blob.decode()}).encode(),
                "json, escaped slashes": json.dumps(blob.decode()).replace("/", "\\/").encode(),
                "html": html.escape(blob.decode()).encode(),
                "url": quote(blob).encode(),
                "base64": base64.b64encode(blob),
                "base64url": base64.urlsafe_b64encode(blob),
                "gzip": gzip.compress(blob),
            }
            if len(secret.value) >= 24:
                half = len(secret.value) // 2
                planted["head kept"] = secret.value[: half + 8].encode() + b"[REDACTED]"
                planted["tail kept"] = b"[REDACTED]" + secret.value[half:].encode()
            for how, data in planted.items():
                found = len(scanner.leaks)
                scanner.scan(how, data)
                assert len(scanner.leaks) > found, f"{secret.kind} {how} not found"


def _content_texts(conn: sqlite3.Connection) -> list[str]:
    """The texts stored apart by content hash (_store.contents), zlib-compressed ones inflated."""
    texts = []
    for kind, data in conn.execute("SELECT kind, data FROM contents WHERE data IS NOT NULL"):
        texts.append((zlib.decompress(data) if kind == "z" else bytes(data)).decode("utf-8", "replace"))
    return texts


def test_database_and_wal_hold_no_secret(corpus: Corpus, run: Run) -> None:
    scanner = Scanner.of(corpus)
    assert "blackbox.db-wal" in run.live_files  # the WAL held the rows before the checkpoint
    for name, data in run.live_files.items():
        scanner.scan(f"{name} (recorder running)", data)
    conn = sqlite3.connect(run.db)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        # Tables and views: the rows as stored (span_rows, resources, scopes...) and as read (spans).
        tables = [
            r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
        ]
        rows = {
            table: conn.execute(f"SELECT * FROM {table}").fetchall()
            for table in tables
            if table != "contents"
        }
        rows["contents"] = _content_texts(conn)  # compressed on disk: the texts themselves are scanned
    finally:
        conn.close()
    scanner.scan("blackbox.db (checkpointed)", run.db.read_bytes())
    scanner.scan_json("rows", json.dumps(rows))
    assert len(rows["spans"]) >= 20
    figure(TEST, "spans recorded", len(rows["spans"]))
    scanner.assert_clean(f"{TEST}::database")


def test_with_redaction_off_the_scanner_finds_every_secret(
    corpus: Corpus, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The control: with OTEL_BLACKBOX_REDACT=false the same run leaves every secret behind, so every
    one was really planted, and the clean scans are not clean for want of looking."""
    with environment(redact=False):
        control = record(corpus, tmp_path_factory.mktemp("control"))
    in_database, in_cassettes = Scanner.of(corpus), Scanner.of(corpus)
    for name, data in control.live_files.items():
        in_database.scan(name, data)
    with closing(sqlite3.connect(control.db)) as conn:
        in_database.scan_json("contents", json.dumps(_content_texts(conn)))
    for path in control.sessions:
        in_cassettes.scan(path.name, path.read_bytes())
    assert {leak.secret for leak in in_database.leaks} == set(corpus.all)
    assert {leak.secret for leak in in_cassettes.leaks} == set(corpus.planted)  # keys in headers only


def test_session_cassettes_hold_no_secret_and_still_replay(corpus: Corpus, run: Run) -> None:
    scanner = Scanner.of(corpus)
    for path in [*run.sessions, *run.exported]:
        scanner.scan_json(path.name, path.read_bytes())
    assert len(run.exported) == 3  # one a trace: openai, the refused run, anthropic
    scanner.assert_clean(f"{TEST}::cassettes")
    assert "refusing to write" in run.refusal and not run.refused.exists()
    for path in [*run.sessions, *run.exported]:
        assert verify_cassette(load_cassette(path)).passed, path

    # Masked, the recording still replays: the run sends the credentials again and matches.
    tools = SecretTools(corpus=corpus, status_url=run.status_url)
    with (
        otel_blackbox.session(mode="replay", cassette=run.sessions[0]),
        openai.OpenAI(base_url=run.openai_base_url, api_key=corpus.openai_key.value, max_retries=0) as client,
    ):
        run_openai_agent(client, TracerProvider().get_tracer("replay"), corpus, tools, question(corpus))


def test_cli_outputs_hold_no_secret(corpus: Corpus, run: Run, tmp_path: Path) -> None:
    scanner = Scanner.of(corpus)
    db = run.db
    verbose: dict[str, str] = {}
    pages: list[str] = []
    for trace in (run.openai_trace, run.anthropic_trace):
        cassette, page = tmp_path / f"{trace}.json", tmp_path / f"{trace}.html"
        run_cli("cassette", trace, "-o", str(cassette), db=db, check=True)
        run_cli("report", trace, "-o", str(page), db=db, check=True)
        scanner.scan_json(f"cassette {trace[:8]}", cassette.read_bytes())
        pages.append(page.read_text())
        scanner.scan_html(f"report {trace[:8]}", pages[-1])
        scanner.scan(f"show -v {trace[:8]}", run_cli("show", trace, "-v", db=db, check=True).stdout)
        verbose[trace] = run_cli("show", trace, "-v", "--full", db=db, check=True).stdout
        scanner.scan(f"show -v --full {trace[:8]}", verbose[trace])
        scanner.scan_json(
            f"show --json {trace[:8]}", run_cli("show", trace, "--json", db=db, check=True).stdout
        )
        scanner.scan(f"inspect {trace[:8]}", run_cli("inspect", str(cassette), check=True).stdout)
    for path in run.sessions:
        page = tmp_path / f"{path.stem}.html"
        run_cli("report", str(path), "-o", str(page), check=True)
        pages.append(page.read_text())
        scanner.scan_html(f"report {path.name}", pages[-1])
        scanner.scan(f"inspect {path.name}", run_cli("inspect", str(path), check=True).stdout)
    scanner.scan("errors", run_cli("errors", db=db, check=True).stdout)
    scanner.scan_json("errors --json", run_cli("errors", "--json", db=db, check=True).stdout)
    scanner.scan_json("list --json", run_cli("list", "--json", db=db, check=True).stdout)
    jsonl, otlp = tmp_path / "spans.jsonl", tmp_path / "spans.otlp.jsonl"
    run_cli("export", "-o", str(jsonl), db=db, check=True)
    run_cli("export", "--format", "otlp", "-o", str(otlp), db=db, check=True)
    scanner.scan_json("export (OpenInference)", jsonl.read_bytes(), lines=True)
    scanner.scan_json("export --format otlp", otlp.read_bytes(), lines=True)
    with Receiver() as receiver:
        run_cli("push", "--endpoint", receiver.url, db=db, check=True)
    assert receiver.received
    for number, got in enumerate(receiver.received):
        scanner.scan(f"push body {number}", got.body)
        scanner.scan_json(f"push request {number}", json_format.MessageToJson(got.request))
    scanner.assert_clean(f"{TEST}::cli")

    # Still useful: the prompt is there, a mask in the place of each secret.
    for shown in verbose.values():
        assert_masked(shown, "PROMPT", corpus)
    assert all("PROMPT-START" in page and "PROMPT-END" in page and MASK in page for page in pages)


def test_masks_stand_where_the_secrets_were(corpus: Corpus, run: Run) -> None:
    llm = span(run.db, "ChatCompletion")["attributes"]
    assert_masked(llm["llm.input_messages.0.message.content"], "PROMPT", corpus)
    arguments = llm["llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments"]
    assert_masked(json.loads(arguments)["notes"], "ARGS", corpus)
    fetch = span(run.db, "fetch_credentials")["attributes"]
    result = json.loads(fetch["output.value"])
    assert_masked(result["found"], "RESULT", corpus)
    assert result[ACME_FIELD] == result["aws_secret_access_key"] == "[REDACTED]"
    assert "token=[REDACTED:github-token]&api_key=[REDACTED:custom]" in result["status"]
    deploy = span(run.db, "deploy")
    assert_masked(deploy["status_message"], "EXCEPTION", corpus)
    (exception,) = deploy["events"]
    assert_masked(exception["attributes"]["exception.message"], "EXCEPTION", corpus)
    assert_masked(deploy["resource"]["deploy.notes"], "RESOURCE", corpus)
    assert deploy["resource"][ACME_FIELD] == "[REDACTED]"
    # The SDKs' keys (openai and anthropic both send Authorization) and the program's own headers.
    headers = [
        row["attributes"] for row in spans(run.db) if "http.request.header.user_agent" in row["attributes"]
    ]
    sdk_calls = [h for h in headers if "http.request.header.x_acme_key" in h]
    assert len(sdk_calls) == 6  # two model calls a run: openai, the refused one, anthropic
    for captured in sdk_calls:
        assert captured["http.request.header.authorization"] == "[REDACTED]"
        assert captured["http.request.header.x_acme_key"] == "[REDACTED]"
        assert captured["http.request.header.x_debug_auth"] == ["Bearer [REDACTED:bearer]"]

    steps = load_cassette(run.sessions[0]).steps
    user = steps[0].payload["messages"][0]["content"]
    assert_masked(user if isinstance(user, str) else user[0]["text"], "PROMPT", corpus)
    results = [s.payload for s in steps if s.type == "tool_result"]
    assert_masked(json.loads(results[0]["result"])["found"], "RESULT", corpus)
    assert_masked(results[1]["error"], "EXCEPTION", corpus)
    (exchange,) = [
        s.payload for s in steps if s.type == "metadata" and s.payload.get("event") == "http_exchange"
    ]
    assert "token=[REDACTED:github-token]&api_key=[REDACTED:custom]" in exchange["request"]["url"]
    assert "token=[REDACTED:github-token]&api_key=[REDACTED:custom]" in exchange["response"]["body"]


def test_workbench_pages_and_answers_hold_no_secret(
    corpus: Corpus, run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ui`: every page and JSON answer, a rerun's job page, its log and its cassettes included, with the
    provider keys and a base URL holding a password in the workbench's own environment."""
    from workbench_client import workbench

    password = "wb-" + "".join(random.Random(SEED).choices(ALNUM, k=24))
    scanner = Scanner.of(corpus)
    with FakeLLMServer() as llm:
        monkeypatch.setenv("OPENAI_API_KEY", corpus.openai_key.value)
        monkeypatch.setenv("ANTHROPIC_API_KEY", corpus.anthropic_key.value)
        monkeypatch.setenv("OPENAI_BASE_URL", f"http://blackbox:{password}@127.0.0.1:{llm.port}/v1")
        with workbench(run.db, tmp_path / "wb") as client:
            pages = {
                "/": client.get("/"),
                "/api/traces": client.get("/api/traces"),
                "/contracts": client.get("/contracts"),
            }
            for trace in (run.openai_trace, run.anthropic_trace):
                pages[f"/trace/{trace}"] = client.get(f"/trace/{trace}")
            run_ids = re.findall(r'data-run-id="(\w+)"', pages["/"].body)
            assert run_ids
            for run_id in run_ids:
                pages[f"/run/{run_id}"] = client.get(f"/run/{run_id}")
            form = {"token": client.token(), "target_kind": "trace", "target_id": run.openai_trace,
                    "provider": "openai-chat", "model": "gpt-4o-mini"}  # fmt: skip
            job = client.post("/rerun", form)
            assert job.status == 303, job.body
            assert client.wait(job.location)["state"] in ("done", "failed")
            for path in (
                job.location,
                f"/api{job.location}",
                f"{job.location}/child",
                f"{job.location}/incident",
            ):
                pages[path] = client.get(path)
            (done,) = client.server.board.all()
            assert done.child is not None and done.child.is_file()
            records = sorted((tmp_path / "wb").rglob("*.json"))
    assert all(answer.status == 200 for answer in pages.values()), {p: a.status for p, a in pages.items()}
    for path, answer in pages.items():
        if path.startswith("/api/"):
            scanner.scan_json(f"ui {path}", answer.body)
        elif path.startswith(("/trace/", "/run/")) or path.endswith(("/child", "/incident")):
            scanner.scan_html(f"ui {path}", answer.body)  # a report: its embedded data decoded too
        else:
            scanner.scan(f"ui {path}", html.unescape(answer.body))
        assert password not in answer.body, path
    for record in records:  # the incident, the child, the job's spec and record
        scanner.scan(f"ui file {record.name}", record.read_bytes())
        assert password not in record.read_text(), record
    scanner.assert_clean(f"{TEST}::ui")


# -- transcripts in -----------------------------------------------------------------------------------


def _transcripts(corpus: Corpus, folder: Path) -> dict[str, Path]:
    """A Claude Code session, a Codex rollout and a chat log, each with the corpus in its prompt, a
    tool's arguments, a tool's result and a failed tool's error (and a thinking block, left out)."""
    when = "2025-06-01T10:00:0{}.000Z"
    base = {"sessionId": "0c9a4d2e-7777-4888-9999-aaaabbbbcccc", "isSidechain": False, "cwd": "/srv"}

    def record(kind: str, n: int, message: dict[str, Any]) -> dict[str, Any]:
        parent = f"r{n - 1}" if n else None
        return {"type": kind, "uuid": f"r{n}", "parentUuid": parent, "timestamp": when.format(n), **base,
                "message": message}  # fmt: skip

    def result(call_id: str, text: str, error: bool) -> dict[str, Any]:
        return {"type": "tool_result", "tool_use_id": call_id, "content": text, "is_error": error}

    uses = [{"type": "thinking", "thinking": corpus.text("THINKING"), "signature": "c2ln"},
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": corpus.text("ARGS")}},
            {"type": "tool_use", "id": "t2", "name": "Deploy", "input": {"target": "prod"}}]  # fmt: skip
    model = "claude-sonnet-4-5"
    session = [
        record("user", 0, {"role": "user", "content": corpus.text("PROMPT")}),
        record("assistant", 1, {"id": "m1", "role": "assistant", "model": model, "content": uses}),
        record("user", 2, {"role": "user", "content": [result("t1", corpus.text("RESULT"), False),
                                                        result("t2", corpus.text("EXCEPTION"), True)]}),
        record("assistant", 3, {"id": "m2", "role": "assistant", "model": model,
                                "content": [{"type": "text", "text": "Done."}]}),
    ]  # fmt: skip

    def item(n: int, payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": when.format(n), "type": "response_item", "payload": payload}

    def output(call_id: str, text: str, code: int) -> dict[str, Any]:
        body = json.dumps({"output": text, "metadata": {"exit_code": code}})
        return {"type": "function_call_output", "call_id": call_id, "output": body}

    def message(role: str, part: str, text: str) -> dict[str, Any]:
        return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}

    def call(call_id: str, arguments: str) -> dict[str, Any]:
        return {"type": "function_call", "name": "shell", "arguments": arguments, "call_id": call_id}

    meta = {"id": "0199a213-81c0-7800-8aa1-bbab2a035a53"}
    rollout = [
        {"timestamp": when.format(0), "type": "session_meta", "payload": meta},
        {"timestamp": when.format(0), "type": "turn_context", "payload": {"model": "gpt-5-codex"}},
        item(1, message("user", "input_text", corpus.text("PROMPT"))),
        item(2, call("c1", json.dumps({"command": ["sh", "-c", corpus.text("ARGS")]}))),
        item(3, output("c1", corpus.text("RESULT"), 0)),
        item(4, call("c2", '{"command": ["deploy"]}')),
        item(5, output("c2", corpus.text("EXCEPTION"), 1)),
        item(6, message("assistant", "output_text", "Done.")),
    ]
    chat = {
        "system": "Deploy carefully.",
        "messages": [
            {"role": "user", "content": corpus.text("PROMPT")},
            {"role": "assistant", "content": uses},
            {"role": "user", "content": [result("t1", corpus.text("RESULT"), False),
                                         result("t2", corpus.text("EXCEPTION"), True)]},
            {"role": "assistant", "content": "Done."},
        ],
    }  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    paths = {
        "claude-code": folder / "session.jsonl",
        "codex": folder / "rollout.jsonl",
        "chat": folder / "chat.json",
    }
    paths["claude-code"].write_text("".join(json.dumps(r) + "\n" for r in session))
    paths["codex"].write_text("".join(json.dumps(r) + "\n" for r in rollout))
    paths["chat"].write_text(json.dumps(chat))
    return paths


def _import(db: Path, kind: str, path: Path, *, redact: bool) -> str:
    """``import --from KIND`` as a user runs it, the user's own patterns configured; the run id."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_BLACKBOX")}
    env |= {"OTEL_BLACKBOX_REDACT": str(redact).lower(), "OTEL_BLACKBOX_REDACT_FIELDS": ACME_FIELD,
            "OTEL_BLACKBOX_REDACT_PATTERNS": json.dumps([ACME_PATTERN])}  # fmt: skip
    argv = [sys.executable, "-m", "otel_blackbox.cli", "--db", str(db), "import", "--from", kind, str(path)]
    done = subprocess.run([*argv, "--json"], capture_output=True, text=True, env=env, timeout=60, check=True)
    run_id: str = json.loads(done.stdout)["run_id"]
    return run_id


def test_imported_transcripts_hold_no_secret(corpus: Corpus, tmp_path: Path) -> None:
    """A coding session, a rollout and a chat log holding the corpus: nothing of it in the database,
    in `show -v --full`, in their cassettes or in `export`; with redaction off, every secret is found
    (the control: each was really planted where the importers read)."""
    paths = _transcripts(corpus, tmp_path / "transcripts")
    control = Scanner.of(corpus)
    for kind, path in paths.items():
        db = tmp_path / f"control-{kind}.db"
        _import(db, kind, path, redact=False)
        wal = tmp_path / f"control-{kind}.db-wal"  # gone when the import's close checkpointed it
        control.scan(kind, db.read_bytes() + (wal.read_bytes() if wal.exists() else b""))
        assert {leak.secret for leak in control.leaks if leak.artifact == kind} == set(corpus.planted), kind
    scanner = Scanner.of(corpus)
    db = tmp_path / "transcripts.db"
    runs = {kind: _import(db, kind, path, redact=True) for kind, path in paths.items()}
    traces = json.loads(run_cli("list", "--json", db=db, check=True).stdout)
    assert len(traces) == 3
    for kind, run_id in runs.items():
        cassette = tmp_path / f"{kind}.json"
        run_cli("cassette", "--run", run_id, "-o", str(cassette), db=db, check=True)
        scanner.scan_json(f"cassette {kind}", cassette.read_bytes())
    for trace in traces:
        shown = run_cli("show", trace["trace_id"], "-v", "--full", db=db, check=True).stdout
        scanner.scan(f"show {trace['trace_id'][:8]}", shown)
        assert_masked(shown, "PROMPT", corpus)
    exported = tmp_path / "spans.jsonl"
    run_cli("export", "-o", str(exported), db=db, check=True)
    scanner.scan_json("export", exported.read_bytes(), lines=True)
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        rows = conn.execute("SELECT * FROM span_rows").fetchall()
    finally:
        conn.close()
    scanner.scan("transcripts.db", db.read_bytes())
    scanner.scan_json("rows", json.dumps(rows))
    scanner.assert_clean(f"{TEST}::transcripts")
