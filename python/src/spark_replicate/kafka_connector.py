"""Spark's own Kafka source on a session, for ``format("replicate")`` over Kafka:
``configure_spark(builder, kafka=True)`` adds the settings :func:`kafka_settings` returns."""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path
from xml.sax.saxutils import quoteattr

from spark_replicate._jar import ReplicateSetupError

GROUP = "org.apache.spark"
CONNECTOR = "spark-sql-kafka-0-10_2.13"
TOKEN_PROVIDER = "spark-token-provider-kafka-0-10_2.13"

# pyspark version -> (connector version, token provider version) where Maven Central, as this
# project's machines reach it, lacks the exact patch: the nearest served patch of the same minor
# stands in (build.sbt has the same map). Any other version is asked for exactly.
NEAREST_SERVED = {
    "4.0.4": ("4.0.4", "4.0.0"),
    "4.1.4": ("4.1.3", "4.1.1"),
    "4.2.1": ("4.2.0", "4.2.0"),
}

# Pulled in by the token provider's pom, and already in every pyspark.
_ALREADY_IN_PYSPARK = ("org.apache.hadoop:hadoop-client-runtime", "org.apache.hadoop:hadoop-client-api")


def connector_versions(pyspark_version: str) -> tuple[str, str]:
    """The (connector, token provider) versions a session of ``pyspark_version`` gets."""
    return NEAREST_SERVED.get(pyspark_version, (pyspark_version, pyspark_version))


def kafka_settings(pyspark_version: str, configured: dict[str, str]) -> dict[str, str]:
    """The session settings that add Spark's Kafka source for ``pyspark_version`` to those already
    ``configured``: the connector in ``spark.jars.packages``, resolved by Spark at start-up.

    The connector's pom asks for the token provider at its own version; where that patch is not
    served, an Ivy settings file makes the resolution take the served one instead (an exclusion
    would not do: ``spark.jars.excludes`` drops a module however it is asked for).
    """
    connector, token_provider = connector_versions(pyspark_version)
    settings = {"spark.jars.packages": _joined(configured.get("spark.jars.packages"),
                                               [f"{GROUP}:{CONNECTOR}:{connector}"])}
    if token_provider != connector:
        if "spark.jars.ivySettings" in configured:
            raise ReplicateSetupError(
                f"Spark's Kafka source {connector} needs {TOKEN_PROVIDER} {token_provider} in place of "
                f"{connector}, which configure_spark sets through spark.jars.ivySettings, but the builder "
                "has its own; add the Kafka connector to spark.jars.packages yourself")
        settings["spark.jars.ivySettings"] = str(_ivy_settings(connector, token_provider))
        settings["spark.jars.excludes"] = _joined(configured.get("spark.jars.excludes"), _ALREADY_IN_PYSPARK)
    return settings


def _joined(existing: str | None, added) -> str:
    items = [item for item in (existing or "").split(",") if item]
    return ",".join(items + [item for item in added if item not in items])


def _ivy_settings(asked: str, served: str) -> Path:
    """Ivy settings that resolve as Spark's defaults do, from the local Maven repository and then
    Maven Central (Ivy's default for an ``ibiblio`` resolver),
    reading the token provider ``asked`` as the ``served`` one. Written once per mapping."""
    rule = "\n".join([
        "      <rule>",
        "        <fromsystem>",
        f"          <src org={quoteattr(GROUP)} module={quoteattr(TOKEN_PROVIDER)} rev={quoteattr(asked)}/>",
        f"          <dest rev={quoteattr(served)}/>",
        "        </fromsystem>",
        "        <tosystem>",
        f"          <src org={quoteattr(GROUP)} module={quoteattr(TOKEN_PROVIDER)} rev={quoteattr(served)}/>",
        f"          <dest rev={quoteattr(asked)}/>",
        "        </tosystem>",
        "      </rule>"])
    text = "\n".join([
        "<ivysettings>",
        '  <settings defaultResolver="default"/>',
        '  <namespaces>',
        '    <namespace name="served">',
        rule,
        "    </namespace>",
        "  </namespaces>",
        "  <resolvers>",
        '    <chain name="default" returnFirst="true">',
        # Spark's own default chain: the local Maven repository, then Maven Central.
        # A copy there without its pom (as `mvn dependency:get -Dtransitive=false` leaves) would
        # bring the jar without its dependencies (kafka-clients): such a copy is passed over.
        '      <ibiblio name="local-m2-cache" m2compatible="true" root="file:${user.home}/.m2/repository" '
        'namespace="served" descriptor="required"/>',
        '      <ibiblio name="central" m2compatible="true" namespace="served"/>',
        "    </chain>",
        "  </resolvers>",
        "</ivysettings>", ""])
    path = Path(tempfile.gettempdir()) / f"spark-replicate-ivy-{hashlib.sha256(text.encode()).hexdigest()[:12]}.xml"
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path
