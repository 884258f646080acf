"""Apply Replicate changes: the table as it stands after them, and its history (SCD type 2).

Both take the flat-layout DataFrame of one table, as ``spark_replicate.read`` returns it, and use
only the DataFrame API, so they run on Spark Connect too. The rules are in the README's
"Applying changes"; ``io.sparkreplicate.cdc.Changes`` implements the same ones in Scala.

How: every change becomes an event on its key (an UPDATE that changes the key also becomes a
DELETE of the old key), ordered per key by change sequence with full-load rows first. An event
that sets every column (its mask names them all, or it starts a row) carries them in one struct,
``FULL``; an event whose mask leaves columns out carries its values and its mask in another,
``PARTIAL`` (a row moved to a new key with such a mask carries both: its before-image as its
``FULL``). Over a window per key, one function of the connector's, ``replicate_values_after``,
folds the events in order: a ``FULL`` sets every column, then a ``PARTIAL`` the columns its mask
names. So the events cross the shuffle and the sort as one struct each, and the window keeps one
value per key.
:mod:`spark_replicate.apply` replays a batch the same way over the rows a Delta table holds.
"""

from __future__ import annotations

from typing import NamedTuple

from pyspark.sql import Column, DataFrame, functions as F

from spark_replicate.session import register_functions

__all__ = ["latest_state", "history", "KEY_POSITION"]

KEY_POSITION = "replicate.primaryKeyPosition"
START_AT, END_AT = "__START_AT", "__END_AT"
OPERATION, SEQUENCE = "header__operation", "header__change_seq"
_PRESENT, _BEFORE = "header__present_columns", "header__before_image"
DELETE = "DELETE"
# Internal columns of the events and of their replay.
LAST, RANK, DERIVED = "__replicate_last", "__replicate_rank", "__replicate_derived"
REPEATED = "__replicate_repeated"
# What orders each key's events, every one ascending with nulls first (Spark's default).
ORDER_COLUMNS = (RANK, SEQUENCE, OPERATION, DERIVED)
# An event's values when it sets every column: a struct of the value columns, v0, v1...; and when
# it does not: struct(m0, m1...: its mask (see mask_words), v: the same struct). The event's order
# travels in its own columns (ORDER_COLUMNS), which the window sorts by.
FULL, PARTIAL = "__replicate_full", "__replicate_partial"
# The connector's window function that folds a key's events into its values, and its function that
# takes a mask's column names as bits (see their Scala classes).
VALUES_AFTER, _VALUES = "replicate_values_after", "__replicate_values"
NAMES_MASK = "replicate_names_mask"


class Layout(NamedTuple):
    """The table's columns (in the reader's order), its key columns (in key order), and the others."""

    columns: list[str]
    keys: list[str]
    values: list[str]


def latest_state(changes: DataFrame, keys: list[str] | None = None) -> DataFrame:
    """The table after ``changes``: one row per live key, the table's columns only."""
    layout = table_layout(changes, keys)
    events = replay_last(change_events(changes, layout), layout)
    return events.where(F.col(OPERATION) != DELETE).select(*map(quoted, layout.columns))


def history(changes: DataFrame, keys: list[str] | None = None) -> DataFrame:
    """One row per version of each key: the table's columns, ``__START_AT`` and ``__END_AT``."""
    layout = table_layout(changes, keys)
    events = replay(change_events(changes, layout), layout)
    return events.where(F.col(OPERATION) != DELETE).select(*map(quoted, layout.columns),
                                                           F.col(SEQUENCE).alias(START_AT), END_AT)


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


def mask_words(layout: Layout) -> int:
    """The 64-bit words of a ``PARTIAL``'s mask: bit ``i % 64`` of word ``i // 64`` is value column ``i``."""
    return (len(layout.values) + 63) // 64


def full_struct(values: list[str]) -> str:
    """The ``FULL`` of an event that sets the value columns to ``values`` (SQL): fields v0, v1...
    (none for a table whose columns are all keys)."""
    return "named_struct(" + ", ".join(f"'v{i}', {v}" for i, v in enumerate(values)) + ")"


