"""kafka-dump-log.sh's command line at its edges, for ``kseg-dump-log``: the cases, how the two
are compared, and the committed outputs of the real tool.

:data:`CASES` are argument lists run in ``fixtures/kafka-4/logdir`` (help, no arguments, a
missing ``--files``, unknown options, files that do not exist or have no Kafka suffix, option
values DumpLogSegments cannot parse, decoder classes). :func:`differences` says where
kseg-dump-log's (exit, stdout, stderr) differs from DumpLogSegments': the exit code and stdout
must be equal; stderr too, except that one line ``kseg-dump-log: error: ...`` stands where
Java printed an exception and its stack, and the help's descriptions are kseg's own words (its
options, their arguments and defaults must be Kafka's).

``python tests/kafka/usage.py [RELEASE…]`` runs the real tools (Java, mvn) and writes
``fixtures/kafka-dump-log-usage/<release>.json`` (a Java stack cut after the exception's first
line), which ``tests/test_dump_log_dropin.py`` compares against without Java;
``tests/kafka/test_kafka_dump_log_live.py`` runs both live.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LOGDIR = REPO / "fixtures" / "kafka-4" / "logdir"
GOLDEN = REPO / "fixtures" / "kafka-dump-log-usage"
#: every release line (names of brokers.RELEASES; "4" is the 4.3 line)
RELEASES = ("2.8", "3.6", "3.9", "4.0", "4.1", "4.2", "4", "4.4")

_I = "v2-0/00000000000000000000.index"
_T = "v2-0/00000000000000000000.timeindex"
_L = "v2-0/00000000000000000000.log"

#: case id -> kafka-dump-log.sh arguments (run in LOGDIR)
CASES: dict[str, list[str]] = {
    "no-arguments": [],
    "help": ["--help"],
    "help-with-files": ["--files", _I, "--help"],
    "help-and-version": ["--version", "--help"],
    "version": ["--version"],
    "missing-files": ["--deep-iteration"],
    "only-terminator": ["--", "--files", _I],
    "unknown-option": ["--files", _L, "--bogus"],
    "unknown-before-help": ["--help", "--bogus"],
    "abbreviated": ["--fil", _I],
    "short-h": ["-h"],
    "files-without-value": ["--files"],
    "files-twice": ["--files", _I, "--files", _T],
    "files-equals": [f"--files={_I},{_T}"],
    "single-dash": ["-files", _I],
    "word-ignored": ["--files", _I, "extra"],
    "files-takes-next-word": ["--files", "--deep-iteration"],
    "empty-files": ["--files", ""],
    "empty-between-commas": ["--files", f"{_I},,{_I},"],
    "no-such-log": ["--files", "nope/00000000000000000000.log"],
    "no-such-index": ["--files", "nope/00000000000000000000.index"],
    "no-suffix": ["--files", "README"],
    "folder": ["--files", "v2-0"],
    "other-suffix": ["--files", "foo.txt"],
    "deleted-suffix": ["--files", "v2-0/00000000000000000000.log.deleted"],
    "name-not-an-offset": ["--files", "foo.log"],
    "timeindex-name-not-an-offset": ["--files", "x.timeindex"],
    "checkpoint-name-not-a-snapshot": ["--files", "5-1.checkpoint"],
    "no-such-snapshot": ["--files", "00000000000000000005-0000000001.checkpoint"],
    "dot-slash": ["--files", f"./{_I}"],
    "max-bytes-not-a-number": ["--files", _L, "--max-bytes", "abc"],
    "max-bytes-too-big": ["--files", _L, "--max-bytes", "99999999999"],
    "max-bytes-negative": ["--files", _L, "--max-bytes", "-1"],
    "max-bytes-zero": ["--files", _L, "--max-bytes", "0"],
    "max-bytes-plus": ["--files", _L, "--max-bytes", "+600"],
    "max-bytes-twice": ["--files", _L, "--max-bytes", "1", "--max-bytes", "2"],
    "max-bytes-bad-index-only": ["--files", _I, "--max-bytes", "x"],
    "max-message-size-bad-log": ["--files", _L, "--max-message-size", "x"],
    "max-message-size-bad-index": ["--files", _I, "--max-message-size", "x"],
    "decoder-class-unknown": ["--files", _L, "--value-decoder-class", "com.example.Nope"],
    "decoder-class-unknown-index-only": ["--files", _I, "--value-decoder-class", "com.example.Nope"],
    "decoder-class-unknown-offsets": ["--files", "__consumer_offsets-0/00000000000000000000.log", "--offsets-decoder",
                                      "--key-decoder-class", "com.example.Nope"],
    "decoder-class-empty": ["--files", _L, "--value-decoder-class="],
    "decoder-class-option-next": ["--files", _L, "--value-decoder-class", "-x"],
    "decoder-class-no-value": ["--files", _L, "--key-decoder-class"],
    "string-decoder": ["--files", _L, "--value-decoder-class", "org.apache.kafka.tools.api.StringDecoder"],
    "deprecated-string-decoder": ["--files", f"{_L},{_L}", "--key-decoder-class",
                                  "kafka.serializer.StringDecoder", "--value-decoder-class",
                                  "kafka.serializer.StringDecoder"],
    "share-decoder": ["--files", _I, "--share-group-state-decoder"],
}

#: "case" or "release:case" -> why kseg-dump-log's (exit, stdout, stderr) is not yet Kafka's there
#: (the test expects the difference: it fails once the two agree)
NOT_COMPARED: dict[str, str] = {}


def not_compared(release: str, case: str) -> str | None:
    """Why the case is not yet Kafka's for the release (None: it is)."""
    return NOT_COMPARED.get(f"{release}:{case}") or NOT_COMPARED.get(case)

