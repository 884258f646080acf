"""The real Replicate samples (tests/data/reference, see NOTICE) through the connector.

The samples are in JSON message format; here they are encoded exactly as Replicate's Avro
message format would carry them: each payload with its own embedded schema (the MD with its
``messageSchema``, the DT with the ``dataSchema`` its MD announces for its ``messageSchemaId``),
wrapped in a binary envelope, landed, and read back.
"""

from __future__ import annotations

import io
import json
from datetime import date

import fastavro
import pytest

from conftest import (BEFORE_IMAGE, DATA_DIR, HEADER_COLUMNS, MASK_COLUMNS, assert_same_rows, collect_plain,
                      raises_replicate, read_metrics)
from spark_replicate.generate import ENVELOPE_SCHEMA

REFERENCE = DATA_DIR / "reference"
SCHEMA_ID = "8FB9D3C10EA4B25751DF9CC8318F0A02"

# The one row of the sample, as the README's "Output columns" and "Types" say it must come out: its DATE columns arrive as
# text (Replicate's logical data types off) and are typed by the metadata's source types.
EXPECTED_ROW = {
    "emp_no": 14472, "salary": 49592, "from_date": date(1993, 11, 25), "to_date": date(1994, 11, 25),
    "header__schema_id": SCHEMA_ID, "header__table_version": 1, "header__operation": "REFRESH",
    "header__change_seq": None, "header__timestamp": None, "header__stream_position": None,
    "header__transaction_id": None, "header__transaction_event_counter": None,
    "header__transaction_last_event": None, "header__external_schema_id": None,
    "header__change_mask": None, "header__column_mask": None,
    "header__changed_columns": None, "header__present_columns": None,
    BEFORE_IMAGE: None,
}


def load_sample(name: str) -> dict:
    return json.loads((REFERENCE / f"attunity-json-converter_{name}.json").read_text(encoding="utf-8"))


def avro_binary(schema: dict, datum) -> bytes:
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(schema), datum)
    return buffer.getvalue()


def envelope(sample: dict, payload: bytes) -> bytes:
    """The sample's envelope fields as they are, with the payload as Avro binary."""
    return avro_binary(ENVELOPE_SCHEMA, {
        "magic": sample["magic"].encode("ascii"), "type": sample["type"], "headers": sample["headers"],
        "messageSchemaId": sample["messageSchemaId"], "messageSchema": sample["messageSchema"],
        "message": payload})


@pytest.fixture(scope="module")
def envelopes() -> dict[str, bytes]:
    metadata, data = load_sample("Metadata"), load_sample("Data")
    md_payload = avro_binary(json.loads(metadata["messageSchema"]), metadata["message"])
    # DT carries no messageSchema: its schema is the dataSchema of the MD with the same id.
    assert data["messageSchema"] is None and data["messageSchemaId"] == metadata["message"]["schemaId"]
    dt_payload = avro_binary(json.loads(metadata["message"]["dataSchema"]), data["message"])
    return {"MD": envelope(metadata, md_payload), "DT": envelope(data, dt_payload)}


def test_the_binary_envelopes_have_the_documented_layout(envelopes):
    """Magic, type, null headers, schema id: the layout of the reference README."""
    dt = envelopes["DT"]
    assert dt.startswith(bytes.fromhex("61744d5347") + b"\x04DT\x00\x02\x40" + SCHEMA_ID.encode() + b"\x00")
    assert envelopes["MD"].startswith(b"atMSG\x04MD\x00\x02\x40" + SCHEMA_ID.encode() + b"\x02")


def land_as_messages(root, envelopes):
    (root / "_schema").mkdir()
    (root / "salaries").mkdir()
    (root / "_schema" / "md.msg").write_bytes(envelopes["MD"])
    (root / "salaries" / "dt.msg").write_bytes(envelopes["DT"])
    return {"schemaTopic": str(root / "_schema")}, root / "salaries"


def land_length_prefixed_together(root, envelopes):
    frames = b"".join(len(e).to_bytes(4, "big") + e for e in (envelopes["MD"], envelopes["DT"]))
    (root / "topic.bin").write_bytes(frames)
    return {}, root / "topic.bin"


