"""The recorder, in the agent's process: the span processor and the exporter, zero-code setup, HTTP
capture, and the shipper thread that owns the queue and feeds a writer (the writer process through
``process_sink``, or a thread).

The processor only hands spans over: what is queued, dropped and sent when is the shipper's."""
