"""Scenario charges outside any one attempt: monitoring, a kept volume, a credit, inference."""

from __future__ import annotations

import random
from decimal import Decimal

from pipeline.scenario import catalog
from pipeline.scenario.billing import Bill, hours, utc
from pipeline.scenario.cur_writer import period_bounds

ACCOUNT = "222222222222"
MONITOR = "i-0a9b8c7d6e5f40071"  # Prometheus and Grafana for the training fleet
RL_VOLUME = "vol-0c3d9e8f7a6b50022"  # the RL experiment's replay buffer, kept after its runs
ENDPOINT = f"arn:aws:sagemaker:{catalog.REGION}:{ACCOUNT}:endpoint/nlp-distill-eval"
CREDIT = Decimal("-250.00")  # a promotional credit on the account, not on any line


def monitoring_node(bill: Bill, window: tuple) -> None:
    """An m5.xlarge monitoring node over the demo days, tagged by role only: a pool spreads it
    over the attempts running each hour (or leaves the hour unallocated when none runs)."""
    bill.instance(MONITOR, "m5.xlarge", *window, "us-east-1a", {"user_role": "monitoring"})


def kept_volume(bill: Bill) -> None:
    """A 200 GB gp3 volume of exp-rl-agent, attached during its runs on Oct 6 and billed,
    detached, for two days: tagged with the experiment only, so all of it is experiment-only."""
    sizes = [(hour, 200) for hour, _ in hours(utc(6, 10), utc(8, 10))]
    bill.storage(
        catalog.EBS_GP3,
        RL_VOLUME,
        sizes,
        zone="us-east-1a",
        tags={"user_experiment_id": "exp-rl-agent"},
    )


def checkpoint_restore(bill: Bill, bucket: str, rng: random.Random) -> None:
    """GETs of the checkpoint att-llm-02 restores in its first hour (Oct 6 00:00)."""
    bill.metered(catalog.S3_GET, utc(6, 0), bucket, Decimal(rng.randint(400, 900) * 10))


def inference(bill: Bill) -> None:
    """Spend that is not training, excluded by the default [allocation] exclude: Bedrock calls
    of an evaluation harness (tagged with an experiment) and a SageMaker endpoint (untagged)."""
    bill.metered(
        catalog.BEDROCK_INPUT,
        utc(6, 5),
        "",
        Decimal(15000),
        tags={"user_experiment_id": "exp-llm-7b"},
    )
    for hour, _ in hours(utc(7, 9), utc(7, 13)):
        bill.metered(catalog.SAGEMAKER_HOSTING, hour, ENDPOINT, Decimal(1))


def account_credit(bill: Bill) -> None:
    """A promotional credit for the month with no resource: the account-credits pool spreads it
    over attempts by their net attributed cost."""
    start, end = period_bounds(bill.billing_period)
    bill.add(
        line_item_type="Credit",
        usage_start=start,
        usage_end=end,
        product_code="AmazonEC2",
        usage_amount=Decimal(0),
        pricing_unit="",
        pricing_term="",
        unblended_cost=CREDIT,
        description="AWS Credits: ML research promotion",
    )
