"""Data contracts: one module per dataset (column lists and pandera models)."""
