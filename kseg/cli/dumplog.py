"""``kseg-dump-log``: kafka-dump-log.sh's own command line in front of ``kseg dump --format kafka``.

A runbook written for ``kafka-dump-log.sh --files a,b --deep-iteration ...`` switches by
changing the command's name. Only the command line lives here: options are read the way
DumpLogSegments' joptsimple parser reads them (``--files a,b`` and ``--files=a,b``, a single
dash too, no abbreviations, non-option words ignored, ``--`` ends the options), and the files
go through the same operation and renderer as ``kseg dump --format kafka`` (``make_renderer``,
``dump_options_for``, ``dump_paths``).

Rules: stdout is DumpLogSegments' bytes; exit codes are its own (help and usage errors 1, a
file it could not read 1 after what it printed up to there). Where it would print a Java stack
trace, kseg prints one line, ``kseg-dump-log: error: ...``. kseg's own additions: ``--kafka-version
LINE`` (a release line of ``kseg.kafka_releases``, or ``KSEG_KAFKA_VERSION``) chooses whose bytes,
default 4, and so which options, decoder classes and file names the tool takes; a decoder class kseg cannot
run (anything but Kafka's own) is exit 2. Checks that DumpLogSegments makes only when it reaches
a file (a decoder class, ``--max-bytes``, ``--max-message-size``) are made at the same file here.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any, Sequence, TextIO

from kseg.allocator import tune_for_chunks
from kseg.cli.common import interrupted
from kseg.cli.dump import dump_options_for, make_renderer, prepare_dump
from kseg.cli.exits import EXIT_DATA, EXIT_USAGE
from kseg.cli.loading import ignore_interrupts
from kseg.kafka_releases import KAFKA_VERSIONS, NEWEST_ALIAS, kafka_release
from kseg.errors import KsegError
from kseg.interrupts import catching_signals
from kseg.log.listing import (
    BOOTSTRAP_FILE,
    CHECKPOINT_SUFFIX,
    DUMP_LOG_SUFFIXES,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    PRODUCER_SNAPSHOT_SUFFIX,
)
from kseg.ops.dump import BadBatchEvent, FileStart, SkippedEvent, dump_paths
from kseg.printable import printable
from kseg.render.dump import ChunkedWriter

PROG = "kseg-dump-log"
ENV_KAFKA_VERSION = "KSEG_KAFKA_VERSION"
INT_MAX = 2**31 - 1
SNAPSHOT_NAME = re.compile(r"[0-9]{20}-[0-9]{10}\.checkpoint")  # a KRaft snapshot: end offset, epoch


@dataclass(frozen=True)
class Opt:
    """One option of DumpLogSegments' parser: its argument (none, required, optional), the
    argument's type and name in the help, its default, and the releases that have it."""

    name: str
    help: str
    arg: str | None = None  # None, "required" or "optional"
    type: str = "String"
    shown_as: str = ""
    default: str | None = None
    since: str = "0"  # the first --kafka-version whose tool has it


_DECODER_HELP = ("Decode each {what} with this class: Kafka's own StringDecoder, LongDecoder, IntegerDecoder "
                 "or DefaultDecoder of org.apache.kafka.tools.api (of kafka.serializer with --kafka-version "
                 "2.8 and 3.6, either with 3.9); kseg runs no other class.")

