"""Read Qlik Replicate change-data-capture topics with ``spark.read.format("replicate")``.

The connector itself is a Scala DataSource V2 jar shipped inside this package;
:func:`configure_spark` puts it on a session before the JVM starts.
"""

from spark_replicate import functions
from spark_replicate._jar import ReplicateSetupError, jar_path
from spark_replicate.apply import ApplyResult, apply_changes
from spark_replicate.topic import ReplicateError, apply_topic
from spark_replicate.cdc import history, latest_state
from spark_replicate.inspection import inspect
from spark_replicate.session import configure_spark, last_read_metrics, list_tables, read, read_tables

__version__ = "0.1.0"
__all__ = ["configure_spark", "read", "read_tables", "list_tables", "inspect", "last_read_metrics", "latest_state",
           "history", "apply_changes", "apply_topic", "ApplyResult", "ReplicateError", "functions", "jar_path",
           "ReplicateSetupError", "__version__"]
