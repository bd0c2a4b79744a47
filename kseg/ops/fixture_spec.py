"""The fixture spec: a short JSON document for hand-written fixtures, turned into the lines
``kseg build`` reads (dump's JSON lines contract), so that both go through one builder.

A spec names the topic and partition and the defaults of its batches, then the batches::

    {"topic": "orders", "partition": 0, "magic": 2, "codec": "gzip",
     "batches": [
       {"records": [{"key": "k1", "value": "v1", "headers": {"trace": "abc"}}, {"key": "k2", "value": null}]},
       {"producer_id": 7, "producer_epoch": 0, "transactional": true, "records": [{"key": "k3", "value": "v3"}]},
       {"control": "COMMIT", "producer_id": 7, "producer_epoch": 0, "coordinator_epoch": 0},
       {"new_segment": true, "codec": "zstd", "records": [{"value": "v4", "timestamp": 1700000009000}]}]}

Defaults: a batch's ``partition_leader_epoch`` holds for the batches after it; offsets follow each other from ``base_offset`` (0); a record's timestamp is
``start_timestamp`` (1700000000000) plus its offset (none for magic 0); a producer's batches
get consecutive sequence numbers. Keys, values and header values are UTF-8 strings, or
``key_b64``/``value_b64``/``key_hex``/``value_hex`` for other bytes. A batch may give the
fields ``kseg build`` derives (``crc``, ``size``, ``count``, ``last_offset``,
``max_timestamp``) to build a damaged fixture with ``--derived given``.
"""

from __future__ import annotations

import base64
import json
from typing import IO, Any, Iterator

from kseg.errors import InputError
from kseg.log.segment import segment_file_name

DEFAULT_START_TIMESTAMP = 1_700_000_000_000
SPEC_WHERE = "_where"  # a spec's line says where in the spec it came from, for the builder's errors
# Batch fields a spec passes on to the batch line as they are.
_BATCH_FIELDS = ("codec", "plugin_id", "timestamp_type", "partition_leader_epoch", "producer_id", "producer_epoch",
                 "base_sequence", "delete_horizon_ms", "crc", "size", "count", "last_offset", "max_timestamp")


def _bad(message: str, where: str) -> InputError:
    return InputError(message, where=where)


def _payload(out: dict, rec: dict, name: str, where: str) -> None:
    """``name`` (a UTF-8 string or null), ``name_b64`` or ``name_hex`` as dump's line has it."""
    if name + "_hex" in rec:
        try:
            raw = bytes.fromhex(rec[name + "_hex"])
        except (TypeError, ValueError):
            raise _bad(f'"{name}_hex" is not hex', where) from None
        out[name + "_b64"] = base64.b64encode(raw).decode("ascii")
    elif name + "_b64" in rec:
        out[name + "_b64"] = rec[name + "_b64"]
    else:
        v = rec.get(name)
        if v is not None and not isinstance(v, str):
            v = json.dumps(v, ensure_ascii=False, separators=(",", ":"))  # a JSON value: its text
        out[name] = v