def land_in_a_bytes_container(root, envelopes):
    with open(root / "topic.avro", "wb") as stream:
        fastavro.writer(stream, "bytes", [envelopes["MD"], envelopes["DT"]])
    return {}, root / "topic.avro"


LANDINGS = {
    "message files with a schema topic": land_as_messages,
    "one length-prefixed file, metadata among the data": land_length_prefixed_together,
    "an avro container of bytes, metadata among the data": land_in_a_bytes_container,
}


@pytest.mark.parametrize("landing", LANDINGS)
def test_the_real_sample_reads_back_exactly(spark, tmp_path, envelopes, landing):
    options, path = LANDINGS[landing](tmp_path, envelopes)
    reader = spark.read.format("replicate")
    for name, value in options.items():
        reader = reader.option(name, value)
    df = reader.load(str(path))
    assert df.columns == ["emp_no", "salary", "from_date", "to_date"] + HEADER_COLUMNS + MASK_COLUMNS + [BEFORE_IMAGE]
    assert [f.dataType.simpleString() for f in df.schema.fields[:4]] == ["int", "int", "date", "date"]
    assert_same_rows(collect_plain(df), [EXPECTED_ROW])


def test_the_sample_table_is_selected_by_its_lineage_name(spark, tmp_path, envelopes):
    options, path = land_as_messages(tmp_path, envelopes)
    df = (spark.read.format("replicate").option("schemaTopic", options["schemaTopic"])
          .option("table", "employees.salaries").load(str(path)))
    assert_same_rows(collect_plain(df), [EXPECTED_ROW])
    with raises_replicate("REPLICATE_TABLE_NOT_FOUND", "employees.salary", "employees.salaries"):
        (spark.read.format("replicate").option("schemaTopic", options["schemaTopic"])
         .option("table", "employees.salary").load(str(path)))


# The metadata view of the real sample: every column, as the sample's MD message has it.
SAMPLE_COLUMNS = [
    {"name": "emp_no", "ordinal": 1, "type": "INT4", "length": 10, "precision": 0, "scale": 0,
     "primary_key_position": 1, "nullable": False},
    {"name": "salary", "ordinal": 2, "type": "INT4", "length": 10, "precision": 0, "scale": 0,
     "primary_key_position": 0, "nullable": False},
    {"name": "from_date", "ordinal": 3, "type": "DATE", "length": 0, "precision": 0, "scale": 0,
     "primary_key_position": 2, "nullable": False},
    {"name": "to_date", "ordinal": 4, "type": "DATE", "length": 0, "precision": 0, "scale": 0,
     "primary_key_position": 0, "nullable": False},
]


@pytest.mark.parametrize("landing", LANDINGS)
def test_the_metadata_view_of_the_real_sample(spark, tmp_path, envelopes, landing):
    options, path = LANDINGS[landing](tmp_path, envelopes)
    # The view reads the loaded paths: the schema topic itself, or the topic carrying MD among DT.
    metadata_path = options.get("schemaTopic", str(path))
    df = spark.read.format("replicate").option("messages", "metadata").load(metadata_path)
    assert [f"{f.name}:{f.dataType.simpleString()}" for f in df.schema.fields] == [
        "schema_id:string", "schema_name:string", "table_name:string", "table_version:bigint", "server:string",
        "task:string", "timestamp:string",
        "columns:array<struct<name:string,ordinal:int,type:string,length:int,precision:int,scale:int,"
        "primary_key_position:int,nullable:boolean>>",
        "primary_key:array<string>", "data_schema:string"]
    sample = load_sample("Metadata")["message"]
    assert collect_plain(df) == [{
        "schema_id": SCHEMA_ID, "schema_name": "employees", "table_name": "salaries", "table_version": 1,
        "server": "attunity-01.custenborder.com", "task": "mysql-to-kafka",
        "timestamp": "2018-04-13T20:13:58.289",  # as sent: not Replicate's header timestamp form
        "columns": SAMPLE_COLUMNS, "primary_key": ["emp_no", "from_date"], "data_schema": sample["dataSchema"]}]
    metrics = read_metrics(spark)
    assert (metrics["rowsReturned"], metrics["metadataMessages"]) == (1, 0)
    assert metrics["filteredOut"] == (0 if "schemaTopic" in options else 1)  # the DT message