#: DumpLogSegments' options (every release line's: ``since``), in its help's order; the descriptions are kseg's
OPTIONS: tuple[Opt, ...] = (
    Opt("cluster-metadata-decoder", "Decode records as KRaft cluster metadata records."),
    Opt("deep-iteration", "Show every record, not only batches. Implied by --print-data-log."),
    Opt("files", "REQUIRED: the files to dump, separated by commas.", "required", shown_as="file1, file2, ..."),
    Opt("help", "Show this help."),
    Opt("index-sanity-check", "For .index and .timeindex files, print the broker's start-up sanity verdict "
                              "instead of the entries."),
    Opt("kafka-version", "kseg's own: whose kafka-dump-log.sh bytes to print (a release line, e.g. 3.9 for "
                         f"Kafka 3.9's; 4: the newest 4.x) [env: {ENV_KAFKA_VERSION}].", "required",
        shown_as="|".join(KAFKA_VERSIONS),
        default=KAFKA_VERSIONS[0]),
    Opt("key-decoder-class", _DECODER_HELP.format(what="key"), "optional",
        default="org.apache.kafka.tools.api.StringDecoder"),
    Opt("max-bytes", "Read at most this many bytes of each .log file.", "required", "Integer", "size",
        str(INT_MAX), since="3.0"),
    Opt("max-message-size", "Largest message size: how far past an index entry's position a batch is read.",
        "required", "Integer",
        "size", str(5 * 1024 * 1024)),
    Opt("offsets-decoder", "Decode records as __consumer_offsets records."),
    Opt("print-data-log", "Show keys and values. Implied by any decoder option."),
    Opt("remote-log-metadata-decoder", "Decode records as __remote_log_metadata records.", since="3.7"),
    Opt("share-group-state-decoder", "Decode records as __share_group_state records.", since="4.0"),
    Opt("skip-record-metadata", "Show record contents without their offset and size part."),
    Opt("transaction-log-decoder", "Decode records as __transaction_state records."),
    Opt("value-decoder-class", _DECODER_HELP.format(what="value"), "optional",
        default="org.apache.kafka.tools.api.StringDecoder"),
    Opt("verify-index-only", "For .index and .timeindex files, check them against the log without printing "
                             "the entries."),
    Opt("version", "Show the Kafka release whose output this prints."),
)

#: DumpLogSegments' decoder flags -> kseg's --decode family, in the order it picks the first given
DECODER_FLAGS = {
    "offsets-decoder": "offsets",
    "transaction-log-decoder": "transactions",
    "cluster-metadata-decoder": "metadata",
    "remote-log-metadata-decoder": "remote-log-metadata",
    "share-group-state-decoder": "share-group-state",
}

_API = "org.apache.kafka.tools.api."
#: Kafka's own decoder classes (in a release's ``decoder_class_package``) -> kseg's payload decoder
#: (kseg.render.payload.BUILTIN). DefaultDecoder gives a byte[], which Kafka prints as an object id
#: (``[B@1b6d3586``): kseg shows the bytes in hex.
DECODERS = {"StringDecoder": "java-string", "LongDecoder": "long", "IntegerDecoder": "int", "DefaultDecoder": "hex"}
#: the newest releases' classes
DECODER_CLASSES = {_API + name: kseg for name, kseg in DECODERS.items()}
#: kafka.serializer's classes (Kafka 3.6 and before; 3.9 swaps them for the new ones, saying so on stdout
#: each time it loads one; Kafka 4 no longer has them) -> the new ones
DEPRECATED_DECODER_CLASSES = {f"kafka.serializer.{n}": _API + n for n in DECODERS}


class ToolError(Exception):
    """Where DumpLogSegments stops (with a Java exception): one line and its exit code."""

    def __init__(self, message: str, code: int = EXIT_DATA):
        super().__init__(message)
        self.code = code


@dataclass
class Parsed:
    """What the parser found: each option given with its values (None for an option given
    without one), in order."""

    given: dict[str, list[str | None]] = field(default_factory=dict)
    defaults: dict[str, str | None] = field(default_factory=dict)  # the release's (``options_of``)

    def has(self, name: str) -> bool:
        return name in self.given

    def value(self, name: str) -> str | None:
        """The option's one value, else its default; given twice: DumpLogSegments' error."""
        values = [v for v in self.given.get(name, []) if v is not None]
        if len(values) > 1:
            raise ToolError(f"--{name} was given {len(values)} values; it takes one")
        return values[0] if values else self.defaults.get(name, _OPTS[name].default)


_OPTS = {o.name: o for o in OPTIONS}


def options_of(release: str) -> dict[str, Opt]:
    """The options the ``release``'s parser accepts, with its defaults (its own StringDecoder class)."""
    string_decoder = kafka_release(release).decoder_class_package + "StringDecoder"
    return {o.name: replace(o, default=string_decoder) if o.name.endswith("-decoder-class") else o
            for o in OPTIONS if _version(o.since) <= _version(release)}


