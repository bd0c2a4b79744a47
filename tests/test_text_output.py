"""Text output speaks the user's language, not Python's: every command of the click group, in
its text form, on inputs that hold nulls, tombstones, headers, transactions, internal topics and
damage, prints no ``None``, no bytes or string reprs, no floats in exponent form and no raw
millisecond durations. A new command fails ``test_every_command_has_a_row`` until it has one.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from kseg.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
LOGDIR = ROOT / "fixtures" / "logdir"
INTERNAL = ROOT / "fixtures" / "internal"
REALDATA = ROOT.parent / "shared" / "realdata"

# What a Python value looks like when it leaks into text: the word None, a bytes or str repr,
# a float in exponent form, a duration left as a raw count of milliseconds.
LEAKS = {
    "None": re.compile(r"(?<![\w\"-])None(?![\w\"-])"),
    "bytes repr": re.compile(r"(?:^|(?<=[\s(\[,=:]))b(?:'[^'\n]*'|\"[^\"\n]*\")", re.M),
    "str repr": re.compile(r"(?:^|(?<=[\s(\[,=:]))'[^'\n]*'(?=[\s,)\]]|$)", re.M),
    "exponent": re.compile(r"\b\d\.\d+e[+-]\d\d\b"),
    "raw milliseconds": re.compile(r"\b\d{5,} ms\b"),
}

# command -> argument lists, each run in text form ({out} is a fresh output folder).
ROWS: dict[str, list[list[str]]] = {
    "verify": [[str(LOGDIR)], [str(INTERNAL)]],
    "dump": [["-r", str(LOGDIR / "v2-headers-0")], ["-r", "--decode", "auto", str(INTERNAL / "__consumer_offsets-0")],
             ["-r", "--decode", "auto", str(INTERNAL / "__transaction_state-0")]],
    "find": [["--key", "k1", str(LOGDIR)], ["--value-regex", "one", str(LOGDIR)]],
    "stats": [[str(LOGDIR)], ["--segments", str(LOGDIR / "v2-txn-0")]],
    "txn": [[str(LOGDIR / "v2-txn-0")]],
    "state": [[str(INTERNAL)]],
    "diff": [[str(LOGDIR / "v2-none-0"), str(LOGDIR / "v2-gzip-0")]],
    "index": [["--check", str(LOGDIR)]],
    "repair": [["--dry-run", str(LOGDIR / "v2-txn-0")]],
    # A damaged copy's report is held to LEAKS in tests/test_salvage.py (no fixture is damaged).
    "salvage": [["--dry-run", str(LOGDIR / "v2-txn-0")], [str(LOGDIR / "v2-gzip-0"), "-o", "{out}"]],
    "export": [[str(LOGDIR / "v2-headers-0"), "-o", "{out}"], [str(LOGDIR), "-o", "{out}", "--format", "arrow"]],
    "compact": [[str(LOGDIR / "v2-none-0"), "-o", "{out}", "--include-active"]],
    "bundle": [[str(LOGDIR), "-o", "{out}.tar.gz", "--topic", "v2-headers"],
               [str(ROOT / "fixtures" / "kafka-4" / "logdir"), "-o", "{out}.tgz", "--redact", "keys,values",
                "--topic", "v2", "--from-time", "2100-01-01"]],
    "up-convert": [[str(LOGDIR / "v1-gzip-0"), "-o", "{out}", "--to-magic", "2"]],
    "down-convert": [[str(LOGDIR / "v2-none-0"), "-o", "{out}", "--to-magic", "1"]],
    "recompress": [[str(LOGDIR / "v2-none-0"), "-o", "{out}", "--codec", "zstd"]],
    "rebase": [[str(LOGDIR / "v2-none-0"), "-o", "{out}", "--base-offset", "1000"]],
    "plugins": [["list"]],
    "build": [[str(ROOT / "examples" / "fixture-spec.json"), "-o", "{out}"]],
}
# The Spark commands print through the same renderers as the plain ones (tests/test_tools_spark.py
# holds them equal); starting a JVM here would only repeat that.
EXEMPT = {"spark": "same renderers as the plain commands, held equal by tests/test_tools_spark.py"}


def test_every_command_has_a_row() -> None:
    names = set(main.list_commands(click.Context(main)))
    assert names == set(ROWS) | set(EXEMPT), f"without a row: {names - set(ROWS) - set(EXEMPT)}"


def _cases() -> list[tuple[str, list[str]]]:
    cases = [(cmd, args) for cmd, lists in ROWS.items() for args in lists]
    if (REALDATA / "kafkafun").is_dir():
        cases += [("stats", [str(REALDATA / "kafkafun")]), ("verify", [str(REALDATA / "LDI-POC")]),
                  ("state", [str(REALDATA / "LDI-POC" / "__cluster_metadata-0")])]
    return cases


@pytest.mark.parametrize(("cmd", "args"), _cases(), ids=lambda v: v if isinstance(v, str) else " ".join(
    Path(a).name for a in v))
def test_no_python_in_text(cmd: str, args: list[str], tmp_path: Path) -> None:
    args = [a.replace("{out}", str(tmp_path / "out")) for a in args]
    res = CliRunner().invoke(main, [cmd, *args], catch_exceptions=False)
    assert res.exit_code in (0, 1), res.output
    text = res.output
    assert text.strip(), "no output"
    for what, pattern in LEAKS.items():
        m = pattern.search(text)
        assert m is None, f"{what} in the text of kseg {cmd}: ...{text[max(0, m.start() - 80):m.end() + 40]}..."
    shutil.rmtree(tmp_path / "out", ignore_errors=True)


def test_leak_patterns_catch_what_they_name() -> None:
    """The patterns are not vacuous: each catches the leak it names and passes its text form."""
    samples = {"None": ("protocol None", "protocol null"), "bytes repr": ("key b'k1'", 'key "k1"'),
               "str repr": ("metadata 'm' ok", 'metadata "m" ok'),
               "exponent": ("9.4e-05 records/s", "0.000094 records/s"),
               "raw milliseconds": ("95428554574 ms", "1104d 11:55:54")}
    for what, (bad, good) in samples.items():
        assert LEAKS[what].search(bad) and not LEAKS[what].search(good), what


@pytest.mark.parametrize(("ms", "text"), [(0, "0 ms"), (999, "999 ms"), (1000, "00:00:01"), (65_000, "00:01:05"),
                                          (86_399_999, "23:59:59"), (86_400_000, "1d 00:00:00"),
                                          (95_428_554_574, "1104d 11:55:54"), (-1500, "-00:00:01"), (None, "null")])
def test_duration(ms: int | None, text: str) -> None:
    from kseg.render.human import duration

    assert duration(ms) == text


@pytest.mark.parametrize(("n", "text"), [(0, "0 B"), (999, "999 B"), (1000, "1.0 kB"), (2742, "2.7 kB"),
                                         (108_000, "108 kB"), (999_960, "1.0 MB"), (12_300_000, "12.3 MB"),
                                         (2 * 10**12, "2.0 TB"), (None, "null")])
def test_size(n: int | None, text: str) -> None:
    from kseg.render.human import size

    assert size(n) == text


# command -> (arguments, the partition objects of its JSON document)
PARTITION_DOCS = {
    "stats": (["stats", "--format", "json", str(LOGDIR)], lambda d: [p for t in d["topics"] for p in t["partitions"]]),
    "txn": (["txn", "--format", "json", str(LOGDIR / "v2-txn-0")], lambda d: d["partitions"]),
    "state": (["state", "--format", "json", str(INTERNAL)], lambda d: d["partitions"]),
    "diff": (["diff", "--format", "json", str(LOGDIR), str(LOGDIR)], lambda d: d["partitions"]),
    "repair": (["repair", "--dry-run", "--format", "json", str(LOGDIR)], lambda d: d["partitions"]),
    "salvage": (["salvage", "--dry-run", "--format", "json", str(LOGDIR)], lambda d: d["partitions"]),
}


@pytest.mark.parametrize("name", sorted(PARTITION_DOCS))
def test_json_partitions_carry_topic_and_partition(name: str) -> None:
    import json

    args, parts = PARTITION_DOCS[name]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    found = parts(json.loads(res.stdout))
    assert found
    for p in found:
        assert isinstance(p.get("topic"), str) and isinstance(p.get("partition"), int), p
