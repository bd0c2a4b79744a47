"""``kseg spark`` under spark-submit (which wants a Python file, not a console script).

    spark-submit --master yarn [...] "$(python -c 'import kseg.spark.submit as s; print(s.__file__)')" \\
        verify --report /shared/report.parquet /shared/kafka-logs

Arguments are those of ``kseg spark``; the master and the executors' settings come
from spark-submit. Exit codes are the command's (0, 1 data problems, 2 unusable input).
"""

from __future__ import annotations

import sys

from kseg.cli.main import main


def run(argv: list[str] | None = None) -> None:
    main(["spark", *(sys.argv[1:] if argv is None else argv)], prog_name="kseg")


if __name__ == "__main__":
    run()
