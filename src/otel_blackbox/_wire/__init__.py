"""The providers' wire knowledge, one package per API (``openai_chat``, ``openai_responses``,
``anthropic``, ``gemini``): pure functions between an API's requests and responses and the
neutral cassette payloads, in both directions, and the fields each API has.

Each API's package has one module a direction, its name saying which: ``read_request`` (a request
-> ``model_input``), ``read_response`` (a response -> ``model_output`` and its token counts),
``write_response`` (``model_output`` -> a response, for replay), ``write_request`` (``model_input``
-> a request, for the built-in agent's rerun) and ``rewrite_request`` (a fork's rewrite of the
program's request: a tool result, a user message, the system prompt, a tool's definition);
``fields`` holds its request field table, and ``translation`` the ``Provider`` class that composes
them. What the directions of one API share is in a module of that package named for what it
is (``openai_responses/items.py``, ``anthropic/blocks.py``, ``gemini/contents.py``...); what the
APIs share is here (``neutral_parts``, ``settings``, ``request_fields``, ``call_ids``). A reading
module never imports a writing one.

No I/O and no HTTP client: the cassette code, the execution side (``_playback``) and the built-in
agent import it alike. ``apis`` is the one list of the APIs' names, ``registry`` the translations
that serve them; ``protocol`` says what a translation is.
"""
