"""Numbers and values as people read them in text output; ``--format json`` keeps the exact ones.

Rules: text output never shows a Python repr. An absent value is ``null`` (as ``dump`` prints
it), text from the data is escaped (``kseg.printable``), durations read as ``1d 02:30:28``,
sizes as ``12.3 MB`` (powers of 1000, as ``ls -h --si`` and Kafka's configs count), rates with
at most one decimal and no exponent.
"""

from __future__ import annotations

from kseg.printable import printable

__all__ = ["duration", "rate", "size", "value"]

_UNITS = ("B", "kB", "MB", "GB", "TB", "PB", "EB")


def value(v: object) -> str:
    """A scalar from the data: ``null`` for none, ``true``/``false``, text escaped."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    return printable(v)


def size(n: int | None) -> str:
    """Bytes as ``419 B``, ``12.3 MB``: three significant figures from a kilobyte up."""
    if n is None:
        return "null"
    if abs(n) < 1000:
        return f"{n} B"
    x, unit = float(n), 0
    while abs(x) >= 999.95 and unit < len(_UNITS) - 1:
        x, unit = x / 1000, unit + 1
    return f"{x:.1f} {_UNITS[unit]}" if abs(x) < 100 else f"{x:.0f} {_UNITS[unit]}"


def duration(ms: int | float | None) -> str:
    """Milliseconds as ``250 ms`` below a second, ``00:01:05`` below a day, ``3d 02:30:28`` above."""
    if ms is None:
        return "null"
    if ms < 0:
        return "-" + duration(-ms)
    if ms < 1000:
        return f"{ms:g} ms" if isinstance(ms, float) else f"{ms} ms"
    secs = int(ms // 1000)
    days, rest = divmod(secs, 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    clock = f"{h:02d}:{m:02d}:{s:02d}"
    return f"{days}d {clock}" if days else clock


def rate(x: float | None) -> str:
    """A rate without an exponent: ``1170``, ``12.5``, ``0.0001``."""
    if x is None:
        return "null"
    if x >= 100:
        return f"{x:,.0f}"
    if x >= 0.1:
        return f"{x:.1f}"
    return f"{x:.2g}" if x >= 1e-4 else f"{x:.6f}".rstrip("0").rstrip(".") or "0"
