"""One time grammar: every option that names a point in time, in every command (``kseg spark``'s
included), takes milliseconds or ISO-8601 through the one ``TIME`` type and says so in its help.

The options are found by walking the click group: a new option whose name speaks of time must
either take ``TIME`` or be listed in ``NOT_A_POINT_IN_TIME`` with the reason."""

from __future__ import annotations

from typing import Iterator

import click
import pytest
from click.testing import CliRunner

from kseg.cli.common import NO_ZONE_RULE, TIME, TIME_GRAMMAR, TimeType
from kseg.cli.main import main

# option -> why it takes no point in time (durations, flags, choices).
NOT_A_POINT_IN_TIME = {
    "--timestamp-type": "a choice: which timestamp v2 batches carry",
    "--timings": "a flag: print how long Spark took",
    "--max-timeout-ms": "a duration (transaction.max.timeout.ms)",
    "--delete-retention-ms": "a duration (delete.retention.ms)",
    "--min-compaction-lag-ms": "a duration (min.compaction.lag.ms)",
    "--producer-id-expiration-ms": "a duration (producer.id.expiration.ms)",
}


def speaks_of_time(name: str) -> bool:
    return "time" in name or name.endswith("-ms") or name.startswith("--now")


def options() -> Iterator[tuple[str, click.Option]]:
    ctx = click.Context(main)

    def walk(cmd: click.Command, path: str) -> Iterator[tuple[str, click.Option]]:
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                yield from walk(cmd.get_command(ctx, name), f"{path} {name}".strip())  # type: ignore[arg-type]
        else:
            for p in cmd.params:
                if isinstance(p, click.Option):
                    yield path, p

    yield from walk(main, "")


ALL = list(options())
TIME_OPTIONS = [(cmd, o) for cmd, o in ALL if isinstance(o.type, TimeType)]


def test_the_known_time_options_are_there() -> None:
    found = {(cmd, o.opts[-1]) for cmd, o in TIME_OPTIONS}
    for expected in [("dump", "--from-time"), ("dump", "--to-time"), ("find", "--from-time"), ("find", "--to-time"),
                     ("state", "--at-time"), ("txn", "--now-ms"), ("compact", "--now-ms"),
                     ("up-convert", "--log-append-time")]:
        assert expected in found


@pytest.mark.parametrize("cmd,opt", [(c, o) for c, o in ALL if any(speaks_of_time(n) for n in o.opts)],
                         ids=lambda x: x if isinstance(x, str) else x.opts[-1])
def test_every_time_option_takes_the_shared_type(cmd: str, opt: click.Option) -> None:
    name = opt.opts[-1]
    if name in NOT_A_POINT_IN_TIME:
        assert not isinstance(opt.type, TimeType)
        return
    assert opt.type is TIME, f"{cmd} {name}: a time option must use kseg.cli.common.time_option"
    assert TIME_GRAMMAR in (opt.help or "") and NO_ZONE_RULE in (opt.help or "")


def test_the_exemptions_are_all_still_options() -> None:
    names = {n for _, o in ALL for n in o.opts}
    assert set(NOT_A_POINT_IN_TIME) <= names


# (text, milliseconds): the grammar's whole space — digits, zones (Z, z, offsets), no zone
# (UTC), fractions, a date alone, a space for the T, before the epoch.
GOOD = [
    ("1700000000000", 1700000000000),
    ("0", 0),
    ("-1", -1),
    (" 1700000000000 ", 1700000000000),
    ("2023-11-14T22:13:20Z", 1700000000000),
    ("2023-11-14T22:13:20z", 1700000000000),
    ("2023-11-14T22:13:20", 1700000000000),  # no zone: UTC
    ("2023-11-14 22:13:20", 1700000000000),
    ("2023-11-14T23:13:20+01:00", 1700000000000),
    ("2023-11-14T17:13:20-05:00", 1700000000000),
    ("2023-11-14T22:13:20.5Z", 1700000000500),
    ("2023-11-14T22:13:20.123456", 1700000000123),
    ("2023-11-14", 1699920000000),
    ("1969-12-31T23:59:59Z", -1000),
]
BAD = ["", "yesterday", "1.5", "1e3", "2023-13-01", "2023-11-14T25:00", "0x10", "2023-11-14T22:13:20+25:00"]


@pytest.mark.parametrize("text,ms", GOOD)
def test_grammar_accepts(text: str, ms: int) -> None:
    assert TIME.convert(text, None, None) == ms


@pytest.mark.parametrize("text", BAD)
def test_grammar_refuses(text: str) -> None:
    with pytest.raises(click.BadParameter):
        TIME.convert(text, None, None)


@pytest.mark.parametrize("cmd,opt", TIME_OPTIONS, ids=lambda x: x if isinstance(x, str) else x.opts[-1])
def test_every_time_option_refuses_bad_times_with_exit_2(cmd: str, opt: click.Option) -> None:
    r = CliRunner().invoke(main, [*cmd.split(), opt.opts[-1], "yesterday", "/nonexistent"])
    assert r.exit_code == 2
    assert "neither milliseconds since the epoch nor an ISO-8601 time" in r.stderr
