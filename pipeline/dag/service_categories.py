"""FOCUS 1.2 ServiceCategory and ServiceSubcategory of each provider's services, as data, and the
macros that look a line's service up in it (expanded by pipeline.dag.macros, as every rule)."""

from __future__ import annotations

from pipeline.dag.macro import Macro

# Every allowed ServiceSubcategory of FOCUS 1.2 and its one parent ServiceCategory, as the spec
# lists them (specification/columns/servicesubcategory.md).
PARENTS = {
    "AI Platforms": "AI and Machine Learning",
    "Bots": "AI and Machine Learning",
    "Generative AI": "AI and Machine Learning",
    "Machine Learning": "AI and Machine Learning",
    "Natural Language Processing": "AI and Machine Learning",
    "Other (AI and Machine Learning)": "AI and Machine Learning",
    "Analytics Platforms": "Analytics",
    "Business Intelligence": "Analytics",
    "Data Processing": "Analytics",
    "Search": "Analytics",
    "Streaming Analytics": "Analytics",
    "Other (Analytics)": "Analytics",
    "Productivity and Collaboration": "Business Applications",
    "Other (Business Applications)": "Business Applications",
    "Containers": "Compute",
    "End User Computing": "Compute",
    "Quantum Compute": "Compute",
    "Serverless Compute": "Compute",
    "Virtual Machines": "Compute",
    "Other (Compute)": "Compute",
    "Caching": "Databases",
    "Data Warehouses": "Databases",
    "Ledger Databases": "Databases",
    "NoSQL Databases": "Databases",
    "Relational Databases": "Databases",
    "Time Series Databases": "Databases",
    "Other (Databases)": "Databases",
    "Developer Platforms": "Developer Tools",
    "Continuous Integration and Deployment": "Developer Tools",
    "Development Environments": "Developer Tools",
    "Source Code Management": "Developer Tools",
    "Quality Assurance": "Developer Tools",
    "Other (Developer Tools)": "Developer Tools",
    "Identity and Access Management": "Identity",
    "Other (Identity)": "Identity",
    "API Management": "Integration",
    "Messaging": "Integration",
    "Workflow Orchestration": "Integration",
    "Other (Integration)": "Integration",
    "IoT Analytics": "Internet of Things",
    "IoT Platforms": "Internet of Things",
    "Other (Internet of Things)": "Internet of Things",
    "Architecture": "Management and Governance",
    "Compliance": "Management and Governance",
    "Cost Management": "Management and Governance",
    "Data Governance": "Management and Governance",
    "Disaster Recovery": "Management and Governance",
    "Endpoint Management": "Management and Governance",
    "Observability": "Management and Governance",
    "Support": "Management and Governance",
    "Other (Management and Governance)": "Management and Governance",
    "Content Creation": "Media",
    "Gaming": "Media",
    "Media Streaming": "Media",
    "Mixed Reality": "Media",
    "Other (Media)": "Media",
    "Data Migration": "Migration",
    "Resource Migration": "Migration",
    "Other (Migration)": "Migration",
    "Other (Mobile)": "Mobile",
    "Multicloud Integration": "Multicloud",
    "Other (Multicloud)": "Multicloud",
    "Application Networking": "Networking",
    "Content Delivery": "Networking",
    "Network Connectivity": "Networking",
    "Network Infrastructure": "Networking",
    "Network Routing": "Networking",
    "Network Security": "Networking",
    "Other (Networking)": "Networking",
    "Secret Management": "Security",
    "Security Posture Management": "Security",
    "Threat Detection and Response": "Security",
    "Other (Security)": "Security",
    "Backup Storage": "Storage",
    "Block Storage": "Storage",
    "File Storage": "Storage",
    "Object Storage": "Storage",
    "Storage Platforms": "Storage",
    "Other (Storage)": "Storage",
    "Application Platforms": "Web",
    "Other (Web)": "Web",
    "Other (Other)": "Other",
}

# A service the tables below do not name: FOCUS's catch-all.
UNKNOWN = "Other (Other)"

# AWS CUR line_item_product_code -> FOCUS ServiceSubcategory. The category follows from PARENTS;
# a service's every line takes its service's category (EC2's EBS volumes and transfer included),
# as the spec classifies services, not line items.
AWS = {
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

# Google Cloud billing export service.description -> FOCUS ServiceSubcategory.
GCP = {
    "Vertex AI": "Machine Learning",
    "Cloud Natural Language API": "Natural Language Processing",
    "BigQuery": "Data Warehouses",
    "Cloud Dataflow": "Data Processing",
    "Cloud Dataproc": "Data Processing",
    "Cloud Pub/Sub": "Messaging",
    "Compute Engine": "Virtual Machines",
    "Kubernetes Engine": "Containers",
    "Artifact Registry": "Containers",
    "Cloud Run": "Serverless Compute",
    "Cloud Functions": "Serverless Compute",
    "Memorystore for Redis": "Caching",
    "Cloud SQL": "Relational Databases",
    "Cloud Spanner": "Relational Databases",
    "Cloud Bigtable": "NoSQL Databases",
    "Cloud Firestore": "NoSQL Databases",
    "Cloud Build": "Continuous Integration and Deployment",
    "Cloud Monitoring": "Observability",
    "Cloud Logging": "Observability",
    "Support": "Support",
    "Networking": "Network Infrastructure",
    "Cloud Load Balancing": "Application Networking",
    "Cloud CDN": "Content Delivery",
    "Cloud DNS": "Network Routing",
    "Cloud Key Management Service (KMS)": "Secret Management",
    "Secret Manager": "Secret Management",
    "Cloud Storage": "Object Storage",
    "Filestore": "File Storage",
}

SOURCES = {"aws": AWS, "gcp": GCP}


def _case(table: dict[str, str], value: str) -> str:
    """A CASE over ``{name}`` giving ``value(subcategory)`` for each service, else for UNKNOWN."""
    whens = " ".join(
        f"when '{service}' then '{value_of}'"
        for service, subcategory in sorted(table.items())
        for value_of in [value.format(subcategory=subcategory, category=PARENTS[subcategory])]
    )
    fallback = value.format(subcategory=UNKNOWN, category=PARENTS[UNKNOWN])
    return f"case {{name}} {whens} else '{fallback}' end"


# `<source>_service_category(name)` and `<source>_service_subcategory(name)`: a service name's
# FOCUS ServiceCategory and ServiceSubcategory (a profile's, computed once per profile).
SERVICE_CATEGORY_MACROS = [
    Macro(f"{source}_service_{kind}", ("name",), _case(table, "{" + kind + "}"))
    for source, table in SOURCES.items()
    for kind in ("category", "subcategory")
]