#: case id -> kseg-dump-log's exit code where it is not Kafka's on purpose: a decoder class other than
#: Kafka's own is one kseg cannot run (usage, 2), where Kafka loads it from its class path (1 if absent)
KSEG_EXIT: dict[str, int] = {"decoder-class-unknown": 2, "decoder-class-empty": 2}

_EXCEPTION = re.compile(r"^Exception in thread \"main\" ", re.M)
_HELP_HEADER = "Option "


def kafka_usage(release: str) -> dict[str, dict]:
    """Run the release's DumpLogSegments on every case."""
    import brokers

    out = {}
    for case, args in CASES.items():
        rc, o, e = brokers.dump_log_segments(release, *args, cwd=LOGDIR)
        out[case] = {"args": args, "exit": rc, "stdout": o.decode("utf-8", "replace"),
                     "stderr": without_stack(e.decode("utf-8", "replace"))}
    return out


def without_stack(stderr: str) -> str:
    """Java's stderr up to the end of its exception's first line: what :func:`differences` reads
    (the stack below it, a few kilobytes a case, is not compared)."""
    m = _EXCEPTION.search(stderr)
    if not m:
        return stderr
    end = stderr.find("\n", m.end())
    return stderr if end < 0 else stderr[:end + 1]


def kseg_usage(release: str, args: list[str]) -> tuple[int, str, str]:
    """kseg-dump-log on ``args`` in LOGDIR, in-process: exit, stdout, stderr."""
    import io
    import os

    import brokers
    from kseg.cli.dumplog import main

    out, err = io.BytesIO(), io.StringIO()
    old = os.getcwd()
    os.chdir(LOGDIR)
    try:
        # --kafka-version is taken out: no arguments stays none; "4" (4.3.1) is the 4.3 line
        rc = main(["--kafka-version", brokers.LINES[release], *args], out, err)
    finally:
        os.chdir(old)
    return rc, out.getvalue().decode("utf-8", "replace"), err.getvalue()


def option_column(help_text: str) -> list[str]:
    """The options of a joptsimple help table, with their arguments and defaults."""
    rows, current = [], None
    for line in help_text.splitlines():
        if line.startswith("--") and line.strip("- "):  # not the "------" under the header
            current = [line.split("  ")[0].strip(), line]
            rows.append(current)
        elif current is not None and line.startswith(" "):
            current[1] += " " + line.strip()
    shown = []
    for left, text in rows:
        default = re.search(r"\(default: ([^)]*)\)", re.sub(r"\s+", " ", text).replace(". ", "."))
        shown.append(f"{left} default={default.group(1).replace(' ', '') if default else None}")
    return shown


def differences(case: str, kafka: dict, rc: int, out: str, err: str) -> list[str]:
    """Where kseg-dump-log differs from DumpLogSegments on one case (empty: as it should be)."""
    problems = []
    if rc != KSEG_EXIT.get(case, kafka["exit"]):
        problems.append(f"exit {rc}, Kafka {kafka['exit']}")
    if out != kafka["stdout"]:
        problems.append(f"stdout {out[-300:]!r}, Kafka {kafka['stdout'][-300:]!r}")
    expected = kafka["stderr"]
    m = _EXCEPTION.search(expected)
    if m:  # Kafka's lines up to its exception, then one line of kseg's instead of the stack
        before = expected[:m.start()]
        if not (err.startswith(before) and len(err[len(before):].splitlines()) == 1
                and err[len(before):].startswith("kseg-dump-log: error: ")):
            problems.append(f"stderr {err[-300:]!r}, Kafka {expected[:300]!r} (one error line expected)")
    elif _HELP_HEADER in expected:  # help: the same first line unless it is the tool's description
        ours = [o for o in option_column(err) if not o.startswith("--kafka-version ")]  # kseg's own option
        if ours != option_column(expected):
            problems.append(f"help options {option_column(err)}, Kafka {option_column(expected)}")
        if expected.startswith("Missing required argument") and err.splitlines()[:1] != expected.splitlines()[:1]:
            problems.append(f"stderr first line {err.splitlines()[:1]}, Kafka {expected.splitlines()[:1]}")
    elif err != expected:
        problems.append(f"stderr {err[-300:]!r}, Kafka {expected[-300:]!r}")
    return problems


def write_golden(releases: tuple[str, ...] = RELEASES) -> None:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for release in releases:
        (GOLDEN / f"{release}.json").write_text(json.dumps(kafka_usage(release), indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    write_golden(tuple(sys.argv[1:]) or RELEASES)
