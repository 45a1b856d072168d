"""One reader per convention family: what its spans mean, as a ``Reading`` (``_spans.view.model``).

A reader is a module with ``NAME`` and ``read(span) -> Reading | None``, registered in
``_spans.view.registry.READERS``; it reads only what is stored (attributes, events, scope, name,
and the log records joined to the span), so files recorded before it was written gain it too.
"""
