"""Tag keys as users write them: the resource_tags keys CUR 2.0 writes, and the keys as written."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from pipeline.common.errors import ConfigError
from pipeline.config.loader import load_config
from pipeline.ingest.tag_keys import aws_tag_cur_key, cur_tag_key, cur_tag_keys, gcp_label_problem
from pipeline.run.settings import write_pool_settings


@pytest.mark.parametrize(
    ("written", "cur"),
    [
        ("attempt-id", "user_attempt_id"),
        ("ml:attempt_id", "user_ml_attempt_id"),
        ("ml.attempt/id", "user_ml_attempt_id"),
        ("attempt id", "user_attempt_id"),
        ("app.kubernetes.io/name", "user_app_kubernetes_io_name"),
        ("aws:eks:cluster-name", "aws_eks_cluster_name"),
        ("user_attempt_id", "user_attempt_id"),  # already a CUR key: kept
        ("aws_batch_job_queue", "aws_batch_job_queue"),
        ("  attempt-id ", "user_attempt_id"),
        ("AttemptId", "user_attempt_id"),  # camelCase -> snake_case, as CUR writes it
        ("ml:attemptID", "user_ml_attempt_id"),
    ],
)
def test_keys_normalize_as_cur_does(written: str, cur: str) -> None:
    assert cur_tag_key(written) == cur


def test_aws_listed_keys_always_get_their_prefix() -> None:
    assert aws_tag_cur_key("user_x", aws_generated=False) == "user_user_x"
    assert aws_tag_cur_key("attempt-id", aws_generated=False) == "user_attempt_id"
    assert aws_tag_cur_key("aws:eks:namespace", aws_generated=True) == "aws_eks_namespace"


def test_collisions_keep_the_first_key() -> None:
    assert cur_tag_keys(["exp.id", "exp_id", "other"]) == ["user_exp_id", "user_other"]


def test_blank_key_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="empty"):
        cur_tag_key("   ")


def _attribution(tmp_path: Path, toml: str) -> tuple[list[str], list[str]]:
    path = tmp_path / "runcost.toml"
    path.write_text(toml, encoding="utf-8")
    con = duckdb.connect()
    write_pool_settings(con, load_config(path))
    return con.execute(
        "select attempt_tag_keys, experiment_tag_keys from config.attribution"
    ).fetchone()


def test_config_attribution_holds_cur_keys(tmp_path: Path) -> None:
    keys = _attribution(
        tmp_path,
        '[attribution]\nattempt_tag_keys = ["attempt-id", "ml:attempt_id"]\n'
        'experiment_tag_keys = ["experiment-id"]\n',
    )
    assert keys == (["user_attempt_id", "user_ml_attempt_id"], ["user_experiment_id"])


def test_default_keys_still_work(tmp_path: Path) -> None:
    assert _attribution(tmp_path, "") == (["user_attempt_id"], ["user_experiment_id"])


def test_config_attribution_holds_the_keys_as_configured_for_labels_and_focus(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runcost.toml"
    path.write_text(
        '[attribution]\nattempt_tag_keys = [" attempt-id", "ml:attempt_id", "attempt-id"]\n'
        'experiment_tag_keys = ["Experiment"]\n',
        encoding="utf-8",
    )
    con = duckdb.connect()
    write_pool_settings(con, load_config(path))
    labels = con.execute(
        "select attempt_label_keys, experiment_label_keys from config.attribution"
    ).fetchone()
    assert labels == (["attempt-id", "ml:attempt_id"], ["Experiment"])


@pytest.mark.parametrize(
    ("key", "valid"),
    [
        ("attempt-id", True),
        ("attempt_id", True),
        ("a" * 63, True),
        ("a" * 64, False),
        ("AttemptId", False),
        ("ml:attempt.id", False),
        ("1attempt", False),
    ],
)
def test_gcp_label_rules(key: str, valid: bool) -> None:
    problem = gcp_label_problem(key)
    assert (problem is None) == valid
    if not valid:
        assert f"{key!r} cannot be a Google Cloud label key" in problem
        assert "k8s-label/<key>" in problem
