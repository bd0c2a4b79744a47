"""One error root for everything kseg reports about data or input.

Rules: decoders raise with what they know (a byte position inside the buffer
they were given, expected vs found); the layer that knows the file adds it
with ``located``. The CLI turns ``DataError`` into exit 1 and ``InputError``
into exit 2; any other exception is a bug in kseg.
"""

from __future__ import annotations

from typing import Any

from kseg.printable import printable


class KsegError(Exception):
    """Base of every error kseg raises on purpose."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        position: int | None = None,
        where: str | None = None,
        expected: Any = None,
        found: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.position = position
        self.where = where
        self.expected = expected
        self.found = found

    def located(
        self, *, file: str | None = None, position: int | None = None, where: str | None = None
    ) -> "KsegError":
        """Fill in the context an outer layer knows; keeps what is already set."""
        if self.file is None and file is not None:
            self.file = file
        if self.position is None and position is not None:
            self.position = position
        if self.where is None and where is not None:
            self.where = where
        return self

    def shift(self, base: int) -> "KsegError":
        """Turn a position relative to a sub-buffer into one relative to its parent."""
        if self.position is not None:
            self.position += base
        return self

    def __str__(self) -> str:
        loc = []
        if self.position is not None:
            loc.append(f"at byte {self.position}")
        if self.where:
            loc.append(f"({self.where})")
        head = ": ".join(x for x in (printable(self.file) if self.file else None, " ".join(loc)) if x)
        text = self.message
        text += expected_found(self.expected, self.found)
        return f"{head}: {text}" if head else text


def _show(value: Any) -> str:
    return value if isinstance(value, str) else repr(value)


def expected_found(expected: Any, found: Any) -> str:
    """``: expected X, found Y`` with only the parts that are known."""
    parts = []
    if expected is not None:
        parts.append(f"expected {_show(expected)}")
    if found is not None:
        parts.append(f"found {_show(found)}")
    return ": " + ", ".join(parts) if parts else ""


class DataError(KsegError):
    """The bytes are not what the format allows (exit code 1)."""


class TruncatedError(DataError):
    """The input ends inside an entry: normal after a broker crash, not corruption."""


class CorruptBatchError(DataError):
    """A batch or message violates the format (bad length, magic, structure)."""


class CrcMismatchError(CorruptBatchError):
    """A stored CRC does not match the bytes it covers."""


class VarintError(CorruptBatchError):
    """A v2 varint is cut short or longer than the format allows."""


class UnsupportedCodecError(DataError):
    """A codec id or plugin that kseg cannot decode (or the magic cannot carry)."""


class DecompressionError(DataError):
    """A compressed payload does not decode."""


class DecompressionLimitError(DecompressionError):
    """A payload inflates past the configured limit (a decompression bomb)."""


class IndexFileError(DataError):
    """A companion file (.index, .timeindex, .txnindex, .snapshot) is malformed or disagrees with its log."""


class OlderToolStopsError(DataError):
    """A record an older release's kafka-dump-log.sh cannot decode and stops at (exit 1, as its
    tool's exception does): its kafka lines end where that tool's output ended."""


class InputError(KsegError):
    """The input cannot be used at all: missing file, wrong kind, bad option (exit code 2)."""


class OffsetsGoBackError(InputError):
    """Batches whose offsets go back where a segment's indexes need them to grow (Kafka's
    ``OffsetIndex.append`` and ``TimeIndex.maybeAppend`` throw ``InvalidOffsetException``): no
    index can be built; the broker's recovery empties such a segment (``kseg repair`` too)."""


class UnconvertibleError(InputError):
    """Sound data the target format cannot hold (zstd in a v0/v1 message, an offset past
    2^63-1): a usage error for the partition it is in, which a writer's
    ``--skip-unconvertible`` leaves out of a log directory's output (``kseg.ops.skips``)."""


class OutputError(InputError):
    """An output path is refused (exists, equals an input) or cannot be written."""
