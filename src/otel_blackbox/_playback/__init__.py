"""The execution side: a program run against its HTTP traffic (record, replay, fork, rerun).

The HTTP hook (``http``) sits beneath httpx and httpx2; the wire translations (``otel_blackbox._wire``)
turn each model call into neutral cassette steps and back; a session is the hook's interceptor for
one run (``interceptor`` is the base, ``record``, ``replay``, ``fork``, ``rerun`` its modes,
``session`` makes them); the launcher (``launch``, ``_bootstrap``) and the pytest plugin start one
around an unmodified program; ``tool_stubs`` answers framework tools from the recording and
``agent`` is the built-in agent. The analysis side (``otel_blackbox._cassette``) never imports this
package (tests/integration/test_boundaries.py).

Importing this package imports nothing: the recorder reads only the active-mode flag (``active``).
"""
