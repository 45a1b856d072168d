"""The directory the launcher puts first on PYTHONPATH: its ``sitecustomize`` starts the session."""
