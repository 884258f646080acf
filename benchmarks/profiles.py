"""The benchmark's table profiles and the cached, seeded landing zones generated from them.

Profile M is the headline: one table of 30 columns (ints, longs, decimals and timestamps as
strings, short and long strings, about 10% nulls), about 450 bytes per landed message, 70%
inserts, 25% updates with before-images, 5% deletes, no full load, landed as Avro container
files whose records carry the message in a `value` bytes field. S (8 columns) and W (100 columns)
are the same mix on a narrow and a wide table.

Datasets are generated with the project's own generator (``spark_replicate.generate``) and kept
under ``benchmarks/data/`` keyed by profile, size and seed; a dataset is reused only when its
recorded fingerprint (the profile's definition, the generator's source and the options) matches.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from spark_replicate import generate as gen

C = gen.ColumnDef
TOPIC = "bench"
SCHEMA = "BENCH"
OPERATION_MIX = (0.70, 0.25, 0.05)
FILES = 8  # data files (Kafka partitions) per dataset: several tasks' worth at every size

_STATUS = ("NEW", "OPEN", "PENDING", "SETTLED", "CLOSED", "REJECTED")
_CURRENCY = ("EUR", "USD", "GBP", "JPY", "CHF", "NOK")
_COUNTRY = ("DE", "FR", "US", "JP", "BR", "NO", "PL", "IN")
_CHANNEL = ("WEB", "STORE", "PHONE", "PARTNER", "API")


def _m_columns(suffix: str = "", key: bool = True) -> list[gen.ColumnDef]:
    """The 30 columns of profile M (29 without the key), names suffixed for the wide profile."""
    s = suffix
    columns = [C("ID", "INT8", pk_position=1)] if key else []
    return columns + [
        C(f"ACCOUNT_ID{s}", "INT4", nullable=False),
        C(f"BRANCH_ID{s}", "INT2"),
        C(f"QUANTITY{s}", "INT4"),
        C(f"PRIORITY{s}", "INT1"),
        C(f"RETRIES{s}", "INT2"),
        C(f"REGION_ID{s}", "INT2"),
        C(f"PRODUCT_ID{s}", "INT4"),
        C(f"SCORE{s}", "INT1"),
        C(f"VERSION_NO{s}", "INT2"),
        C(f"CUSTOMER_REF{s}", "INT8", nullable=False),
        C(f"EXTERNAL_ID{s}", "INT8"),
        C(f"BATCH_NO{s}", "INT8"),
        C(f"LEDGER_NO{s}", "INT8"),
        C(f"AMOUNT{s}", "NUMERIC", 0, 12, 2, nullable=False),
        C(f"TAX{s}", "NUMERIC", 0, 6, 2),
        C(f"BALANCE{s}", "NUMERIC", 0, 12, 2),
        C(f"RATE{s}", "NUMERIC", 0, 6, 4),
        C(f"CREATED_AT{s}", "DATETIME", 0, 26, 6, nullable=False),
        C(f"UPDATED_AT{s}", "DATETIME", 0, 26, 6),
        C(f"STATUS{s}", "STRING", 10, nullable=False, choices=_STATUS),
        C(f"CURRENCY{s}", "STRING", 3, nullable=False, choices=_CURRENCY),
        C(f"COUNTRY{s}", "STRING", 2, choices=_COUNTRY),
        C(f"CHANNEL{s}", "STRING", 10, choices=_CHANNEL),
        C(f"FIRST_NAME{s}", "STRING", 40, choices=gen._FIRST_NAMES),
        C(f"LAST_NAME{s}", "STRING", 40, choices=gen._LAST_NAMES),
        C(f"CITY{s}", "WSTRING", 40, max_words=1),
        C(f"CATEGORY{s}", "STRING", 12, max_words=1),
        C(f"DESCRIPTION{s}", "STRING", 400, max_words=4),
        C(f"NOTES{s}", "WSTRING", 1000, max_words=3),
    ]


def _s_columns() -> list[gen.ColumnDef]:
    return [
        C("ID", "INT8", pk_position=1),
        C("ACCOUNT_ID", "INT4", nullable=False),
        C("QUANTITY", "INT4"),
        C("AMOUNT", "NUMERIC", 0, 12, 2, nullable=False),
        C("CREATED_AT", "DATETIME", 0, 26, 6, nullable=False),
        C("STATUS", "STRING", 10, nullable=False, choices=_STATUS),
        C("CITY", "WSTRING", 40),
        C("DESCRIPTION", "STRING", 400, max_words=10),
    ]


def _w_columns() -> list[gen.ColumnDef]:
    """The key, then M's 29 other columns over and over with suffixes, cut at 100."""
    columns = [C("ID", "INT8", pk_position=1)]
    for copy in range(4):
        columns += _m_columns(f"_{copy + 1}", key=False)
    return columns[:100]


