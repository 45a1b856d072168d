"""The execution side: runs a program against its HTTP traffic (record, replay, fork, rerun).

The HTTP hook (``http``) sits beneath httpx and httpx2; the provider translations (``providers``)
turn each model call into neutral cassette steps and back; a session (``session``, ``record``,
``replay``, ``fork``, ``rerun``) is the hook's interceptor for one run; the launcher (``launch``,
``_bootstrap``) and the pytest plugin start one around an unmodified program. The analysis side,
``otel_blackbox.cassette``, never imports this package (tests/test_boundaries.py).

Importing this package imports nothing: the recorder reads only the active-mode flag (``active``).
"""
