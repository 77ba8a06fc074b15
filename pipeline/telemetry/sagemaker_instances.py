"""SageMaker instance types: GPUs and their model per type (shipped table, options.gpus), and
a job's ResourceConfig (one instance type, or instance groups) as canonical attempt columns."""

from __future__ import annotations

import csv
import functools
import io
from importlib import resources
from typing import Any

from pipeline.common.errors import InputError

# ml.* instance type -> (accelerators per instance, their type): the instance types SageMaker
# documents for training, as data; an unlisted type is refused (options.gpus adds types).
INSTANCE_TABLE = "sagemaker_instance_types.csv"


@functools.cache
def instance_types() -> dict[str, tuple[int, str | None]]:
    text = resources.files("pipeline.telemetry").joinpath("data", INSTANCE_TABLE).read_text()
    return {
        row["instance_type"]: (int(row["gpu_count"]), row["gpu_type"] or None)
        for row in csv.DictReader(io.StringIO(text))
    }


def _gpu_table(extra: object, where: str) -> dict[str, tuple[int, str | None]]:
    """The shipped instance-type table with options.gpus over it.

    An options.gpus entry is GPUs per instance (its model then comes from the table's entry for
    the type, else from the table's other sizes of its family, when they agree), or a table
    { count = 8, model = "H200" }.
    """
    if not isinstance(extra, dict):
        raise InputError('options.gpus must be a table: gpus = { "ml.p5.48xlarge" = 8 }')
    known = dict(instance_types())
    for kind, value in extra.items():
        count, model = value, None
        if isinstance(value, dict):
            count, model = value.get("count"), value.get("model")
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise InputError(
                f"options.gpus: {kind!r} = {value!r} is not a GPU count; write "
                f'"{kind}" = 8, or "{kind}" = {{ count = 8, model = "H200" }}'
            )
        if model is not None and (not isinstance(model, str) or not model.strip()):
            raise InputError(
                f'options.gpus: {kind!r}: model {model!r} is not a GPU model name such as "H200"'
            )
        known[kind] = (count, model.strip() if model else _family_model(kind) if count else None)
    return known


def _family_model(kind: str) -> str | None:
    """The GPU model of the table's other sizes of kind's family (ml.p5.*), if they agree."""
    if kind in instance_types():
        return instance_types()[kind][1]
    family = kind.rsplit(".", 1)[0] + "."
    models = {m for k, (n, m) in instance_types().items() if k.startswith(family) and n and m}
    return models.pop() if len(models) == 1 else None


def resource_config(config: dict, where: str, extra: object) -> dict[str, Any]:
    """instance_type, node_count, gpu_count, gpu_type (and instance_groups) of a ResourceConfig.

    With InstanceGroups (heterogeneous clusters) counts and GPUs are summed over the groups; the
    instance type is the type of the group holding the most GPUs (ties: more instances, then
    the name), or of the group with the most instances when none has GPUs. An unknown type is
    refused.
    """
    known = _gpu_table(extra, where)
    groups = config.get("InstanceGroups") or [config]
    found = []
    for group in groups:
        kind = str(group.get("InstanceType") or "")
        if not kind:
            return {}
        if kind not in known:
            raise InputError(
                f"{where}: instance type {kind!r} is not in runcost's table of SageMaker "
                f"training instance types ({INSTANCE_TABLE}); add it with options.gpus = "
                f'{{ "{kind}" = <GPUs per instance> }} (0 for a CPU type), from the instance '
                "type's page in the SageMaker pricing or instance-types documentation"
            )
        count = int(group.get("InstanceCount") or 0)
        gpus, model = known[kind]
        found.append((gpus * count, count, kind, model, group.get("InstanceGroupName")))
    main = max(found, key=lambda g: (g[0], g[1], g[2]))
    row: dict[str, Any] = {
        "instance_type": main[2],
        "node_count": sum(g[1] for g in found),
        "gpu_count": sum(g[0] for g in found),
        "gpu_type": ",".join(sorted({g[3] for g in found if g[3] and g[0]})) or None,
    }
    if config.get("InstanceGroups"):
        row["instance_groups"] = "; ".join(f"{g[4]}: {g[1]} x {g[2]}" for g in found)
    return row
