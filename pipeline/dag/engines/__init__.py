"""Engines that build the SQL models: one package per name of the registry
pipeline.config.engine.ENGINES (duckdb, the default; spark), opened by factory.open_engine."""
