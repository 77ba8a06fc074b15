"""The [aws] section of runcost.toml: the CUR 2.0 exports to read (docs/aws-setup.md)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pipeline.common.errors import ConfigError
from pipeline.common.values import is_url, string_list

KEYS = frozenset({"exports", "endpoint_url", "region"})


@dataclass(frozen=True)
class AwsSettings:
    """[aws]: each export's folder or s3:// prefix, and the S3 endpoint and region to use."""

    exports: tuple[str, ...] = ()  # absolute folders or s3://bucket/prefix/export-name
    endpoint_url: str | None = None  # an S3-compatible store (MinIO); default: AWS
    region: str | None = None


def parse_aws(section: dict[str, Any], base: Path, where: str) -> AwsSettings:
    """Validate [aws]; credentials never come from here (the standard AWS chain)."""
    exports = string_list(section.get("exports", []), f"{where}: aws.exports")
    endpoint_url = section.get("endpoint_url")
    if endpoint_url is not None and not is_url(endpoint_url):
        raise ConfigError(
            f"{where}: aws.endpoint_url must be an http:// or https:// URL of an S3-compatible "
            'store, such as "https://minio.internal:9000"'
        )
    region = section.get("region")
    if region is not None and (not isinstance(region, str) or not region):
        raise ConfigError(f'{where}: aws.region must be a region name, such as "us-east-1"')
    return AwsSettings(
        exports=tuple(_resolve_location(item, base) for item in exports),
        endpoint_url=endpoint_url,
        region=region,
    )


def portable(settings: AwsSettings) -> AwsSettings:
    """Each export named by its last path part, not where it lies."""
    names = tuple(location.rstrip("/").rsplit("/", 1)[-1] for location in settings.exports)
    return replace(settings, exports=names)


def _resolve_location(value: str, base: Path) -> str:
    if "://" in value:
        return value
    candidate = Path(value).expanduser()
    return str(candidate if candidate.is_absolute() else (base / candidate).resolve())
