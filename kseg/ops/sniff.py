"""What a file is, by its name and, when the name does not say, by its first bytes.

Kafka 0.8+ segments start with an entry header (an offset, a size, magic 0-2 at
byte 16); pre-0.8 (Kafka 0.7) files with a message (size, magic 0-1 at byte 4, a
CRC over the payload that matches). The two never read as each other: a 0.8+
entry's first four bytes, the high half of a small offset, are a 0.7 size of 0.
"""

from __future__ import annotations

from pathlib import Path

from kseg.errors import InputError
from kseg.layouts import LOG_ENTRY_PREFIX
from kseg.lazy import load
from kseg.log.listing import (
    BOOTSTRAP_FILE,
    KAFKA07_SUFFIXES,
    LOG_DIR_TEXT_FILES,
    LOG_SUFFIX,
    READ_BY_NAME,
    READ_BY_SUFFIX,
    bare_name,
)
from kseg.log.segment import is_stream
from kseg.storage import cannot_read, open_input

KAFKA = "kafka"
KAFKA07 = "kafka07"
HEAD_BYTES = 1 << 16
MIN_LEGACY_ENTRY = 14  # crc, magic, attributes, key and value lengths
SCAN_KAFKA07 = "kseg.kafka07.read:scan_kafka07"  # the 0.7 reader, loaded when content decides
OTHER_KAFKA_NAMES = (*LOG_DIR_TEXT_FILES, BOOTSTRAP_FILE)


def name_format(path: Path) -> str | None:
    """What the name says: "kafka" (a broker file name), "kafka07" (``*.kafka``) or None."""
    name = bare_name(path.name)
    suffix = Path(name).suffix
    if suffix in KAFKA07_SUFFIXES:
        return KAFKA07
    if suffix in READ_BY_SUFFIX or name in READ_BY_NAME or name in OTHER_KAFKA_NAMES:
        return KAFKA
    return None


def head_of(path: Path, n: int = HEAD_BYTES) -> bytes | None:
    """The first bytes of a regular file (None for streams, which cannot be read twice)."""
    if is_stream(path):
        return None
    try:
        with open_input(path) as f:
            return f.read(n)
    except OSError as e:
        raise cannot_read(path, e) from None


def content_format(head: bytes) -> str | None:
    """What the first bytes say: "kafka07" (a whole first 0.7 message with a good CRC),
    "kafka" (a plausible 0.8+ entry header: size and magic), or None (neither, or too short to tell)."""
    messages, _, _ = load(SCAN_KAFKA07)(head[:HEAD_BYTES])
    if messages and messages[0].crc_valid:
        return KAFKA07
    if len(head) >= 17:
        _, size, _, magic = LOG_ENTRY_PREFIX.struct.unpack_from(head, 0)
        if size >= MIN_LEGACY_ENTRY and magic in (0, 1, 2):
            return KAFKA
    return None


def input_format_of(path: Path, given: str | None = None) -> str:
    """The format to read a log-like file in: ``given`` (``--input-format``) if any, else the
    name's, else the content's. A file whose name and first bytes match no Kafka file
    kind is unusable input (a README passed by mistake), not a data problem."""
    if given is not None:
        return given
    by_name = name_format(path)
    if by_name is not None:
        return by_name
    head = head_of(path)
    if head is None or len(head) < 17:
        return KAFKA  # a stream, or too short to tell: read it and report what is there
    by_content = content_format(head)
    if by_content is None:
        raise InputError("not a Kafka file: its name and first bytes match no Kafka file kind", file=str(path))
    return by_content


def format_hint(path: Path, read_as: str) -> str | None:
    """When a file read as ``read_as`` looks like the other format: the option that reads it."""
    head = head_of(path)
    if not head:
        return None
    found = content_format(head)
    if found == KAFKA07 and read_as == KAFKA:
        return "this looks like the pre-0.8 (Kafka 0.7) format: read it with --input-format kafka07"
    if found == KAFKA and read_as == KAFKA07:
        return "this looks like the Kafka 0.8+ format: read it with --input-format kafka (the default)"
    return None


def is_kafka07_folder(folder: Path) -> bool:
    """A 0.7 partition folder: ``*.kafka`` files and no ``.log``."""
    names = [c for c in folder.iterdir() if c.is_file()]
    return any(c.suffix in KAFKA07_SUFFIXES for c in names) and not any(c.suffix == LOG_SUFFIX for c in names)


def conversion_input_format(src: Path, given: str | None) -> str:
    """``up-convert``'s input format: ``given``, else kafka07 for a ``*.kafka`` file or a 0.7
    partition folder, else kafka."""
    if given is not None:
        return given
    if src.suffix in KAFKA07_SUFFIXES or (src.is_dir() and is_kafka07_folder(src)):
        return KAFKA07
    return KAFKA
