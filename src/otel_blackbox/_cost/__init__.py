"""Cost in US dollars, computed when read: prices from genai-prices, for stored spans (``spans``,
``llm_calls``) and for a cassette's model outputs (``cassettes``), from the token counts a call
recorded (``usage``). ``prices`` is the one place a call is priced and a figure written; it prices
from plans (``rates``) kept per genai-prices version in a cache file (``price_cache``), so that a
command does not import genai-prices."""