@dataclass(frozen=True)
class Profile:
    name: str
    table: gen.TableDef
    description: str

    @property
    def table_name(self) -> str:
        return self.table.name


PROFILES = {
    "S": Profile("S", gen.TableDef(SCHEMA, "S", TOPIC, tuple(_s_columns())), "8 columns"),
    "M": Profile("M", gen.TableDef(SCHEMA, "M", TOPIC, tuple(_m_columns())), "30 columns"),
    "W": Profile("W", gen.TableDef(SCHEMA, "W", TOPIC, tuple(_w_columns())), "100 columns"),
}


@dataclass
class Dataset:
    """A generated landing zone of one profile."""

    profile: Profile
    root: Path
    messages: int
    seed: int
    manifest: dict

    @property
    def data_dir(self) -> Path:
        return self.root / TOPIC

    @property
    def schema_dir(self) -> Path:
        return self.root / gen.SCHEMA_TOPIC

    @property
    def inputs(self) -> list[Path]:
        """The folders a read of this landing zone opens: the data and the schema topic."""
        return [self.data_dir, self.schema_dir]

    @property
    def data_files(self) -> list[Path]:
        return sorted(self.data_dir.glob("*.avro"))

    @property
    def data_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.data_files)

    @property
    def counts(self) -> dict[str, int]:
        return self.manifest["tables"][self.profile.table_name]["counts"]

    @property
    def schema_id(self) -> str:
        (version,) = self.manifest["tables"][self.profile.table_name]["versions"]
        return version["schema_id"]


def _fingerprint(profile: Profile, messages: int, seed: int) -> str:
    description = {
        "table": repr(profile.table),
        "messages": messages,
        "seed": seed,
        "files": FILES,
        "mix": OPERATION_MIX,
        "generator": hashlib.sha256(inspect.getsource(gen).encode()).hexdigest(),
    }
    return hashlib.sha256(json.dumps(description, sort_keys=True, default=str).encode()).hexdigest()[:16]


def dataset(profile: Profile, messages: int, seed: int, data_root: Path, log=print) -> Dataset:
    """The landing zone of ``profile`` with ``messages`` data messages, generated once and cached."""
    root = data_root / f"{profile.name}-{messages}-s{seed}"
    stamp = root / "_bench.json"
    fingerprint = _fingerprint(profile, messages, seed)
    if stamp.is_file() and json.loads(stamp.read_text()).get("fingerprint") == fingerprint:
        return Dataset(profile, root, messages, seed, json.loads((root / "_manifest.json").read_text()))
    if root.exists():
        shutil.rmtree(root)
    log(f"generating profile {profile.name}: {messages:,} messages into {root} ...")
    started = time.monotonic()
    gen.generate_landing_zone(root, messages=messages, seed=seed, tables=[profile.table], files_per_topic=FILES,
                              operation_mix=OPERATION_MIX, full_load=False, keep_messages=False,
                              value_schema="record", framing="avro", codec="null")
    seconds = time.monotonic() - started
    stamp.write_text(json.dumps({"fingerprint": fingerprint, "generation_seconds": round(seconds, 1)}) + "\n")
    log(f"  generated in {seconds:.0f} s")
    return Dataset(profile, root, messages, seed, json.loads((root / "_manifest.json").read_text()))
