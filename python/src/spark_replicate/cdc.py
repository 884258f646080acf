"""Apply Replicate changes: the table as it stands after them, and its history (SCD type 2).

Both take the flat-layout DataFrame of one table, as ``spark_replicate.read`` returns it, and use
only the DataFrame API, so they run on Spark Connect too. The rules are in the README's
"Applying changes"; ``io.sparkreplicate.cdc.Changes`` implements the same ones in Scala.

How: every change becomes an event on its key (an UPDATE that changes the key also becomes a
DELETE of the old key). Over a window per key, ordered by change sequence with full-load rows
first, each column's value after an event is the last value an event set: a column the event
does not set (not in its column mask) is null in that event's ``struct(value)``, which
``last(..., ignorenulls)`` skips, while a real NULL is a non-null struct holding null.
:mod:`spark_replicate.apply` replays a batch the same way over the rows a Delta table holds.
"""

from __future__ import annotations

from functools import reduce
from typing import NamedTuple

from pyspark.sql import Column, DataFrame, Window, WindowSpec, functions as F

__all__ = ["latest_state", "history", "KEY_POSITION"]

KEY_POSITION = "replicate.primaryKeyPosition"
START_AT, END_AT = "__START_AT", "__END_AT"
OPERATION, SEQUENCE = "header__operation", "header__change_seq"
_PRESENT, _BEFORE = "header__present_columns", "header__before_image"
DELETE = "DELETE"
# Internal columns of the events and of their replay.
LAST, RANK, DERIVED = "__replicate_last", "__replicate_rank", "__replicate_derived"
REPEATED = "__replicate_repeated"
# Per change row, computed once for all its columns: whether it moves its row to a new key, whether
# it sets every column, and whether its column mask names every column (or is null).
_MOVED, _WHOLE_ROW, _ALL_PRESENT = "__replicate_moved", "__replicate_whole_row", "__replicate_all_present"


class Layout(NamedTuple):
    """The table's columns (in the reader's order), its key columns (in key order), and the others."""

    columns: list[str]
    keys: list[str]
    values: list[str]


def latest_state(changes: DataFrame, keys: list[str] | None = None) -> DataFrame:
    """The table after ``changes``: one row per live key, the table's columns only."""
    layout = table_layout(changes, keys)
    events = replay(change_events(changes, layout), layout)
    return events.where(F.col(LAST) & (F.col(OPERATION) != DELETE)).select(*map(quoted, layout.columns))


def history(changes: DataFrame, keys: list[str] | None = None) -> DataFrame:
    """One row per version of each key: the table's columns, ``__START_AT`` and ``__END_AT``."""
    layout = table_layout(changes, keys)
    events = replay(change_events(changes, layout), layout)
    return events.where(F.col(OPERATION) != DELETE).select(*map(quoted, layout.columns), F.col(SEQUENCE).alias(START_AT),
                                                           END_AT)


def quoted(name: str) -> Column:
    return F.col(quote(name))


def quote(name: str) -> str:
    """``name`` as a SQL identifier, whatever characters it holds."""
    return "`" + name.replace("`", "``") + "`"


def table_layout(changes: DataFrame, keys: list[str] | None) -> Layout:
    """The table's columns and keys; ``keys`` if given, else the columns whose schema metadata has
    a primary-key position, in key order."""
    missing = [c for c in (OPERATION, SEQUENCE, _PRESENT, _BEFORE) if c not in changes.columns]
    if missing:
        raise ValueError(f"changes lacks {', '.join(missing)}: pass the flat layout of one table as the reader "
                         "returns it (with expandMasks=true, the default)")
    columns = [f.name for f in changes.schema[_BEFORE].dataType.fields]
    if keys is None:
        positions = {f.name: f.metadata.get(KEY_POSITION) for f in changes.schema.fields if f.name in columns}
        keys = sorted((n for n, p in positions.items() if p), key=positions.get)
    unknown = [k for k in keys if k not in columns]
    if not keys or unknown:
        problem = f"unknown key columns {', '.join(unknown)}" if unknown else "the metadata names no primary key"
        raise ValueError(f"{problem}: pass keys= with the table's key columns, among: {', '.join(columns)}")
    return Layout(columns, list(keys), [c for c in columns if c not in keys])


