"""Data contracts: one module per dataset (column lists and pandera models)."""

import warnings

# pandera imports pyspark.pandas whenever PySpark is installed (the spark extra), and PySpark then
# warns that it does not yet fully support pandas 3: runcost never uses pandas on Spark, so the
# warning would only open every run's output
warnings.filterwarnings(
    "ignore", message="PySpark does not yet fully support pandas", category=FutureWarning
)
