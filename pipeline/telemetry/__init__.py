"""Telemetry: canonical attempts, attempt_resources, attempt_events and experiments tables."""

from pipeline.telemetry.canonical import arrow_schema
from pipeline.telemetry.files import load_telemetry

__all__ = ["arrow_schema", "load_telemetry"]
