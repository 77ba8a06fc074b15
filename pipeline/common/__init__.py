"""The bottom layer: the error types and the one DuckDB connection helper; imports no other
pipeline package."""
