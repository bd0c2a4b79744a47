"""Live tier: the repository's pre-commit hook run by pre-commit itself on a sample repository.

A git repository in a temporary folder holds a fixture partition (``fixtures/logdir/v2-txn-0``);
``pre-commit try-repo <this checkout> kseg-verify --files ...`` installs kseg the way a user's
pre-commit does (a virtualenv of its own, ``pip install`` of this checkout, its dependencies
from the package index, pinned by ``constraints.txt``) and runs the hook: it passes on the
fixture as it is, and fails on the same fixture with one byte of a record changed, naming the
file and the CRC that no longer matches.

Needs ``pre-commit`` (on PATH or beside this Python) and the package index; skipped without
``pre-commit``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "fixtures" / "logdir" / "v2-txn-0"


def _pre_commit() -> str | None:
    beside = Path(sys.executable).with_name("pre-commit")
    return str(beside) if beside.exists() else shutil.which("pre-commit")


PRE_COMMIT = _pre_commit()
if PRE_COMMIT is None:
    pytest.skip("pre-commit hook tier skipped: pre-commit is not installed", allow_module_level=True)
if shutil.which("git") is None:
    pytest.skip("pre-commit hook tier skipped: git is not on PATH", allow_module_level=True)


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("pre-commit")
    repo = root / "sample"
    shutil.copytree(FIXTURE, repo / "fixtures" / "t-0")
    (repo / "README.md").write_text("fixtures\n")
    env = {**os.environ, "PRE_COMMIT_HOME": str(root / "cache"), "PIP_CONSTRAINT": str(REPO / "constraints.txt"),
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    env.pop("PYTHONPATH", None)  # the hook runs the kseg pre-commit installed, not this checkout's modules
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-q", "-m", "fixtures"]):
        subprocess.run(cmd, cwd=repo, env=env, check=True, capture_output=True)
    return repo, env


def _files(repo: Path) -> list[str]:
    return sorted(str(p.relative_to(repo)) for p in (repo / "fixtures" / "t-0").iterdir())


def _hook(repo: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([PRE_COMMIT, "try-repo", str(REPO), "kseg-verify", "--verbose", "--files", *_files(repo)],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=600)


def test_the_hook_passes_on_a_clean_fixture_and_fails_on_a_damaged_one(sample: tuple[Path, dict[str, str]]) -> None:
    repo, env = sample
    clean = _hook(repo, env)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "kseg verify" in clean.stdout and "Passed" in clean.stdout
    assert "file(s) checked, 0 with errors" in clean.stdout, clean.stdout  # --verbose: kseg's own summary
    log = repo / "fixtures" / "t-0" / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[-3] ^= 0x20  # a byte of the last batch's last record: its CRC no longer matches
    log.write_bytes(bytes(data))
    damaged = _hook(repo, env)
    assert damaged.returncode == 1, damaged.stdout + damaged.stderr
    assert "Failed" in damaged.stdout and "00000000000000000000.log" in damaged.stdout
    assert "crc mismatch" in damaged.stdout, damaged.stdout
