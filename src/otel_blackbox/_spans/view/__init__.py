"""What a span means, read through one neutral view (``model.SpanView``) by one reader per convention
family (``_spans.conventions``), merged in the registry's order (``registry``), with what only the
whole trace tells (``trace``: one model call described by two spans counted once)."""
