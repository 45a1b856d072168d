"""How a request's top-level fields enter ``model_input``: the field tables of the wire translations.

Pure data and one pure function, on the analysis side: the translations (``replay/providers/``) read
a request with them, and a cassette built from spans reads a span's recorded request settings
(OpenInference's ``llm.invocation_parameters``) with the same table, so that both keep the same
settings under the same names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ANTHROPIC_FIELDS", "CHAT_FIELDS", "GEMINI_FIELDS", "RESPONSES_FIELDS", "RequestFields"]

JsonObject = dict[str, Any]


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


# OpenAI Chat Completions (replay/providers/openai_chat.py).
CHAT_FIELDS = RequestFields(
    read=frozenset({"messages", "model", "tools"}),
    neutral={
        "max_tokens": "maxTokens",
        "max_completion_tokens": "maxTokens",
        "temperature": "temperature",
        "top_p": "topP",
        "tool_choice": "toolChoice",
        "response_format": "responseFormat",
        "stop": "stop",
    },
    transport={
        "stream": "how the answer is delivered (one JSON body or SSE chunks), not what it says",
        "stream_options": "what a stream carries besides the answer (a usage chunk, obfuscation padding)",
        "metadata": "tags for the stored completion and the dashboard; the model never sees them",
        "user": "an end-user identifier for abuse monitoring and caching, not a prompt",
        "safety_identifier": "an end-user identifier for abuse detection, not a prompt",
        "service_tier": "the processing tier: latency and price, not the answer",
        "prompt_cache_key": "a prompt-cache routing key: a hit costs less, the answer is the same",
        "prompt_cache_retention": "how long cached prefixes are kept, not the answer",
        "prompt_cache_options": "prompt-cache breakpoints and their lifetime, not the answer",
        "store": "whether OpenAI keeps the completion for evals and distillation",
        "logprobs": "whether log-probabilities are reported beside the answer, not what it says",
        "top_logprobs": "how many alternatives the log-probabilities list, not what the answer says",
    },
    behaviour=(
        "seed",
        "parallel_tool_calls",
        "reasoning_effort",
        "frequency_penalty",
        "presence_penalty",
        "logit_bias",
        "n",
        "modalities",
        "audio",
        "prediction",
        "verbosity",
        "web_search_options",
        "functions",
        "function_call",
        "moderation",
    ),
)


# Anthropic Messages (replay/providers/anthropic.py).
ANTHROPIC_FIELDS = RequestFields(
    read=frozenset({"messages", "model", "system", "tools"}),
    neutral={
        "max_tokens": "maxTokens",
        "temperature": "temperature",
        "top_p": "topP",
        "tool_choice": "toolChoice",
        "stop_sequences": "stop",
    },
    nested={"output_config": ("format", "responseFormat")},
    transport={
        "stream": "how the answer is delivered (JSON or SSE), not what it says; replay answers in the "
        "shape asked",
        "metadata": "an identifier of the end user (user_id) for abuse detection; the model never sees it",
        "service_tier": "which capacity serves the request (priority or standard): latency and billing",
        "container": "the id of a container an earlier response handed out, for reuse; replay hands out "
        "none (an object's skills are compared, as params.container.skills)",
        "inference_geo": "the region the request is processed in: data residency, not the answer",
        "cache_control": "a prompt-cache marker on the last cacheable block: cost and latency, not the "
        "answer",
        "diagnostics": "asks for a report of prompt-cache misses against an earlier message id: reporting",
        "user_profile_id": "whom the request is attributed to (the SDK sends it as a header)",
        "workspace_id": "which workspace the request is billed to (the SDK sends it as a header)",
        "speed": "output tokens per second (fast mode: the same model, faster, at another price): how "
        "fast, not what",
        "billing_policy": "who is billed for the request (beta)",
        "fallback_credit_token": "a token from an earlier refusal that bills a retry's cache at the read "
        "rate (beta)",
        "thread": "server-held conversation state (beta): a message id a response handed out (replay "
        "hands out its own); the messages compared are the ones this request sent",
    },
    behaviour=("thinking", "top_k", "mcp_servers", "context_management", "compaction", "fallbacks"),
)


# OpenAI Responses (replay/providers/openai_responses.py).
RESPONSES_FIELDS = RequestFields(
    read=frozenset({"input", "instructions", "model", "tools"}),
    neutral={
        "max_output_tokens": "maxTokens",
        "temperature": "temperature",
        "top_p": "topP",
        "tool_choice": "toolChoice",
    },
    nested={"text": ("format", "responseFormat")},
    transport={
        "stream": "how the answer is delivered (one JSON body or server-sent events), not what it says",
        "stream_options": "options of the event stream (obfuscation padding), not of the answer",
        "metadata": "the program's own labels, stored with the response",
        "user": "an end-user identifier, for abuse detection and cache bucketing",
        "safety_identifier": "an end-user identifier, for abuse detection",
        "service_tier": "the processing tier: latency and price, not the answer",
        "prompt_cache_key": "a prompt-cache bucketing key: latency and price, not the answer",
        "prompt_cache_retention": "how long the prompt cache keeps a prefix",
        "prompt_cache_options": "the prompt cache's breakpoints and lifetime",
        "store": "whether the API stores the response for later retrieval",
        "include": "what the response reports (encrypted reasoning, sources...), not what the model does",
        "background": "whether the API runs the response in the background, to be polled",
        "background_options": "the background run's completion window",
        "top_logprobs": "log probabilities the response reports, not what the model does",
        "previous_response_id": "a response id: in replay it is one the replay made up, so it differs by "
        "construction; the history it names is the run's earlier steps",
    },
    behaviour=(
        "reasoning",
        "parallel_tool_calls",
        "max_tool_calls",
        "truncation",
        "prompt",
        "conversation",
        "context_management",
        "moderation",
        "image",
        "access_programs",
    ),
)


# Gemini generateContent (replay/providers/gemini.py): its top-level fields, as the API spells them.
# The settings in generationConfig are read by the translation itself (each under its own name but
# the neutral ones), and toolConfig is toolChoice.
GEMINI_FIELDS = RequestFields(
    read=frozenset({"contents", "systemInstruction", "tools", "toolConfig", "generationConfig"}),
    neutral={},
    transport={
        "labels": "the program's own billing labels; the model never sees them",
        "serviceTier": "the processing tier: latency and price, not the answer",
        "store": "whether the API keeps the request and response",
        "continuationToken": "a token a response handed out to continue it; replay hands out none, and "
        "the history it stands for is the run's earlier steps",
    },
    behaviour=("safetySettings", "cachedContent"),
)
