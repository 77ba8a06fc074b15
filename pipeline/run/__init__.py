"""The nightly job: its stages, its inputs (sources, settings, history, invoices), the run record
and recovery, and reading snapshots as of a date."""
