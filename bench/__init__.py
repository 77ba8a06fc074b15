"""The runcost benchmark: generated data at scale, timed stages, baselines."""
