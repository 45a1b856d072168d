"""One trace, or every trace of a run or a session, as Markdown (``show --format markdown``):
``report`` writes it, in a ``document`` that keeps it within its bounds."""
