"""``otel-blackbox mcp``: a Model Context Protocol server over stdio, for coding agents to read the black box.

- ``bounds``: the size bound every result keeps, the argument checks tools share, and the
  bad-argument error;
- ``traces``: the tools over the span database (read-only): traces, runs, errors, a trace, a span, stats;
- ``cassettes``: a cassette from the database (the one write), inspect, verify, diff, eval run, blame;
- ``fork``: fork_from_step, one step of a cassette changed and the run continued by the built-in agent;
- ``wiring``: what the modules below share: annotations, common argument types, every failure as
  one line in a tool error;
- ``server``: the wiring on the official ``mcp`` SDK (the ``[mcp]`` extra): names, descriptions,
  input schemas; ``playback_tools`` puts on it the tools that call the model provider.

Only ``wiring``, ``server`` and ``playback_tools`` import the SDK: the tools are plain functions
from arguments to text.
"""
