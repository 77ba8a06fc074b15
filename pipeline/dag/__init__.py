"""The SQL DAG: model discovery and parsing, dependency order, the build, the engines and the
models generated from [[pools]]."""