def change_events(changes: DataFrame, layout: Layout) -> DataFrame:
    """Every change as an event on its key (a change delivered twice, twice: :func:`replay` drops
    the repeat): the keys, change sequence, operation, ``RANK`` 1 (a change, not a baseline),
    ``DERIVED`` (the DELETE of a moved row's old key), and ``FULL`` when the event sets every
    column, else ``PARTIAL`` (both for a moved row whose mask leaves columns out)."""
    # SQL text, not Column functions: on a classic session each of those is several py4j calls, and
    # a table of ten columns took a second of them per batch.
    keys, values = layout.keys, layout.values
    # The flags of a row (whether it moves to a new key, sets every column, has a mask naming every
    # column) are written into each expression that needs them, not made columns of a projection of
    # their own, which copied every column of the input once more wherever the events run outside
    # whole-stage code generation, where each projection makes its own rows (a table of more columns
    # than it takes, ``spark.sql.codegen.maxFields``; README: Speed).
    # Subexpression elimination leaves out what only a branch evaluates, so a flag is tested once
    # per struct, not within each of its fields: with ``moved`` in every field's condition, a row
    # tested it (reading the before-image) once per column.
    before = quote(_BEFORE)
    moved = (f"({OPERATION} = 'UPDATE' AND {before} IS NOT NULL AND NOT ("
             + " AND ".join(f"{before}.{quote(k)} <=> {quote(k)}" for k in keys) + "))")
    whole_row = f"({OPERATION} IN ('INSERT', 'REFRESH') OR {moved})"
    # A mask's names are the table's (those of the row's version), each once: all of them, if as many.
    all_present = f"({_PRESENT} IS NULL OR size({_PRESENT}) = {len(layout.columns)})"
    sets_all = f"({whole_row} OR {all_present})"
    # Word w of the mask: the bits of value columns 64w to 64w + 63 that it names, by one function
    # call: an array_contains per column made the projection's code too long (see NamesMask).
    masks = "".join(f"'m{w}', {NAMES_MASK}({_PRESENT}, {', '.join(map(sql_bytes, values[64 * w:64 * (w + 1)]))}), "
                    for w in range(mask_words(layout)))
    as_given = full_struct(list(map(quote, values)))
    partial = f"named_struct({masks}'v', {as_given})"
    # A row moved to a new key whose mask leaves columns out starts from its before-image: its event
    # carries both, the before-image's values as its FULL and its own as its PARTIAL.
    moved_partly = f"({moved} AND NOT {all_present})"
    full = f"CASE WHEN {moved_partly} THEN {full_struct([f'{before}.{quote(c)}' for c in values])} ELSE {as_given} END"
    register_functions(changes.sparkSession)
    # One scan of the changes: a moved row is read once and gives both of its events, where a
    # union of two scans would plan a Kafka read's offsets twice, and a record produced in between
    # would give its moved row's DELETE of the old key without its row at the new one.
    copies = changes.selectExpr("*", f"explode(IF({moved}, array(false, true), array(false))) AS {DERIVED}")
    return copies.selectExpr(
        *(f"IF({DERIVED}, {before}.{quote(k)}, {quote(k)}) AS {quote(k)}" for k in keys), SEQUENCE,
        f"IF({DERIVED}, '{DELETE}', {OPERATION}) AS {OPERATION}", f"1 AS {RANK}", DERIVED,
        f"CASE WHEN NOT {DERIVED} AND {sets_all} THEN {full} END AS {FULL}",
        f"CASE WHEN NOT {DERIVED} AND (NOT {sets_all} OR {moved_partly}) THEN {partial} END AS {PARTIAL}")


def event_order(layout: Layout) -> str:
    """The events of each key in the order they happened, as a window's SQL: a window over it
    after :func:`replay` reuses its sort."""
    return f"PARTITION BY {sql_names(layout.keys)} ORDER BY {', '.join(ORDER_COLUMNS)}"


