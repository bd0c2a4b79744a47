"""Run one fuzz target under atheris (libFuzzer for Python and C extensions).

    python tests/fuzz/run.py TARGET [libFuzzer options and corpus folders]

With ``KSEG_SPEEDUPS_SO`` set, the C accelerator is loaded from that file (a build
with ``-fsanitize=fuzzer-no-link``, plus ASan/UBSan: see ``make fuzz-build``) so that
libFuzzer sees the C code's coverage; the ASan runtime merged with libFuzzer must then
be LD_PRELOADed (atheris takes the preloaded libFuzzer). The Python code of kseg is
instrumented too, so the pure-Python twins and decoders guide the search as well.
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    target = sys.argv.pop(1)
    sys.path.insert(0, HERE)
    import sanitize  # noqa: F401  (loads KSEG_SPEEDUPS_SO when set)
    import atheris

    with atheris.instrument_imports(include=["kseg", "targets"]):
        import kseg.log.fast
        import targets

        import kseg.codecs.builtin, kseg.codecs.gzip, kseg.codecs.zstd, kseg.companions.read, kseg.decoders  # noqa: E401,F401
        import kseg.log.encode  # noqa: F401
    if os.environ.get("KSEG_SPEEDUPS_SO") and not kseg.log.fast.ACCELERATED:
        sys.exit("run.py: the accelerator did not load")
    fn = targets.TARGETS[target]
    atheris.Setup(sys.argv, fn)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
