"""How a request's top-level fields enter ``model_input``: ``RequestFields``, the form of a wire
translation's field table. Each API's own table is in its package (``openai_chat/fields.py``,
``openai_responses/fields.py``, ``anthropic/fields.py``, ``gemini/fields.py``).

Pure data and one pure function, on the analysis side: a translation reads a request with its
table, and a cassette built from spans reads a span's recorded request settings (OpenInference's
``llm.invocation_parameters``) with the same table, so that both keep the same settings under the
same names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from otel_blackbox._types import JsonObject

__all__ = ["RequestFields"]


@dataclass(frozen=True)
class RequestFields:
    """How one API's request fields enter ``model_input``: the translation's own field table.

    Every top-level field is one of these, and the table is what the tests and
    docs/cassette-format.md are generated from:

    * ``read``: read into ``messages``, ``tools``, ``systemPrompt`` or ``model``;
    * ``neutral``: a setting with a neutral name (``max_tokens`` -> ``params.maxTokens``);
    * ``nested``: an object one of whose keys has a neutral name (``text.format`` ->
      ``params.responseFormat``); its other keys stay under the field's own name;
    * ``transport``: not compared, with the reason (streaming, identifiers, caching, billing);
    * anything else, a field listed in ``behaviour`` or one the table does not know, goes under
      ``params`` with its own name, so that it is compared, never dropped.

    A field sent as ``null`` is taken as not sent, as the APIs take it.
    """

    read: frozenset[str]
    neutral: Mapping[str, str]
    transport: Mapping[str, str]
    behaviour: tuple[str, ...] = ()
    nested: Mapping[str, tuple[str, str]] = field(default_factory=dict)

    def fields(self) -> frozenset[str]:
        """The wire fields the table knows to change what the model does (every kept one but unknowns)."""
        return frozenset({*self.neutral, *self.behaviour, *self.nested})

    def neutral_names(self) -> frozenset[str]:
        """The neutral ``params`` names this API's settings take (``maxTokens``, ``responseFormat``...)."""
        return frozenset({*self.neutral.values(), *(name for _, name in self.nested.values())})

    def names(self) -> frozenset[str]:
        """The ``params`` names the known fields can take."""
        return frozenset({*self.neutral_names(), *self.behaviour, *self.nested})

    def params(self, request: JsonObject) -> JsonObject:
        """The request's ``params``: every field but those read elsewhere and the transport-only ones."""
        params: JsonObject = {}
        for key, value in request.items():
            if value is None or key in self.read or key in self.transport:
                continue
            if key in self.neutral:
                params[self.neutral[key]] = value
            elif key in self.nested and isinstance(value, dict):
                inner, name = self.nested[key]
                if value.get(inner) is not None:
                    params[name] = value[inner]
                rest = {k: v for k, v in value.items() if k != inner and v is not None}
                if rest:
                    params[key] = rest
            else:
                params[key] = value
        return params