def _version(v: str) -> tuple[int, ...]:
    v = kafka_release(v).line if v == NEWEST_ALIAS else v
    return tuple(int(part) for part in v.split("."))


def parse(args: Sequence[str], release: str) -> Parsed:
    """``args`` as joptsimple reads them for DumpLogSegments: long options with one or two dashes,
    ``=value`` or the next word (taken whatever it is) for a required argument, the next word
    for an optional one unless it looks like an option; no abbreviations; other words ignored."""
    known = options_of(release)
    parsed = Parsed(defaults={name: o.default for name, o in known.items()})
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if token == "--":
            break
        if not token.startswith("-") or token == "-":
            continue  # a non-option word: DumpLogSegments ignores it
        body = token[2:] if token.startswith("--") else token[1:]
        name, eq, inline = body.partition("=")
        opt = known.get(name)
        if opt is None:
            bad = name if token.startswith("--") else next((c for c in body if c not in known), body[:1])
            raise ToolError(f"{bad!r} is not an option of kafka-dump-log.sh")
        value: str | None = None
        if eq:
            if opt.arg is None:
                raise ToolError(f"--{name} takes no argument")
            value = inline
        elif opt.arg == "required":
            if i >= len(args):
                raise ToolError(f"--{name} needs an argument")
            value = args[i]
            i += 1
        elif opt.arg == "optional" and i < len(args) and not _looks_like_option(args[i]):
            value = args[i]
            i += 1
        parsed.given.setdefault(name, []).append(value)
    return parsed


def _looks_like_option(word: str) -> bool:
    return word.startswith("-") and word not in ("-", "--")


def java_split(text: str) -> list[str]:
    """``text.split(",")`` in Java: empty strings at the end dropped (``","`` gives none, ``""`` one)."""
    parts = text.split(",")
    if len(parts) == 1:
        return parts
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def java_int(text: str, name: str) -> int:
    """``Integer.valueOf``: an optional sign and decimal digits within 32 bits, nothing else."""
    digits = text[1:] if text[:1] in "+-" else text
    if digits.isascii() and digits.isdigit():
        n = int(text)
        if -(2**31) <= n <= INT_MAX:
            return n
    raise ToolError(f"--{name}: {text!r} is not a 32-bit integer")


def java_long_head(name: str) -> int | None:
    """The offset DumpLogSegments reads from a file name (``Long.parseLong`` of what is before the
    first dot), None where it fails."""
    head = name.split(".", 1)[0]
    digits = head[1:] if head[:1] in "+-" else head
    if digits.isascii() and digits.isdigit():
        n = int(head)
        if -(2**63) <= n < 2**63:
            return n
    return None


def kafka_suffix(name: str) -> str | None:
    """The suffix DumpLogSegments dispatches on: from the name's last dot (None: it has no dot)."""
    dot = name.rfind(".")
    return None if dot < 0 else name[dot:]


def java_file_name(arg: str) -> str:
    """``new File(arg).toString()``: repeated slashes as one, no trailing slash."""
    while "//" in arg:
        arg = arg.replace("//", "/")
    return arg[:-1] if len(arg) > 1 and arg.endswith("/") else arg


def help_text(release: str, opts: dict[str, Opt] | None = None) -> str:
    """The option table in joptsimple's layout (two columns, 80 wide); the words are kseg's."""
    opts = opts or options_of(release)
    rows = []
    for o in opts.values():
        left = f"--{o.name}"
        if o.arg == "required":
            left += f" <{o.type}: {o.shown_as}>" if o.shown_as else f" <{o.type}>"
        elif o.arg == "optional":
            left += f" [{o.type}]"
        text = o.help + (f" (default: {o.default})" if o.default is not None else "")
        rows.append((left, text))
    width = max(len(left) for left, _ in rows) + 2
    right = 80 - width
    lines = [f"{'Option':<{width}}{'Description':<{right}}", f"{'------':<{width}}{'-----------':<{right}}"]
    for left, text in rows:
        first, *rest = _wrap(text, right - 1, right - 3)
        lines.append(f"{left:<{width}}{first:<{right}}")
        lines.extend(f"{'':<{width}}  {line:<{right - 2}}" for line in rest)
    return "\n".join(lines) + "\n"


