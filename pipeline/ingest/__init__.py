"""Ingest: copy billing-export deliveries, validated, into the warehouse's raw/ folder."""
