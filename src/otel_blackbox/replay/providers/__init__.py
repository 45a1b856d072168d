"""Provider translations: wire <-> neutral, pure functions (see base.Provider)."""
