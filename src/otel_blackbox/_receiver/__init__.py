"""The OTLP/HTTP trace receiver behind ``otel-blackbox serve``.

* ``body``: reading a request body (Content-Length or chunked) and decompressing it, within the
  size limit;
* ``answers``: the OTLP/HTTP answers (ExportTraceServiceResponse, google.rpc.Status) in the
  request's encoding;
* ``intake``: the bounded queue between the handler threads and the one writer thread, and the
  writer thread itself (one transaction a tick, each request told when its spans are committed);
* ``http``: the server and its request handler (the access token, the routes, the protocol).
"""
