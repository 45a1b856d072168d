"""Cost in US dollars, computed when read: prices from genai-prices, for stored spans (``spans``)
and for a cassette's model outputs (``cassettes``), from the token counts a call recorded."""
