"""README's "Python API" example runs as written (on the shipped fixtures instead of a broker's files)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_python_api_example_runs(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Python API"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    code = (code.replace('"t-0/00000000000000000000.log"', repr(str(ROOT / "fixtures/logdir/v2-txn-0/00000000000000000000.log")))
            .replace('"/var/lib/kafka"', repr(str(ROOT / "fixtures/logdir"))))
    out = io.StringIO()
    scope: dict = {}
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), scope)
    assert out.getvalue().count("\n") > 10
    import kseg

    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(scope["raw"])
    [batch] = list(kseg.open_segment(seg).batches())
    [record] = kseg.batch_records(batch)
    assert (batch.codec_name, record.key, record.value, record.headers) == ("gzip", b"k", b"v", (kseg.Header("h", b"x"),))
