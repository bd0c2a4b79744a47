"""``kseg dump --input-format kafka07``: pre-0.8 messages as text, JSON lines or kafka-dump-log.sh lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TextIO

from kseg.errors import TruncatedError
from kseg.kafka07.read import inner_payloads, read_kafka07
from kseg.printable import printable as safe
from kseg.render.payload import printable


def dump_kafka07(files: list[Path], out: TextIO, *, fmt: str, deep: bool, key_decoder: Any,
                 value_decoder: Any) -> None:
    for path in files:
        messages, err = read_kafka07(path)
        if fmt == "jsonl":
            for m in messages:
                out.write(json.dumps({"type": "message", "file": str(path), "position": m.position,
                                      "size": m.size, "magic": m.magic, "codec": m.codec_name,
                                      "crc": m.crc, "crc_valid": m.crc_valid}) + "\n")
                if deep:
                    for i, p in enumerate(inner_payloads(m)):
                        out.write(json.dumps({"type": "record", "offset": m.position, "index": i,
                                              "value": value_decoder(p) if value_decoder else None}) + "\n")
        else:
            out.write(f"Dumping {safe(path)}\n" if fmt == "kafka" else f"== {safe(path)} (kafka07)\n")
            for m in messages:
                out.write(f"offset: {m.position} size: {m.size} magic: {m.magic} compresscodec: {m.codec_name} "
                          f"crc: {m.crc} isvalid: {'true' if m.crc_valid else 'false'}\n")
                if deep:
                    for p in inner_payloads(m):
                        shown = "" if value_decoder is None else f" payload: {printable(str(value_decoder(p)))}"
                        out.write(f"| offset: {m.position} payloadSize: {len(p)}{shown}\n")
        if err is not None:
            out.write(f"Found {len(Path(path).read_bytes()) - (err.position or 0)} invalid bytes at the end of "
                      f"{safe(Path(path).name)}\n" if isinstance(err, TruncatedError) else "")
            if not isinstance(err, TruncatedError):
                raise err


