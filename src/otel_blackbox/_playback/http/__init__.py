"""The hook beneath httpx and httpx2: the connection pools of httpcore and httpcore2."""
