"""``kseg dump --input-format kafka07``: pre-0.8 messages as text, JSON lines or kafka-dump-log.sh lines."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TextIO

from kseg.errors import TruncatedError
from kseg.kafka07.read import inner_payloads, read_kafka07
from kseg.printable import printable as safe
from kseg.render.jsonout import dumps
from kseg.render.payload import printable
from kseg.render.values import payload_kafka, put_payload


def dump_kafka07(files: list[Path], out: TextIO, *, fmt: str, deep: bool, key_decoder: Any,
                 value_decoder: Any) -> None:
    for path in files:
        messages, err = read_kafka07(path)
        if fmt == "jsonl":
            for m in messages:
                out.write(dumps({"type": "message", "file": str(path), "position": m.position,
                                      "size": m.size, "magic": m.magic, "codec": m.codec_name,
                                      "crc": m.crc, "crc_valid": m.crc_valid}) + "\n")
                if deep:
                    for i, p in enumerate(inner_payloads(m)):
                        doc = {"type": "record", "offset": m.position, "index": i}
                        put_payload(doc, "value", p, value_decoder)
                        out.write(dumps(doc) + "\n")
        else:
            out.write(f"Dumping {safe(path)}\n" if fmt == "kafka" else f"== {safe(path)} (kafka07)\n")
            for m in messages:
                out.write(f"offset: {m.position} size: {m.size} magic: {m.magic} compresscodec: {m.codec_name} "
                          f"crc: {m.crc} isvalid: {'true' if m.crc_valid else 'false'}\n")
                if deep:
                    for p in inner_payloads(m):
                        shown = "" if value_decoder is None else f" payload: {printable(payload_kafka(p, value_decoder))}"
                        out.write(f"| offset: {m.position} payloadSize: {len(p)}{shown}\n")
        if err is not None:
            out.write(f"Found {len(Path(path).read_bytes()) - (err.position or 0)} invalid bytes at the end of "
                      f"{safe(Path(path).name)}\n" if isinstance(err, TruncatedError) else "")
            if not isinstance(err, TruncatedError):
                raise err


