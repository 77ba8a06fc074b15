"""How AWS CUR lines are classified: each service's FOCUS ServiceSubcategory, the source columns
a line's profile is computed from, and the accelerator of an instance family (the rules its
staging models call, expanded by pipeline.dag.macros as every rule)."""

from __future__ import annotations

from pipeline.common.macro import Macro

# AWS CUR line_item_product_code -> FOCUS ServiceSubcategory. The category follows from PARENTS;
# a service's every line takes its service's category (EC2's EBS volumes and transfer included),
# as the spec classifies services, not line items.
SERVICE_SUBCATEGORIES = {
    "AmazonBedrock": "Generative AI",
    "AmazonSageMaker": "Machine Learning",
    "AmazonComprehend": "Natural Language Processing",
    "AmazonAthena": "Analytics Platforms",
    "AmazonQuickSight": "Business Intelligence",
    "AmazonEMR": "Data Processing",
    "AWSGlue": "Data Processing",
    "AmazonES": "Search",
    "AmazonKinesis": "Streaming Analytics",
    "AmazonEC2": "Virtual Machines",
    "AmazonLightsail": "Virtual Machines",
    "AmazonEKS": "Containers",
    "AmazonECS": "Containers",
    "AmazonECR": "Containers",
    "AWSLambda": "Serverless Compute",
    "AWSBatch": "Other (Compute)",
    "ComputeSavingsPlans": "Other (Compute)",
    "AmazonElastiCache": "Caching",
    "AmazonRedshift": "Data Warehouses",
    "AmazonDynamoDB": "NoSQL Databases",
    "AmazonRDS": "Relational Databases",
    "AWSCodePipeline": "Continuous Integration and Deployment",
    "AWSCodeCommit": "Source Code Management",
    "AWSIAM": "Identity and Access Management",
    "AmazonApiGateway": "API Management",
    "AWSQueueService": "Messaging",
    "AmazonSNS": "Messaging",
    "AmazonStates": "Workflow Orchestration",
    "AWSCostExplorer": "Cost Management",
    "AmazonCloudWatch": "Observability",
    "AWSXRay": "Observability",
    "AWSSupportBusiness": "Support",
    "AWSSupportEnterprise": "Support",
    "AWSConfig": "Other (Management and Governance)",
    "AWSCloudTrail": "Other (Management and Governance)",
    "AWSELB": "Application Networking",
    "AmazonCloudFront": "Content Delivery",
    "AWSDirectConnect": "Network Connectivity",
    "AmazonVPC": "Network Infrastructure",
    "AWSDataTransfer": "Network Infrastructure",
    "AmazonRoute53": "Network Routing",
    "AWSNetworkFirewall": "Network Security",
    "AWSSecretsManager": "Secret Management",
    "awskms": "Secret Management",
    "AmazonGuardDuty": "Threat Detection and Response",
    "AWSShield": "Other (Security)",
    "AWSBackup": "Backup Storage",
    "AmazonEFS": "File Storage",
    "AmazonFSx": "File Storage",
    "AmazonS3": "Object Storage",
    "AmazonS3GlacierDeepArchive": "Object Storage",
}

# What the profile columns of a CUR line are computed from (staging.aws_line_profiles): the line
# item columns its profile key hashes.
PROFILE_SOURCES = (
    "payer_account_id",
    "currency_code",
    "source_delivery",
    "source_file",
    "payer_account_name",
    "usage_account_id",
    "usage_account_name",
    "line_item_type",
    "line_item_description",
    "product_code",
    "sku_id",
    "usage_type",
    "operation",
    "region_code",
    "availability_zone",
    "instance_type",
    "pricing_unit",
    "invoice_id",
    "invoicing_entity",
    "billing_entity",
    "pricing_term",
    "savings_plan_arn",
    "reservation_arn",
    "region_name",
    "product_family",
    "legal_entity",
    "pricing_currency",
)

# The accelerator of an AWS instance family (CUR's, and a FOCUS row's that names an AWS instance
# type): the family is the instance type's first part (p4d of p4d.24xlarge, SageMaker's ml.
# prefix dropped).
AWS_ACCELERATORS = {
    "dl1": "Gaudi",
    "g4ad": "Radeon Pro V520",
    "g4dn": "T4",
    "g5": "A10G",
    "g5g": "T4G",
    "g6": "L4",
    "g6e": "L40S",
    "inf1": "Inferentia",
    "inf2": "Inferentia2",
    "p3": "V100",
    "p3dn": "V100",
    "p4d": "A100",
    "p4de": "A100 80GB",
    "p5": "H100",
    "p5e": "H200",
    "p5en": "H200",
    "trn1": "Trainium",
    "trn1n": "Trainium",
    "trn2": "Trainium2",
}


def _aws_gpu_model() -> str:
    family = r"regexp_extract(coalesce({instance_type}, ''), '^(ml\.)?([a-z0-9]+)\.', 2)"
    whens = " ".join(f"when '{name}' then '{model}'" for name, model in AWS_ACCELERATORS.items())
    return f"case {family} {whens} end"


MACROS = (
    # `aws_accelerator_instance(instance_type)`: an AWS instance type of an accelerator family
    # (p, g, trn, inf, dl; SageMaker's ml. included)
    Macro(
        "aws_accelerator_instance",
        ("instance_type",),
        r"regexp_matches(coalesce({instance_type}, ''), '^(ml\.)?(p[0-9]|g[0-9]|trn|inf|dl)')",
    ),
    # `aws_gpu_model(instance_type)`: its accelerator (AWS_ACCELERATORS), NULL for another family
    Macro("aws_gpu_model", ("instance_type",), _aws_gpu_model()),
)