def _wrap(text: str, first: int, other: int) -> list[str]:
    """Words filled into lines of ``first`` then ``other`` columns; a word too long for a line
    (a class name) is broken after one of its dots, as joptsimple does."""
    pieces: list[tuple[str, bool]] = []  # (piece, starts a word)
    for word in text.split():
        parts = re.findall(r"[^.]*\.|[^.]+$", word) if len(word) > other else [word]
        pieces.extend((part, i == 0) for i, part in enumerate(parts))
    lines, line = [], ""
    for piece, new_word in pieces:
        joined = f"{line} {piece}" if line and new_word else line + piece
        if line and len(joined) > (first if not lines else other):
            lines.append(line)
            line = piece
        else:
            line = joined
    return [*lines, line]


ABOUT = ("kseg-dump-log: the lines kafka-dump-log.sh prints for Kafka log segments, indexes, snapshots and "
         "checkpoints, from kseg (no JVM), under its options.")


# --------------------------------------------------------------------------- the run


@dataclass
class Run:
    """The options resolved as DumpLogSegments resolves them."""

    release: str
    parsed: Parsed
    files: list[str]
    decode: str | None
    print_data: bool
    deep: bool

    @classmethod
    def of(cls, parsed: Parsed, release: str) -> "Run":
        decode = next((family for flag, family in DECODER_FLAGS.items() if parsed.has(flag)), None)
        print_data = (parsed.has("print-data-log") or any(parsed.has(f) for f in DECODER_FLAGS)
                      or parsed.has("key-decoder-class") or parsed.has("value-decoder-class"))
        files = java_split(parsed.value("files") or "")
        return cls(release, parsed, files, decode, print_data, parsed.has("deep-iteration") or print_data)

    def decoder_names(self) -> tuple[str, str, tuple[str, ...]]:
        """(key decoder, value decoder, notices) for kseg's payload decoders, checked as DumpLogSegments
        loads the classes (value first) when it reaches a log file: the release's own classes, Kafka
        3.9 swaps kafka.serializer's with a notice on stdout, a release has not the other package's
        classes (Java's ClassNotFoundException, exit 1); kseg runs no other class."""
        row = kafka_release(self.release)
        own = {row.decoder_class_package + name: kseg for name, kseg in DECODERS.items()}
        names, notices = {}, []
        for which in ("value", "key"):
            cls_name = self.parsed.value(f"{which}-decoder-class") or ""
            if cls_name in DEPRECATED_DECODER_CLASSES and row.serializer_decoders_deprecated:
                notices.append(f"{cls_name} is deprecated. Please use {DEPRECATED_DECODER_CLASSES[cls_name]} "
                               "instead")
                cls_name = DEPRECATED_DECODER_CLASSES[cls_name]
            if cls_name in own:
                names[which] = own[cls_name]
            elif cls_name in DECODER_CLASSES or cls_name in DEPRECATED_DECODER_CLASSES:
                raise ToolError(f"--{which}-decoder-class {cls_name}: no such class in Kafka {row.line}'s tool "
                                f"(its own are {row.decoder_class_package}*)")
            else:
                raise ToolError(f"--{which}-decoder-class {cls_name or '(empty)'}: kseg cannot run Java classes; "
                                f"Kafka's own are {', '.join(own)} (kseg dump --{which}-decoder "
                                "takes a Python module:function)", EXIT_USAGE)
        return names["key"], names["value"], tuple(notices)

    def max_bytes(self) -> int:
        return java_int(self.parsed.value("max-bytes") or "", "max-bytes")


def main(argv: Sequence[str] | None = None, stdout: IO[bytes] | None = None,
         stderr: TextIO | None = None) -> int:
    """Run kafka-dump-log.sh's command line; the exit code. Output goes to ``stdout`` (bytes) and
    ``stderr`` (text), the process's own by default."""
    args = list(sys.argv[1:] if argv is None else argv)
    out = stdout if stdout is not None else sys.stdout.buffer
    err = stderr if stderr is not None else sys.stderr
    try:
        release, args = _kafka_version(args)
        if not args:
            err.write(ABOUT + "\n" + help_text(release or KAFKA_VERSIONS[0]))
            return EXIT_DATA
        release = release or KAFKA_VERSIONS[0]
        parsed = parse(args, release)
        if parsed.has("help"):
            err.write(ABOUT + "\n" + help_text(release))
            return EXIT_DATA
        if parsed.has("version"):
            row = kafka_release(release)
            out.write(f"{row.version_text or row.checked}\n".encode())
            return 0
        if not parsed.has("files"):
            err.write('Missing required argument "[files]"\n' + help_text(release))
            return EXIT_DATA
        run = Run.of(parsed, release)
    except ToolError as e:
        err.write(f"{PROG}: error: {e}\n")
        return e.code
    return _dump(run, out, err)


