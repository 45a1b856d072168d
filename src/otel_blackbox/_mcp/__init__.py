"""``otel-blackbox mcp``: a Model Context Protocol server over stdio, for coding agents to read the black box.

- ``bounds``: the size bound every result keeps, and the bad-argument error;
- ``traces``: the tools over the span database (read-only): traces, runs, errors, a trace, a span, stats;
- ``cassettes``: a cassette from the database (the one write), inspect, verify, diff, eval run;
- ``server``: the wiring on the official ``mcp`` SDK (the ``[mcp]`` extra): names, descriptions,
  input schemas, and every failure as one line in a tool error.

Only ``server`` imports the SDK: the tools are plain functions from arguments to text.
"""
