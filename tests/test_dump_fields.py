"""``kseg dump --fields`` (the record lines' fields, in the order given, text and jsonl) and
``--no-truncate`` (text keys and values whole): the chosen lines hold exactly what the default
lines hold, and options that cannot apply are usage errors naming what is valid."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kseg.cli.main import main
from kseg.render import bulk
from kseg.render.dump import JsonlRenderer, TextRenderer, payload_decoder
from kseg.render.fields import RECORD_FIELDS, RecordView

LOGDIR = Path(__file__).resolve().parent.parent / "fixtures" / "logdir"
PARTITIONS = sorted(p.name for p in LOGDIR.iterdir() if p.is_dir())


def _dump(*args: str, code: int = 0) -> str:
    res = CliRunner().invoke(main, ["dump", *args])
    assert res.exit_code == code, res.output
    return res.stdout if code == 0 else res.stderr


def _jsonl(*args: str) -> list[dict]:
    return [json.loads(line) for line in _dump("--format", "jsonl", *args).splitlines()]


@pytest.mark.parametrize("name", PARTITIONS)
def test_jsonl_fields_are_the_default_lines_cut_and_ordered(name: str) -> None:
    fields = ["value", "headers", "offset", "key"]
    full = _jsonl("-r", str(LOGDIR / name))
    chosen = _jsonl("--fields", ",".join(fields), str(LOGDIR / name))  # --fields implies -r
    assert [d for d in chosen if d["type"] != "record"] == [d for d in full if d["type"] != "record"]
    records = [d for d in full if d["type"] == "record"]
    got = [d for d in chosen if d["type"] == "record"]
    assert len(got) == len(records) > 0
    for want, line in zip(records, got):
        names = ["type"] + [n for f in fields for n in (f, f + "_b64") if n in want]
        names += ["control"] if "control" in want else []
        assert list(line) == names  # the order given, after "type"
        assert line == {n: want[n] for n in names}


def test_text_fields_in_the_order_given() -> None:
    out = _dump("--fields", "offset,key,value,headers", str(LOGDIR / "v2-headers-0"))
    records = [line for line in out.splitlines() if line.startswith("   ")]
    # v2-headers-0's first batch, as fixtures/generate.py writes it
    assert records[:4] == [
        '         0  key "k0"  value "no headers"  headers -',
        '         1  key "k1"  value "one header"  headers h="x"',
        '         2  key "k2"  value "null header value"  headers null-value=null',
        '         3  key "k3"  value "empty header key and value"  headers =""',
    ]
    swapped = [line for line in _dump("--fields", "value,offset", str(LOGDIR / "v2-headers-0")).splitlines()
               if line.startswith("  value")]
    assert swapped[:2] == ['  value "no headers"  0', '  value "one header"  1']


def test_control_records_stay_marked() -> None:
    lines = _jsonl("--fields", "offset", str(LOGDIR / "v2-txn-0"))
    control = [d for d in lines if d["type"] == "record" and "control" in d]
    assert control and all(set(d) == {"type", "offset", "control"} for d in control)
    text = _dump("--fields", "offset", str(LOGDIR / "v2-txn-0"))
    assert "(control) COMMIT" in text or "(control) ABORT" in text


def test_unknown_field_is_a_usage_error_naming_the_valid_ones() -> None:
    err = _dump("--fields", "offset,colour", str(LOGDIR / "v2-none-0"), code=2)
    assert "'colour'" in err and ",".join(RECORD_FIELDS) in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("args,option", [(["--format", "kafka", "--fields", "offset"], "--fields"),
                                         (["--format", "jsonl", "--no-truncate"], "--no-truncate"),
                                         (["--format", "kafka", "--no-truncate"], "--no-truncate")])
def test_options_where_they_cannot_apply_are_refused(args: list[str], option: str) -> None:
    err = _dump(*args, str(LOGDIR / "v2-none-0"), code=2)
    assert err.startswith(f"kseg: error: {option} applies to") and len(err.strip().splitlines()) == 1


def test_no_truncate_shows_values_whole() -> None:
    path = str(LOGDIR / "v2-gzip-0")
    value = next(d["value"] for d in _jsonl("-r", path) if d["type"] == "record" and d["offset"] == 13)
    assert len(value) > 100
    cut = next(line for line in _dump("-r", path).splitlines() if line.startswith("        13 "))
    whole = next(line for line in _dump("-r", "--no-truncate", path).splitlines() if line.startswith("        13 "))
    assert f'value "{value}"' in whole and "…" not in whole
    assert f'value "{value[:59]}…" ({len(value.encode())} bytes)' in cut
    # the rest of the line is the default one
    assert whole.split(" value ")[0] == cut.split(" value ")[0]
    assert _dump("-r", "--no-truncate", "--fields", "value", path).count(f'value "{value}"') == 1


def test_the_default_lines_stay_in_bulk() -> None:
    """Without --fields and --no-truncate the renderers still take spans and runs (the C writers)."""
    d = payload_decoder("utf8", "text")
    for cls in (TextRenderer, JsonlRenderer):
        plain, chosen = cls(io.BytesIO(), None, d, d, view=RecordView()), cls(io.BytesIO(), None, d, d, view=RecordView(("key",)))
        assert plain.takes_spans == (bulk.text_spans is not None) and not chosen.takes_spans
        assert plain.takes_plain_runs == (bulk.text_plain_run is not None) and not chosen.takes_plain_runs
    assert not TextRenderer(io.BytesIO(), None, d, d, view=RecordView(None, False)).takes_spans