def _kafka_version(args: list[str]) -> tuple[str | None, list[str]]:
    """kseg's own ``--kafka-version V`` (taken out of the arguments), else ``KSEG_KAFKA_VERSION``."""
    version, rest, i = None, [], 0
    while i < len(args):
        a = args[i]
        if a == "--":
            rest.extend(args[i:])
            break
        if a in ("--kafka-version", "-kafka-version"):
            if i + 1 >= len(args):
                raise ToolError(f"--kafka-version needs an argument: {' or '.join(KAFKA_VERSIONS)}", EXIT_USAGE)
            version, i = args[i + 1], i + 2
            continue
        if a.startswith(("--kafka-version=", "-kafka-version=")):
            version, i = a.partition("=")[2], i + 1
            continue
        rest.append(a)
        i += 1
    if version is None:
        version = os.environ.get(ENV_KAFKA_VERSION) or None
    if version is not None and version not in KAFKA_VERSIONS:
        raise ToolError(f"--kafka-version {version!r}: use one of {', '.join(KAFKA_VERSIONS)}", EXIT_USAGE)
    return version, rest


def _attempt(fn: Any) -> tuple[Any, ToolError | None]:
    """``fn()``, or its error kept for when DumpLogSegments would meet it."""
    try:
        return fn(), None
    except ToolError as e:
        return None, e


