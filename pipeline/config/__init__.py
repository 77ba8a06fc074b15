"""runcost.toml: loading and validating it, one module per section, the tag-key rules and the
engine options."""
