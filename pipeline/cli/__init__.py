"""The command line: one module per command, the shared options and the progress display."""

from pipeline.cli.app import main

__all__ = ["main"]
