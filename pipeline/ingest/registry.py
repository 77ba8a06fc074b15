"""Every billing provider runcost reads, in the order runs ingest and register them.

A new provider is one package under pipeline/ingest/ exporting PROVIDER, its staging SQL
(sql/staging/<name>_*.sql) and one line here (docs/architecture.md, "Adding a provider").
"""

from __future__ import annotations

from pipeline.ingest import aws, focus, gcp
from pipeline.ingest.provider import Provider

PROVIDERS: tuple[Provider, ...] = (aws.PROVIDER, gcp.PROVIDER, focus.PROVIDER)
BY_NAME = {provider.name: provider for provider in PROVIDERS}
