"""runcost: the all-in cost of every ML training attempt, reconciled to the cloud bill."""

__version__ = "0.1.0"
