"""Export formats: stored spans in shapes other tools read."""
