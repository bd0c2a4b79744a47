"""The pre-0.8 (Kafka 0.7) message format: read it and turn it into records.

A reader must be told a file is in this format (it cannot be detected
reliably). Offsets there are byte positions; ``logical_records`` assigns
logical offsets from a base the user gives, for up-conversion.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from kseg.codecs import DEFAULT_MAX_DECOMPRESSED_BYTES, get_codec
from kseg.errors import CorruptBatchError, InputError, KsegError, TruncatedError
from kseg.facts.kafka07 import PAYLOAD_START, SIZE_FIELD
from kseg.formats.attributes import CODEC_NAMES, KAFKA07_CODEC_MASK
from kseg.layouts import KAFKA07_HEADER
from kseg.model import Record

_HDR = KAFKA07_HEADER.struct
MAX_NESTING = 4


@dataclass(frozen=True)
class Kafka07Message:
    position: int  # byte position: the message's offset in 0.7 terms
    size: int  # total bytes including the 4-byte size field
    magic: int
    attributes: int
    crc: int
    payload: bytes

    @property
    def codec(self) -> int:
        return self.attributes & KAFKA07_CODEC_MASK

    @property
    def codec_name(self) -> str:
        return CODEC_NAMES.get(self.codec, f"unknown({self.codec})")

    @property
    def crc_valid(self) -> bool:
        return zlib.crc32(self.payload) == self.crc


def scan_kafka07(buf: bytes, base: int = 0) -> tuple[list[Kafka07Message], KsegError | None, int]:
    """Split bytes into 0.7 messages: (messages, what stopped the walk, bytes consumed)."""
    out: list[Kafka07Message] = []
    pos = 0
    end = len(buf)
    while pos < end:
        if end - pos < SIZE_FIELD + 1:
            return out, TruncatedError("truncated message header", position=base + pos,
                                       expected=f"at least {SIZE_FIELD + 1} bytes", found=f"{end - pos} bytes"), pos
        size, magic = _HDR.unpack_from(buf, pos)
        header = PAYLOAD_START.get(magic)
        if header is None:
            return out, CorruptBatchError("unknown magic", position=base + pos + SIZE_FIELD, expected="0 or 1",
                                          found=magic), pos
        if size < header:
            return out, CorruptBatchError("size field too small", position=base + pos, expected=f">= {header}",
                                          found=size), pos
        if pos + SIZE_FIELD + size > end:
            return out, TruncatedError("message runs past the end of the data", position=base + pos,
                                       expected=f"{size + SIZE_FIELD} bytes", found=f"{end - pos} bytes"), pos
        attrs = buf[pos + SIZE_FIELD + 1] if magic == 1 else 0  # the byte after magic
        crc_pos = pos + SIZE_FIELD + header - 4
        crc = int.from_bytes(buf[crc_pos:crc_pos + 4], "big")
        payload = bytes(buf[crc_pos + 4: pos + SIZE_FIELD + size])
        out.append(Kafka07Message(base + pos, size + SIZE_FIELD, magic, attrs, crc, payload))
        pos += SIZE_FIELD + size
    return out, None, pos


def inner_payloads(msg: Kafka07Message, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
                   depth: int = 0) -> list[bytes]:
    """The application payloads a message carries (recursing into compressed ones)."""
    if msg.codec == 0:
        return [msg.payload]
    if depth >= MAX_NESTING:
        raise CorruptBatchError("compressed messages nested too deeply", position=msg.position)
    try:
        inner = get_codec(msg.codec).decompress(msg.payload, magic=0, limit=limit)
    except KsegError as e:
        e.position = None
        raise e.located(position=msg.position, where=f"{msg.codec_name} payload")
    messages, err, _ = scan_kafka07(inner)
    if err is not None:
        err.where = f"byte {err.position} of the decompressed payload"
        err.position = msg.position
        raise err
    out: list[bytes] = []
    for m in messages:
        if not m.crc_valid:
            raise CorruptBatchError("inner message crc mismatch", position=msg.position,
                                    expected=f"{zlib.crc32(m.payload):#010x}", found=f"{m.crc:#010x}")
        out.extend(inner_payloads(m, limit, depth + 1))
    return out


def read_kafka07(path: Path) -> tuple[list[Kafka07Message], KsegError | None]:
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", file=str(path)) from None
    messages, err, _ = scan_kafka07(data)
    if err is not None:
        err.located(file=str(path))
    return messages, err


def logical_records(paths: Iterable[Path], base_offset: int = 0,
                    limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> Iterator[tuple[Kafka07Message, list[Record]]]:
    """Each top-level message with its payloads as records, offsets assigned from ``base_offset``."""
    offset = base_offset
    for path in paths:
        messages, err = read_kafka07(path)
        for m in messages:
            recs = []
            for payload in inner_payloads(m, limit):
                recs.append(Record(offset, -1, None, payload, (), -1, 0, 0, None))
                offset += 1
            yield m, recs
        if err is not None:
            raise err
