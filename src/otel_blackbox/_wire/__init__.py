"""The providers' wire knowledge, one package per API (``openai_chat``, ``openai_responses``,
``anthropic``, ``gemini``): pure functions between an API's requests and responses and the
neutral cassette payloads, in both directions, and the fields each API has.

No I/O and no HTTP client: the cassette code, the execution side (``_playback``) and the built-in
agent import it alike. ``registry`` is the one list of the APIs; ``protocol`` says what a
translation is.
"""