def slot(index: int) -> str:
    return f"__replicate_{index}"


def change_events(changes: DataFrame, layout: Layout) -> DataFrame:
    """Every change as an event on its key (a change delivered twice, twice: :func:`replay` drops
    the repeat): the keys, change sequence, operation, ``RANK`` 1 (a change, not a baseline),
    ``DERIVED`` (the DELETE of a moved row's old key), and per value column a slot:
    ``struct(value)`` when the event sets it, else null."""
    keys, values = layout.keys, layout.values
    before = F.col(_BEFORE)
    moved = ((F.col(OPERATION) == "UPDATE") & before.isNotNull()
             & ~reduce(lambda a, b: a & b, [before.getField(k).eqNullSafe(quoted(k)) for k in keys]))
    # The flags are columns of their own so that each is computed once per row, not once per
    # column; a full mask (the usual case) then spares the search of the mask's names per column.
    flagged = changes.select("*", moved.alias(_MOVED), (F.col(OPERATION).isin("INSERT", "REFRESH") | moved).alias(_WHOLE_ROW),
                             (F.col(_PRESENT).isNull() | (F.col(_PRESENT) == F.array(*map(F.lit, layout.columns))))
                             .alias(_ALL_PRESENT))

    def in_mask(column: str) -> Column:
        return F.col(_ALL_PRESENT) | F.array_contains(F.col(_PRESENT), column)

    # A moved row starts from its before-image for the columns its mask leaves out.
    def set_value(column: str) -> Column:
        value = F.when(F.col(_MOVED) & ~in_mask(column), before.getField(column)).otherwise(quoted(column))
        return F.when(F.col(_WHOLE_ROW) | in_mask(column), F.struct(value.alias("v")))

    events = flagged.select(*map(quoted, keys), SEQUENCE, OPERATION, F.lit(1).alias(RANK), F.lit(False).alias(DERIVED),
                            *(set_value(c).alias(slot(i)) for i, c in enumerate(values)))
    moved_away = flagged.where(F.col(_MOVED)).select(
        *(before.getField(k).alias(k) for k in keys), SEQUENCE, F.lit(DELETE).alias(OPERATION),
        F.lit(1).alias(RANK), F.lit(True).alias(DERIVED),
        *(F.lit(None).cast(events.schema[slot(i)].dataType).alias(slot(i)) for i in range(len(values))))
    return events.unionByName(moved_away)


def event_order(layout: Layout) -> WindowSpec:
    """The events of each key in the order they happened: a window over this spec after
    :func:`replay` reuses its sort."""
    return Window.partitionBy(*map(quoted, layout.keys)).orderBy(RANK, F.col(SEQUENCE).asc_nulls_first(), OPERATION,
                                                                 DERIVED)


def replay(events: DataFrame, layout: Layout) -> DataFrame:
    """Every event of every key once, with all the table's columns as they stand after it, its
    change sequence, ``__END_AT`` (the next event's) and whether it is the key's ``LAST``, in
    :func:`event_order`. Events of ``RANK`` 0 (a baseline: the row a table already holds) come before the
    changes. A change delivered more than once (the same key, change sequence and operation: files
    landed twice, a replayed topic) sorts next to its repeats and only the last is kept; dropping
    repeats here, in the window's own sort, spares a shuffle and a sort of the whole input."""
    keys, values = layout.keys, layout.values
    order = event_order(layout)
    so_far = order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    repeated = reduce(lambda a, b: a & b, [F.lead(c).over(order).eqNullSafe(F.col(c))
                                           for c in (RANK, SEQUENCE, OPERATION, DERIVED)])
    return events.select(
        *map(quoted, keys), OPERATION, RANK, DERIVED,
        *(F.last(slot(i), ignorenulls=True).over(so_far).getField("v").alias(c) for i, c in enumerate(values)),
        SEQUENCE, F.lead(SEQUENCE).over(order).alias(END_AT),
        F.lead(F.lit(False), default=True).over(order).alias(LAST), repeated.alias(REPEATED)
    ).where(~F.col(REPEATED)).drop(REPEATED)