def _dump(run: Run, out: IO[bytes], err: TextIO) -> int:
    """The files in order through kseg's dump and one renderer, as DumpLogSegments goes through them."""
    p = run.parsed
    # Worked out now, raised where DumpLogSegments meets them: the decoder classes (unless a decoder
    # flag is given) and --max-bytes at each log file, --max-message-size at each .index file.
    decoders, decoder_error = _attempt(run.decoder_names) if run.decode is None else ((None, None, ()), None)
    max_bytes, max_bytes_error = _attempt(run.max_bytes)
    negative_max_bytes = None
    if max_bytes is not None and max_bytes < 0:
        negative_max_bytes = ToolError(f"--max-bytes {max_bytes}: a size cannot be negative")
    max_message_size, max_message_error = _attempt(lambda: java_int(p.value("max-message-size") or "",
                                                                    "max-message-size"))
    kd_name, vd_name, notices = decoders or (None, None, ())
    _, kd, vd, _, _ = prepare_dump("kafka", "utf8" if run.print_data else "none",
                                   kd_name if run.print_data else None, vd_name if run.print_data else None,
                                   run.deep, None)
    chunks = ChunkedWriter(out)
    renderer = make_renderer("kafka", chunks, err, kd, vd, records=run.deep, kafka_version=run.release,
                             skip_record_metadata=p.has("skip-record-metadata"),
                             index_sanity=p.has("index-sanity-check"), verify_index=p.has("verify-index-only"))
    renderer.log_preamble = notices
    renderer.as_the_tool = True
    if p.value("max-message-size") and max_message_size is not None:
        renderer.max_message_size = max_message_size  # how far past an .index entry's position the tool reads
    options = replace(dump_options_for("kafka", renderer, records=run.deep, decode=run.decode,
                                       max_bytes=None if max_bytes is None or max_bytes < 0 or max_bytes == INT_MAX
                                       else max_bytes), as_the_tool=True)
    row = kafka_release(run.release)
    known = tuple(s for s in DUMP_LOG_SUFFIXES if row.dumps_checkpoints or s != CHECKPOINT_SUFFIX)
    bad = 0
    try:
        with catching_signals():
            for arg in run.files:
                shown = _JavaName(java_file_name(arg))
                suffix = kafka_suffix(shown.name if str(shown) else "")
                stop = None
                if suffix is None and row.suffixless_name_stops:
                    stop = ToolError(f"{printable(shown)}: a name without a suffix (Kafka {row.line}'s tool "
                                     "stops here)")
                elif suffix not in known:  # others are ignored with a line
                    renderer(FileStart(shown, "unknown", None))
                    renderer(SkippedEvent(shown, "unknown file type"))
                    continue
                elif suffix in (LOG_SUFFIX, CHECKPOINT_SUFFIX):
                    stop = decoder_error or max_bytes_error or (max_message_error if row.max_message_size_at_logs
                                                                else None)
                elif suffix == INDEX_SUFFIX:
                    stop = max_message_error
                offset = java_long_head(shown.name)
                if stop is None and not _named_as_kafka_reads(shown.name, suffix, offset):
                    stop = ToolError(f"{printable(shown)}: " + ("not a snapshot's name (<end offset>-<epoch>"
                                     ".checkpoint)" if suffix == CHECKPOINT_SUFFIX else "the name does not start "
                                     "with an offset"))
                if stop is not None:
                    renderer(FileStart(shown, "unknown", None))  # its "Dumping" line, then the error
                    raise stop
                for ev in dump_paths([Path(arg)], options):
                    if isinstance(ev, FileStart):
                        ev = replace(ev, path=_JavaName(str(shown), ev.path),
                                     base_offset=offset if suffix == LOG_SUFFIX else ev.base_offset)
                        renderer(ev)
                        if suffix in (LOG_SUFFIX, CHECKPOINT_SUFFIX) and negative_max_bytes is not None:
                            raise negative_max_bytes  # met when the file is read, after its first lines
                        continue
                    if isinstance(ev, BadBatchEvent):
                        bad += 1
                    renderer(ev)
            renderer.close()
    except ToolError as e:
        return _fail(chunks, err, str(e), e.code)
    except KsegError as e:
        return _fail(chunks, err, str(e), EXIT_DATA)
    except BrokenPipeError:
        return 0
    except OSError as e:
        return _fail(chunks, err, f"{e.filename + ': ' if e.filename else ''}{e.strerror or e}", EXIT_DATA)
    except KeyboardInterrupt as e:
        chunks.flush()
        interrupted(e)
    chunks.flush()
    return EXIT_DATA if bad else 0


def _named_as_kafka_reads(name: str, suffix: str | None, offset: int | None) -> bool:
    """Whether DumpLogSegments can read the offset (and a snapshot's epoch) from the name: a
    ``.checkpoint`` is ``bootstrap.checkpoint`` or ``<20 digits>-<10 digits>.checkpoint``; a
    ``.snapshot`` needs none; the others start with an offset."""
    if suffix == CHECKPOINT_SUFFIX:
        return name == BOOTSTRAP_FILE or SNAPSHOT_NAME.fullmatch(name) is not None
    return suffix == PRODUCER_SNAPSHOT_SUFFIX or offset is not None


def _fail(chunks: Any, err: TextIO, message: str, code: int) -> int:
    """What was printed stays; then one line, as DumpLogSegments stops with a Java exception."""
    try:
        chunks.flush()
    except BrokenPipeError:
        pass
    err.write(f"{PROG}: error: {message}\n")
    return code


class _JavaName(type(Path())):  # type: ignore[misc]
    """A path that prints as Java's ``File.toString()`` does (``./a`` stays ``./a``)."""

    def __new__(cls, shown: str, path: Path | None = None) -> "_JavaName":
        self = super().__new__(cls, path if path is not None else (shown or "."))
        self._shown = shown
        return self

    def __init__(self, shown: str, path: Path | None = None) -> None:
        if sys.version_info >= (3, 12):
            super().__init__(path if path is not None else (shown or "."))
        self._shown = shown

    def __str__(self) -> str:
        return self._shown


def run() -> None:
    """The ``kseg-dump-log`` console script."""
    tune_for_chunks()  # as the kseg command does (kseg.allocator)
    try:
        code = main()
    finally:
        ignore_interrupts()
    raise SystemExit(code)
