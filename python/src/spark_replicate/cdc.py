"""Apply Replicate changes: the table as it stands after them, and its history (SCD type 2).

Both take the flat-layout DataFrame of one table, as ``spark_replicate.read`` returns it, and use
only the DataFrame API, so they run on Spark Connect too. The rules are in the README's
"Applying changes"; ``io.sparkreplicate.cdc.Changes`` implements the same ones in Scala.

How: every change becomes an event on its key (an UPDATE that changes the key also becomes a
DELETE of the old key). Over a window per key, ordered by change sequence with full-load rows
first, each column's value after an event is the last value an event set: a column the event
does not set (not in its column mask) is null in that event's ``struct(value)``, which
``last(..., ignorenulls)`` skips, while a real NULL is a non-null struct holding null.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame, Window, functions as F

__all__ = ["latest_state", "history", "KEY_POSITION"]

KEY_POSITION = "replicate.primaryKeyPosition"
START_AT, END_AT = "__START_AT", "__END_AT"
_OPERATION, _SEQUENCE = "header__operation", "header__change_seq"
_PRESENT, _BEFORE = "header__present_columns", "header__before_image"
_LAST, _DELETE = "__replicate_last", "DELETE"


def latest_state(changes: DataFrame, keys: list[str] | None = None) -> DataFrame:
    """The table after ``changes``: one row per live key, the table's columns only."""
    columns, events = _applied(changes, keys)
    return events.where(F.col(_LAST) & (F.col(_OPERATION) != _DELETE)).select(*map(_col, columns))


def history(changes: DataFrame, keys: list[str] | None = None) -> DataFrame:
    """One row per version of each key: the table's columns, ``__START_AT`` and ``__END_AT``."""
    columns, events = _applied(changes, keys)
    return events.where(F.col(_OPERATION) != _DELETE).select(*map(_col, columns), START_AT, END_AT)


def _col(name: str) -> Column:
    return F.col("`" + name.replace("`", "``") + "`")


def _table_columns(changes: DataFrame) -> list[str]:
    missing = [c for c in (_OPERATION, _SEQUENCE, _PRESENT, _BEFORE) if c not in changes.columns]
    if missing:
        raise ValueError(f"changes lacks {', '.join(missing)}: pass the flat layout of one table as the reader "
                         "returns it (with expandMasks=true, the default)")
    return [f.name for f in changes.schema[_BEFORE].dataType.fields]


def _keys(changes: DataFrame, columns: list[str], keys: list[str] | None) -> list[str]:
    """``keys`` if given, else the columns whose schema metadata has a primary-key position, in key order."""
    if keys is None:
        positions = {f.name: f.metadata.get(KEY_POSITION) for f in changes.schema.fields if f.name in columns}
        keys = sorted((n for n, p in positions.items() if p), key=positions.get)
    unknown = [k for k in keys if k not in columns]
    if not keys or unknown:
        problem = f"unknown key columns {', '.join(unknown)}" if unknown else "the metadata names no primary key"
        raise ValueError(f"{problem}: pass keys= with the table's key columns, among: {', '.join(columns)}")
    return list(keys)


def _applied(changes: DataFrame, keys: list[str] | None) -> tuple[list[str], DataFrame]:
    """Every event of every key with all the table's columns as they stand after it, ``__START_AT``
    (its change sequence), ``__END_AT`` (the next event's) and whether it is the key's last."""
    columns = _table_columns(changes)
    keys = _keys(changes, columns, keys)
    values = [c for c in columns if c not in keys]
    changes = changes.dropDuplicates([_SEQUENCE, _OPERATION, *keys])
    before = F.col(_BEFORE)
    moved = ((F.col(_OPERATION) == "UPDATE") & before.isNotNull()
             & ~reduce(lambda a, b: a & b, [before.getField(k).eqNullSafe(_col(k)) for k in keys]))
    whole_row = F.col(_OPERATION).isin("INSERT", "REFRESH") | moved
    slots = [f"__replicate_{i}" for i in range(len(values))]

    def in_mask(column: str) -> Column:
        return F.col(_PRESENT).isNull() | F.array_contains(F.col(_PRESENT), column)

    # A moved row starts from its before-image for the columns its mask leaves out.
    def set_value(column: str) -> Column:
        value = F.when(moved & ~in_mask(column), before.getField(column)).otherwise(_col(column))
        return F.when(whole_row | in_mask(column), F.struct(value.alias("v")))

    events = changes.select(*map(_col, keys), _SEQUENCE, _OPERATION,
                            *(set_value(c).alias(s) for c, s in zip(values, slots)))
    moved_away = changes.where(moved).select(
        *(before.getField(k).alias(k) for k in keys), _SEQUENCE, F.lit(_DELETE).alias(_OPERATION),
        *(F.lit(None).cast(events.schema[s].dataType).alias(s) for s in slots))
    order = Window.partitionBy(*map(_col, keys)).orderBy(F.col(_SEQUENCE).asc_nulls_first())
    so_far = order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    return columns, events.unionByName(moved_away).select(
        *map(_col, keys), _OPERATION,
        *(F.last(s, ignorenulls=True).over(so_far).getField("v").alias(c) for c, s in zip(values, slots)),
        F.col(_SEQUENCE).alias(START_AT), F.lead(_SEQUENCE).over(order).alias(END_AT),
        F.lead(F.lit(False), default=True).over(order).alias(_LAST))
