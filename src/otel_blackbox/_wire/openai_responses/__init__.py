"""OpenAI Responses: its wire format read into neutral payloads and written back (events for streams)."""