def _integer(v: Any, name: str, where: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise _bad(f'"{name}" must be an integer, not {json.dumps(v)[:40]}', where)
    return v


def spec_lines(spec: Any) -> Iterator[dict]:
    """The batch and record lines a fixture spec describes, in dump's contract."""
    if not isinstance(spec, dict):
        raise _bad("a fixture spec is a JSON object", "spec")
    batches = spec.get("batches")
    if not isinstance(batches, list):
        raise _bad('a fixture spec needs "batches": a list', "spec")
    topic, partition = spec.get("topic"), spec.get("partition", 0)
    folder = f"{topic}-{partition}/" if topic is not None else ""
    start_ts = _integer(spec.get("start_timestamp", DEFAULT_START_TIMESTAMP), "start_timestamp", "spec")
    next_offset = _integer(spec.get("base_offset", 0), "base_offset", "spec")
    sequences: dict[tuple[int, int], int] = {}
    file = None
    epoch = spec.get("partition_leader_epoch")
    for i, b in enumerate(batches, 1):
        where = f"batch {i}"
        if not isinstance(b, dict):
            raise _bad("a batch is a JSON object", where)
        magic = _integer(b.get("magic", spec.get("magic", 2)), "magic", where)
        base = _integer(b.get("base_offset", next_offset), "base_offset", where)
        line: dict = {"type": "batch", "magic": magic, "base_offset": base, SPEC_WHERE: where}
        epoch = b.get("partition_leader_epoch", epoch)  # a new leader epoch holds until the next one
        for name in _BATCH_FIELDS:
            value = b.get(name, spec.get(name) if name in ("codec", "timestamp_type") else None)
            if value is not None:
                line[name] = value
        if epoch is not None:
            line["partition_leader_epoch"] = epoch
        if file is None or b.get("new_segment"):
            file = folder + segment_file_name(base)
        line["file"] = file
        if b.get("transactional"):
            line["is_transactional"] = True
        records: list[dict] = []
        if "control" in b:
            records = [_control(b, base, start_ts, where)]
            line.update(is_control=True, is_transactional=True, codec=b.get("codec", "none"))
        else:
            raw_records = b.get("records", [])
            if not isinstance(raw_records, list):
                raise _bad('"records" must be a list', where)
            offset = base
            for j, rec in enumerate(raw_records, 1):
                if not isinstance(rec, dict):
                    raise _bad("a record is a JSON object", f"{where}, record {j}")
                offset = _integer(rec.get("offset", offset), "offset", f"{where}, record {j}")
                out: dict = {"type": "record", "offset": offset, SPEC_WHERE: f"{where}, record {j}",
                             "timestamp": rec.get("timestamp", -1 if magic == 0 else start_ts + offset)}
                _payload(out, rec, "key", f"{where}, record {j}")
                _payload(out, rec, "value", f"{where}, record {j}")
                headers = rec.get("headers", [])
                if isinstance(headers, dict):
                    headers = [{"key": k, "value": v} for k, v in headers.items()]
                out["headers"] = headers
                records.append(out)
                offset += 1
        pid = line.get("producer_id")
        if isinstance(pid, int) and pid >= 0 and "base_sequence" not in line and not line.get("is_control"):
            pepoch = _integer(line.setdefault("producer_epoch", 0), "producer_epoch", where)
            line["base_sequence"] = sequences.get((pid, pepoch), 0)
            sequences[(pid, pepoch)] = line["base_sequence"] + len(records)
        yield line
        yield from records
        last = records[-1]["offset"] if records else base
        next_offset = max(next_offset, _integer(b.get("last_offset", last), "last_offset", where) + 1)


def _control(b: dict, offset: int, start_ts: int, where: str) -> dict:
    """A marker's record line: dump's ``control`` object, encoded by the builder."""
    kind = b["control"]
    if kind not in ("COMMIT", "ABORT"):
        raise _bad(f'"control" is COMMIT or ABORT, not {json.dumps(kind)[:40]}', where)
    return {"type": "record", "offset": offset, "timestamp": b.get("timestamp", start_ts + offset), "headers": [],
            SPEC_WHERE: f"{where}, its marker",
            "control": {"type": kind, "coordinator_epoch": b.get("coordinator_epoch", 0)}}


def input_items(stream: IO[bytes], source: str | None = None) -> Iterator[str | bytes | dict]:
    """What ``kseg build`` reads: JSON lines (a first line that is a whole batch or record
    object), else the whole input as a fixture spec."""
    first = b""
    for first in stream:
        if first.strip():
            break
    try:
        head = json.loads(first) if first.strip() else None
    except ValueError:
        head = None
    if isinstance(head, dict) and ("type" in head or "offset" in head):
        yield first
        yield from stream
        return
    text = first + stream.read()
    if not text.strip():
        return  # nothing to build: the builder says so
    try:
        spec = json.loads(text)
    except ValueError as e:
        raise InputError(f"neither JSON lines nor a fixture spec (JSON): {e}", file=source) from None
    try:
        yield from spec_lines(spec)
    except InputError as e:
        raise e.located(file=source)


__all__ = ["DEFAULT_START_TIMESTAMP", "SPEC_WHERE", "input_items", "spec_lines"]
