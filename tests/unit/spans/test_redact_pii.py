"""PII masks by choice (e-mail, card, phone, IBAN): each on and off, the checksums that keep look-alikes,
the setting, and the credential corpus still masked as before with every mask on."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from test_redact import SECRET_CORES, SECRETS  # the credential corpus of the unit tests

from otel_blackbox import BlackboxConfig
from otel_blackbox._config import ENV_VARS
from otel_blackbox._recorder import auto
from otel_blackbox._spans.pii import PII_MASKS, luhn_ok, mod97_ok
from otel_blackbox._spans.redact import Redactor, redactor_for
from otel_blackbox.errors import ConfigError

# Realistic values, none real: test card numbers of the networks, the IBAN examples of the registry.
PII = {
    "email": ["jane.doe+billing@example.co.uk", "ops@mail.example.com", "x_y-z@sub.example.io"],
    "card": [
        "4111 1111 1111 1111", "5555-5555-5555-4444", "378282246310005", "6011111111111117",
        "4242424242424242",
    ],
    "phone": [
        "+1 415 555 2671",
        "+14155552671",
        "+44 (0)20 7946 0958",
        "+33 6 12 34 56 78",
        "(415) 555-2671",
        "415-555-2671",
        "415.555.2671",
        "1-415-555-2671",
        "06 12 34 56 78",
        "020 7946 0958",
    ],
    "iban": ["DE89 3704 0044 0532 0130 00", "GB82WEST12345698765432", "FR14 2004 1010 0505 0001 3M02 606"],
}  # fmt: skip
# Shapes near each mask that are no PII: kept with every mask on.
KEPT = [
    "order 4111 1111 1111 1112 shipped",  # 16 digits, fails the Luhn check
    "order id 4000123412341231",  # fails the Luhn check
    "created 1733582000000 (ms) and 1733582000123456789 (ns)",  # timestamps: no card network starts with 1
    "id 12345678901234",
    "total 1234567.89, signed +1234567.89, change +12.5",
    "year 2024, on 2024-01-15, 01-02-2024, at 2024-01-15T10:30:00Z",
    "host 192.168.1.100, version 1.2.3",
    "trace 123e4567-e89b-12d3-a456-426614174000",
    "population 1 234 567 890",
    "extension 5551234",
    "DE89 3704 0044 0532 0130 01",  # an IBAN that fails mod-97, kept whole
    "price $1,234,567 and 0.4111111111111111",
    "no address here: user at example dot com, @handle, a@b",
]


@pytest.mark.parametrize("kind", PII_MASKS)
def test_each_mask_masks_its_kind_and_only_when_on(kind: str) -> None:
    on, off = Redactor(pii=[kind]), Redactor()
    for value in PII[kind]:
        text = f"please contact {value} today"
        assert on.redact_text(text) == f"please contact [REDACTED:{kind}] today", value
        assert off.redact_text(text) == text  # off by default: nothing masked
        for other in PII_MASKS:  # each mask is its own: another mask alone keeps this value
            if other != kind:
                assert value in Redactor(pii=[other]).redact_text(text), (other, value)


def test_every_mask_on_keeps_what_only_looks_like_pii() -> None:
    every = Redactor(pii=PII_MASKS)
    for text in KEPT:
        assert every.redact_text(text) == text


def test_luhn_and_mod97_checks() -> None:
    assert luhn_ok("4111111111111111") and luhn_ok("378282246310005")
    assert not luhn_ok("4111111111111112") and not luhn_ok("4000123412341231")
    assert mod97_ok("DE89370400440532013000") and mod97_ok("GB82WEST12345698765432")
    assert not mod97_ok("DE89370400440532013001") and not mod97_ok("GB82WEST1234569876543!")
    card = Redactor(pii=["card"])
    assert card.redact_text("4111111111111111") == "[REDACTED:card]"
    assert card.redact_text("4111111111111112") == "4111111111111112"
    iban = Redactor(pii=["iban"])
    assert iban.redact_text("IBAN: DE89370400440532013000.") == "IBAN: [REDACTED:iban]."
    assert iban.redact_text("IBAN: DE89370400440532013001.") == "IBAN: DE89370400440532013001."


def test_masks_in_json_attributes_events_and_numbers() -> None:
    every = Redactor(pii=PII_MASKS)
    body = json.dumps({"to": "jane@example.com", "card": "4242 4242 4242 4242", "tokens": 1733582000000})
    attributes = every.attributes(
        {"input.value": body, "user.card": 4111111111111111, "order.id": 4111111111111112, "count": 3}
    )
    assert json.loads(attributes["input.value"]) == {
        "to": "[REDACTED:email]",
        "card": "[REDACTED:card]",
        "tokens": 1733582000000,
    }
    assert attributes["user.card"] == "[REDACTED:card]"  # a whole-number attribute that is a card
    assert attributes["order.id"] == 4111111111111112 and attributes["count"] == 3
    # Text within a JSON string within JSON (tool arguments in a request body), and a list value.
    inner = json.dumps({"arguments": json.dumps({"email": "jane@example.com"})})
    assert "jane@example.com" not in every.value("input.value", inner)
    assert every.value("tags", ["a", "+44 20 7946 0958"]) == ["a", "[REDACTED:phone]"]
    assert Redactor().value("user.card", 4111111111111111) == 4111111111111111


def test_values_right_after_a_json_escape_are_masked_and_the_json_stays_valid() -> None:
    every = Redactor(pii=PII_MASKS)
    values = [v[0] for v in PII.values()]
    text = "\n".join(values) + "\t" + "\u00a0".join(values)
    stored = every.redact_text(json.dumps({"content": text}))  # \n, \t, \u00a0 as JSON escapes
    content = json.loads(stored)["content"]
    for value in values:
        assert value not in content
    assert content.count("[REDACTED:") == 2 * len(values)


def test_masks_hold_with_credential_redaction_off_and_might_redact_sees_them() -> None:
    # The masks are the user's own choice: OTEL_BLACKBOX_REDACT=false does not turn them off.
    assert Redactor(enabled=False, pii=["email"]).redact_text("mail a@b.io") == "mail [REDACTED:email]"
    assert Redactor(pii=["email"]).redact_text("a@b.io") == "[REDACTED:email]"  # shorter than any credential
    assert Redactor(pii=["phone"]).might_redact("call +1 415 555 2671")
    assert not Redactor().might_redact("call +1 415 555 2671")


def test_the_credential_corpus_is_masked_as_before_with_every_mask_on() -> None:
    plain, every = Redactor(), Redactor(pii=PII_MASKS)
    for kind, secret in SECRETS.items():
        text = f"calling with {secret} now"
        masked = every.redact_text(text)
        assert masked == plain.redact_text(text), kind  # the masks add nothing to a credential's line
        for core in SECRET_CORES:
            assert core not in masked
    together = " ; ".join([*SECRETS.values(), *(v for values in PII.values() for v in values)])
    masked = every.redact_text(together)
    for core in SECRET_CORES:
        assert core not in masked
    for kind, values in PII.items():
        assert masked.count(f"[REDACTED:{kind}]") == len(values), kind
        for value in values:
            assert value not in masked


def test_the_setting_names_each_mask_or_all_and_refuses_an_unknown_one() -> None:
    assert BlackboxConfig().redact_pii == ()  # off by default
    assert BlackboxConfig.from_env({}).redact_pii == ()
    env = "OTEL_BLACKBOX_REDACT_PII"
    assert ENV_VARS[env][0] == "redact_pii"
    assert BlackboxConfig.from_env({env: "email, Card"}).redact_pii == ("email", "card")
    assert BlackboxConfig.from_env({env: "all"}).redact_pii == PII_MASKS
    assert BlackboxConfig.from_env({env: "off"}).redact_pii == ()
    assert BlackboxConfig(redact_pii=("iban", "phone")).redact_pii == ("phone", "iban")
    assert BlackboxConfig(redact_pii="all").redact_pii == PII_MASKS
    with pytest.raises(ConfigError, match=r"^OTEL_BLACKBOX_REDACT_PII: unknown PII mask 'ssn'") as info:
        BlackboxConfig.from_env({env: "email,ssn"})
    assert "\n" not in str(info.value) and "email, card, phone, iban or all" in str(info.value)
    with pytest.raises(ConfigError, match=r"^redact_pii: unknown PII mask 'mail'"):
        BlackboxConfig(redact_pii=("mail",))
    assert (
        redactor_for(BlackboxConfig(redact_pii="card")).redact_text("4111111111111111") == "[REDACTED:card]"
    )


def test_zero_code_setup_with_an_unknown_mask_warns_and_never_raises(caplog: Any, tmp_path: Any) -> None:
    provider = TracerProvider(shutdown_on_exit=False)
    environ = {
        "OTEL_BLACKBOX_ENABLED": "true",
        "OTEL_BLACKBOX_DB": str(tmp_path / "bb.db"),
        "OTEL_BLACKBOX_REDACT_PII": "email,ssn",
    }
    with caplog.at_level(logging.WARNING, logger="otel_blackbox"):
        assert auto.install(provider, environ) is None
    (line,) = [r.getMessage() for r in caplog.records if "not recording" in r.getMessage()]
    assert "OTEL_BLACKBOX_REDACT_PII" in line and "'ssn'" in line and "\n" not in line
    provider.shutdown()
