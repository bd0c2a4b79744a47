"""The fuzz targets (tests/fuzz/targets.py) over their committed seeds and every past
finding (tests/fuzz/findings/<target>/: each input the fuzzer stopped on, kept as a
regression test once fixed), with the accelerator as built. The coverage-guided runs
are `make fuzz-short` (CI) and `make fuzz-long` (by hand).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

FUZZ = Path(__file__).parent / "fuzz"
sys.path.insert(0, str(FUZZ))

import targets  # noqa: E402

CASES = sorted(
    (kind, t, p)
    for kind in ("corpus", "findings")
    for t in targets.TARGETS
    for p in sorted((FUZZ / kind / t).glob("*"))
)


@pytest.mark.parametrize("kind,target,path", CASES, ids=[f"{k}/{t}/{p.name}" for k, t, p in CASES])
def test_fuzz_input(kind: str, target: str, path: Path) -> None:
    targets.TARGETS[target](path.read_bytes())


def test_every_target_has_seeds() -> None:
    for t in targets.TARGETS:
        assert any((FUZZ / "corpus" / t).iterdir()), t


def test_legacy_set_reports_framing_before_a_compressed_inner_message() -> None:
    """Fuzz finding 1: legacy_set (C) reported a compressed inner message before a framing
    error further on; the reference scans the whole set first."""
    from kseg.errors import TruncatedError
    from kseg.log import fast
    from kseg.log.encode import build_legacy_message

    wrapper = targets._legacy_wrapper(1, 0, 0, 1)
    inner = build_legacy_message(0, 1, 1, 0, None, b"x") + build_legacy_message(1, 1, 0, 0, None, b"y")[:-1]
    for accelerated in (False, True):
        if accelerated and fast._speedups is None:
            continue
        with pytest.raises(TruncatedError):
            saved, fast.ACCELERATED = fast.ACCELERATED, accelerated
            try:
                fast.decode_legacy_wrapper(wrapper, inner)
            finally:
                fast.ACCELERATED = saved


def test_legacy_encoder_refuses_a_timestamp_past_int64_with_a_kseg_error() -> None:
    """Fuzz finding 2: build_legacy_message_set let struct.error (Python) and OverflowError (C)
    escape for a timestamp or offset past int64; encode_v2_records already said InputError."""
    from kseg.errors import InputError
    from kseg.log import fast
    from kseg.log.encode import build_legacy_message_set
    from kseg.model import make_record

    for rec in (make_record(0, 1 << 63, None, b"v", magic=1), make_record(1 << 63, 0, None, b"v", magic=1)):
        for accelerated in (False, True):
            if accelerated and fast._speedups is None:
                continue
            saved, fast.ACCELERATED = fast.ACCELERATED, accelerated
            try:
                with pytest.raises(InputError):
                    build_legacy_message_set([rec], magic=1)
            finally:
                fast.ACCELERATED = saved
