"""The Python API page's examples (docs/reference/api.md) run as written (on the shipped fixtures instead of a broker's files)."""

from __future__ import annotations

import contextlib
import io
import re
from importlib.util import find_spec
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _examples() -> list[str]:
    """The section's code blocks, on the shipped fixtures instead of a broker's files."""
    page = (ROOT / "docs/reference/api.md").read_text()
    section = page[:page.index("## Reference")]  # the examples, before the docstrings' reference
    return [code.replace('"t-0/00000000000000000000.log"', repr(str(ROOT / "fixtures/logdir/v2-txn-0/00000000000000000000.log")))
            .replace('"t-0/"', repr(str(ROOT / "fixtures/logdir/v2-txn-0")))
            .replace('"/var/lib/kafka"', repr(str(ROOT / "fixtures/logdir")))
            for code in re.findall(r"```python\n(.*?)```", section, re.S)]


def _run(code: str) -> tuple[str, dict]:
    out = io.StringIO()
    scope: dict = {}
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/reference/api.md", "exec"), scope)
    return out.getvalue(), scope


def test_python_api_example_runs(tmp_path: Path) -> None:
    printed, scope = _run(_examples()[0])
    assert printed.count("\n") > 10
    # the partition's filtered records: v2-txn-0's data records from offset 2 to the time given
    shown = [int(m) for m in re.findall(r"^(\d+) 17\d{11} ", printed, re.M)]
    assert shown == [2, 3, 4, 6, 7, 8, 10]  # offsets 5 and 9 are transaction markers, 11 is past the time
    assert scope["r"].topic and isinstance(scope["log_dir"], list)
    import kseg

    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(scope["raw"])
    [batch] = list(kseg.open_segment(seg).batches())
    [record] = kseg.batch_records(batch)
    assert (batch.codec_name, record.key, record.value, record.headers) == ("gzip", b"k", b"v", (kseg.Header("h", b"x"),))


def test_arrow_example_runs() -> None:
    if find_spec("pyarrow") is None:
        pytest.skip("pyarrow is not installed (the spark extra)")
    printed, scope = _run("import kseg\n" + _examples()[1])
    assert scope["table"].column_names == ["offset", "key", "value"]
    assert printed.count("\n") >= 1 and scope["table"].num_rows > 5


def test_the_readme_example_runs() -> None:
    """README.md's one Python example, on a shipped partition."""
    readme = (ROOT / "README.md").read_text()
    [code] = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert '"orders-3/"' in code
    assert "from_offset=100" in code
    printed, _ = _run(code.replace('"orders-3/"', repr(str(ROOT / "fixtures/logdir/v2-txn-0")))
                      .replace("from_offset=100", "from_offset=2"))
    # v2-txn-0's data records from offset 2 (5, 9 and 12 are transaction markers)
    assert [int(line.split()[0]) for line in printed.splitlines()] == [2, 3, 4, 6, 7, 8, 10, 11]