class Windows(NamedTuple):
    """The windows over each key's events, as SQL: in :func:`event_order`, up to the current
    event, and over all of them."""

    order: str
    so_far: str
    every_event: str


def windows(layout: Layout) -> Windows:
    order = event_order(layout)
    return Windows(order, f"{order} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW",
                   f"{order} ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING")


def replay(events: DataFrame, layout: Layout, *more: str) -> DataFrame:
    """Every event of every key once, with all the table's columns as they stand after it, its
    change sequence, ``__END_AT`` (the next event's), whether it is the key's ``LAST`` and ``more``
    (SQL over the :func:`windows`, which sees the repeats), in :func:`event_order`. Events of
    ``RANK`` 0 (a baseline: the row a table already holds) come before the changes. A change
    delivered more than once (the same key, change sequence and operation: files landed twice, a
    replayed topic) sorts next to its repeats and only the last is kept; dropping repeats here, in
    the window's own sort, spares a shuffle and a sort of the whole input."""
    over = windows(layout)
    repeated = " AND ".join(f"lead({c}) OVER ({over.order}) <=> {c}" for c in ORDER_COLUMNS)
    return _replayed(events, layout, over.so_far, f"lead({SEQUENCE}) OVER ({over.order}) AS {END_AT}",
                     f"{repeated} AS {REPEATED}", *more).where(f"NOT {REPEATED}").drop(REPEATED)


def replay_last(events: DataFrame, layout: Layout, *more: str) -> DataFrame:
    """Each key's last event as :func:`replay` gives it (its repeats need not be dropped: they set
    the same values), with ``more`` (SQL over the :func:`windows`). What a current state needs,
    in one window operator: each one Spark plans apart copies every event once more, and staging
    500,000 events of 30 columns through three took 1.7x as long. At a key's last event the values
    up to it are those over all its events, which a window computes once per key rather than once
    per event: 7% less time for 500,000 events."""
    return _replayed(events, layout, windows(layout).every_event, *more).where(LAST)


def _replayed(events: DataFrame, layout: Layout, frame: str, *more: str) -> DataFrame:
    """Every event with the keys, operation, ``RANK``, ``DERIVED``, the table's columns as they
    stand after the events of ``frame`` (a window of :func:`windows`), change sequence, ``LAST`` and
    ``more``: windows of one order, so one operator."""
    # Shuffled by key; the window's own sort orders each key's events. (A sort of them made here
    # was sorted again: where every event has the same RANK, as changes without a baseline, Spark
    # drops the constant from this sort's order but not from the window's, which then differ.)
    ordered = events.repartition(*map(quoted, layout.keys))
    folded = []
    if layout.values:  # (a table whose columns are all keys has no values to fold)
        register_functions(events.sparkSession)
        folded = [f"{VALUES_AFTER}({FULL}, {PARTIAL}) OVER ({frame}) AS {_VALUES}"]
    windowed = ordered.selectExpr(
        *map(quote, layout.keys), OPERATION, RANK, DERIVED, SEQUENCE, *folded,
        f"lead(false, 1, true) OVER ({windows(layout).order}) AS {LAST}", *more)
    values = (f"{_VALUES}.v{i} AS {quote(c)}" for i, c in enumerate(layout.values))
    return windowed.selectExpr("*", *values).drop(_VALUES)


def sql_names(columns: list[str]) -> str:
    return ", ".join(map(quote, columns))


def sql_bytes(value: str) -> str:
    """``value``'s UTF-8 bytes as a SQL binary literal, which means the same whatever the session's
    settings, where how a quoted literal's backslashes read depends on
    ``spark.sql.parser.escapedStringLiterals``."""
    return f"X'{value.encode().hex()}'"


def sql_string(value: str) -> str:
    """``value`` as SQL that means it whatever the session's settings (see :func:`sql_bytes`)."""
    return f"decode({sql_bytes(value)}, 'UTF-8')"
