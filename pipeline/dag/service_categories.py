"""FOCUS 1.2 ServiceCategory and ServiceSubcategory of each provider's services, as data, and the
macros that look a line's service up in it (expanded by pipeline.dag.macros, as every rule)."""

from __future__ import annotations

from pipeline.common.macro import Macro
from pipeline.ingest.registry import PROVIDERS

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

# each provider's service -> FOCUS ServiceSubcategory (pipeline/ingest/<provider>/
# classification.py); the category follows from PARENTS. A service's every line takes its
# service's category, as the spec classifies services, not line items.
SOURCES = {
    provider.name: provider.service_subcategories
    for provider in PROVIDERS
    if provider.service_subcategories
}


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
