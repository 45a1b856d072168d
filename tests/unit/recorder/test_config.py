"""BlackboxConfig: defaults, OTEL_BLACKBOX_* parsing, one-line errors."""

from __future__ import annotations

import pytest

from otel_blackbox import BlackboxConfig
from otel_blackbox._config import ENV_VARS, parse_duration
from otel_blackbox.errors import ConfigError


def test_defaults() -> None:
    config = BlackboxConfig()
    assert str(config.db_path) == "blackbox.db"
    assert config.flush_interval_ms <= 200
    assert config.max_db_bytes == 300 * 1024 * 1024
    assert config.retention_seconds == 7 * 86_400
    assert config.max_attribute_bytes == 256 * 1024


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("7d", 7 * 86_400), ("30d", 30 * 86_400), ("12h", 43_200), ("30m", 1_800), ("45s", 45),
     ("3", 3 * 86_400),
     ("0", None), ("off", None), (None, None), (2, 2 * 86_400)],
)  # fmt: skip
def test_parse_duration(text: str | int | None, seconds: float | None) -> None:
    assert parse_duration(text) == seconds


def test_from_env() -> None:
    env = {
        "OTEL_BLACKBOX_DB": "/tmp/x.db",
        "OTEL_BLACKBOX_RETENTION": "2d",
        "OTEL_BLACKBOX_MAX_DB_MB": "50",
        "OTEL_BLACKBOX_REDACT": "false",
        "OTEL_BLACKBOX_REDACT_PATTERNS": '["ACME-\\\\d{3,6}", "x+"]',
        "OTEL_BLACKBOX_REDACT_FIELDS": "ssn, card_number",
        "OTEL_BLACKBOX_FLUSH_INTERVAL_MS": "50",
    }
    config = BlackboxConfig.from_env(env)
    assert (str(config.db_path), config.retention_seconds, config.max_db_mb) == ("/tmp/x.db", 172_800, 50.0)
    assert config.redact is False and config.flush_interval_ms == 50
    assert config.redact_patterns == ("ACME-\\d{3,6}", "x+")
    assert config.redact_fields == ("ssn", "card_number")
    assert BlackboxConfig.from_env(env, db_path="/tmp/override.db").db_path == "/tmp/override.db"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"OTEL_BLACKBOX_RETENTION": "seven days"}, "OTEL_BLACKBOX_RETENTION: expected a duration"),
        ({"OTEL_BLACKBOX_MAX_DB_MB": "lots"}, "OTEL_BLACKBOX_MAX_DB_MB: expected a number"),
        ({"OTEL_BLACKBOX_MAX_DB_MB": "-1"}, "max_db_mb"),
        ({"OTEL_BLACKBOX_REDACT": "maybe"}, "OTEL_BLACKBOX_REDACT: expected true or false"),
        ({"OTEL_BLACKBOX_REDACT_PATTERNS": "(unclosed"}, "not a valid regex"),
        ({"OTEL_BLACKBOX_REDACT_PATTERNS": "[1, 2]"}, "JSON list of strings"),
        ({"OTEL_BLACKBOX_FLUSH_INTERVAL_MS": "0"}, "flush_interval_ms"),
        ({"OTEL_BLACKBOX_MAX_QUEUE_SIZE": "1.5"}, "expected a number"),
    ],
)
def test_bad_values_are_one_line_config_errors(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        BlackboxConfig.from_env(env)
    assert "\n" not in str(info.value)


def test_every_env_var_maps_to_a_field() -> None:
    fields = set(BlackboxConfig.__dataclass_fields__)
    assert {name for name, _ in ENV_VARS.values()} <= fields
