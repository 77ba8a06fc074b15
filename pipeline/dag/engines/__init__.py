"""Engines that build the SQL models: DuckDB (default) and Spark (the `spark` extra)."""
