"""The built-in agent: reruns (and replays) an incident's conversation without its program."""
