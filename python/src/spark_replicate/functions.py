"""Column functions of the connector, for the DataFrame API.

They call the connector's SQL functions by name, so they work on a classic session and over Spark
Connect alike, once the session (or the Connect server) runs with
``spark.sql.extensions=io.sparkreplicate.ReplicateExtensions``, which :func:`configure_spark` sets.
"""

from __future__ import annotations

from typing import Mapping, Union

from pyspark.sql import Column, functions as F

from spark_replicate.session import _option_name, _option_value

__all__ = ["from_replicate"]


def from_replicate(col: Union[Column, str], options: Mapping[str, object] | None = None) -> Column:
    """Decodes the Replicate messages of a binary column (a Kafka DataFrame's ``value``, a table of
    raw bytes) into structs of the columns ``spark.read.format("replicate")`` returns for the same
    ``options``; null for metadata messages and for data messages of tables not read.

    ``options`` take the reader's names (``schemaTopic``, ``table``, ``layout``, ``mode``, ...;
    ``schema_topic`` style works too) and values (booleans, lists of paths).
    """
    value = F.col(col) if isinstance(col, str) else col
    if not options:
        return F.call_function("from_replicate", value)
    pairs = [F.lit(x) for name, v in options.items() for x in (_option_name(name), _option_value(v))]
    return F.call_function("from_replicate", value, F.create_map(*pairs))
