"""Google Gemini generateContent: its wire format read into neutral payloads and written back."""
