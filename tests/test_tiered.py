"""Tiered storage (KIP-405) layouts: the segments, indexes and per-segment epoch files that a
remote storage manager copies to its store, read like a broker's log directory.

Two layouts are built from ``fixtures/logdir`` with realistic names:

* Kafka's ``LocalTieredStorage`` (its ``storage`` test sources): ``<topic>-<n>-<topic id>/``
  holding ``<start offset>-<segment id>.log|.index|.timeindex|.txnindex|.snapshot|
  .leader_epoch_checkpoint`` (the offset bare as in older sources; 4.3.1 writes 20 digits);
* Aiven's plugin with compression and encryption off: ``<topic>-<topic id>/<n>/`` holding
  ``<20-digit start offset>-<segment id>.log|.index|...|.leader-epoch-checkpoint``.

``kseg verify`` and ``kseg dump`` over either must say what they say over the broker's folders,
once the names are mapped back; also from the object store.
"""

from __future__ import annotations

import base64
import json
import shutil
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from kseg.cli.main import main
from kseg.log.segment import base_offset_of, parse_partition_dir, partition_segments, tiered_segment_id

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures" / "logdir"
INDEXES = (".index", ".timeindex", ".txnindex")


def kafka_uuid(seed: str) -> str:
    """A Kafka Uuid's text form (URL-safe base64 of 16 bytes, unpadded), fixed by ``seed``."""
    return base64.urlsafe_b64encode(uuid.uuid5(uuid.NAMESPACE_URL, seed).bytes).decode().rstrip("=")


def build_tiered(root: Path, style: str) -> dict[str, str]:
    """``fixtures/logdir`` copied as a remote store of ``style`` ("local" or "aiven") under
    ``root``; returns each copied file's path mapped to the original's."""
    names: dict[str, str] = {}
    for part in sorted(p for p in FIXTURES.iterdir() if p.is_dir()):
        topic, n = parse_partition_dir(part.name)
        topic_id = kafka_uuid(topic)
        folder = root / (f"{topic}-{n}-{topic_id}" if style == "local" else f"{topic}-{topic_id}/{n}")
        folder.mkdir(parents=True)
        epochs = part / "leader-epoch-checkpoint"
        for log in partition_segments(part):
            base = base_offset_of(log)
            offset = str(base) if style == "local" else f"{base:020d}"
            stem = f"{offset}-{kafka_uuid(f'{part.name}/{base}')}"
            for suffix in (".log",) + INDEXES:
                src = log.with_suffix(suffix)
                if src.is_file():
                    shutil.copyfile(src, folder / (stem + suffix))
                    names[str(folder / (stem + suffix))] = str(src)
            if epochs.is_file():
                epoch_suffix = ".leader_epoch_checkpoint" if style == "local" else ".leader-epoch-checkpoint"
                shutil.copyfile(epochs, folder / (stem + epoch_suffix))
    return names


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def segment_reports(out: str, names: dict[str, str] | None = None, prefix: tuple[str, str] | None = None) -> list:
    """verify's JSON reports of segments and their indexes, paths mapped back to the originals."""
    def back(path: str) -> str:
        path = path if prefix is None else path.replace(*prefix)
        return names.get(path, path) if names is not None else path

    reports = []
    for r in json.loads(out)["files"]:
        path = back(r["file"])
        if Path(path).suffix not in (".log",) + INDEXES or (names is not None and not path.startswith(str(FIXTURES))):
            continue
        r = dict(r, file=path, problems=[dict(p, file=back(p["file"])) for p in r["problems"]])
        reports.append(r)
    return sorted(reports, key=lambda r: r["file"])


def test_names():
    assert base_offset_of("0-oAtiIQ95REujbuzNd_lkLQ.log") == 0
    assert base_offset_of("1234-oAtiIQ95REujbuzNd_lkLQ.timeindex") == 1234
    assert base_offset_of("00000000000000001234-tqimKeZwStOEOwRzT3L5oQ.log") == 1234
    assert tiered_segment_id("00000000000000001234-tqimKeZwStOEOwRzT3L5oQ.log") == "tqimKeZwStOEOwRzT3L5oQ"
    assert base_offset_of("12-short.log") is None and tiered_segment_id("00000000000000000000.log") is None
    assert parse_partition_dir("topic-3-5fEBmixCR5-dMntYSLIr1g") == ("topic", 3)
    assert parse_partition_dir("my-topic-0-5fEBmixCR5-dMntYSLIr-1") == ("my-topic", 0)  # id ending in -<digits>
    assert parse_partition_dir("7", "topic-MWJ6FHTfRYy67jzwZdeqSQ") == ("topic", 7)
    assert parse_partition_dir("7", "topic") is None and parse_partition_dir("t-0") == ("t", 0)


@pytest.mark.parametrize("style", ["local", "aiven"])
@pytest.mark.parametrize("quick", [False, True])
def test_verify_matches_the_broker_folders(tmp_path, style, quick):
    names = build_tiered(tmp_path, style)
    flags = ["--format", "json", "-v"] + (["--quick"] if quick else [])
    plain = cli("verify", FIXTURES, *flags)
    tiered = cli("verify", tmp_path, *flags)
    assert tiered.exit_code == plain.exit_code, tiered.output
    want = segment_reports(plain.output)
    got = segment_reports(tiered.output, names)
    assert got == want and len(got) == len(names)
    epochs = [r for r in json.loads(tiered.output)["files"] if "epoch" in r["file"]]
    assert epochs and all(r["ok"] and r["kind"] != "log" for r in epochs)


@pytest.mark.parametrize("style", ["local", "aiven"])
def test_dump_matches_the_broker_folders(tmp_path, style):
    names = build_tiered(tmp_path, style)
    for copy, original in names.items():
        if copy.endswith(".log"):
            a = cli("dump", copy, "--format", "kafka")
            b = cli("dump", original, "--format", "kafka")
            assert a.exit_code == b.exit_code == 0
            assert a.output.replace(copy, original) == b.output


def test_transformed_objects_are_named_not_misread(tmp_path):
    """Aiven's plugin may compress (zstd) or encrypt (AES-GCM) a segment chunk by chunk; its
    ``.rsm-manifest`` says so. Such a ``.log`` is reported as not read, not as corrupt."""
    names = build_tiered(tmp_path, "aiven")
    logs = sorted(c for c in names if c.endswith(".log"))
    manifest = Path(logs[0]).with_suffix(".rsm-manifest")
    manifest.write_text(json.dumps({"version": "1", "chunkIndex": {}, "segmentIndexes": {}, "compression": False}))
    assert cli("verify", tmp_path).exit_code == 0  # untransformed: read as it is
    manifest.write_text(json.dumps({"version": "1", "chunkIndex": {}, "segmentIndexes": {}, "compression": True,
                                    "encryption": {"dataKey": "x", "aad": "y"}}))
    r = cli("verify", tmp_path, "--format", "json")
    assert r.exit_code == 1
    [bad] = [f for f in json.loads(r.output)["files"] if not f["ok"]]
    assert bad["file"] == logs[0] and bad["batches"] == 0
    assert "compressed and encrypted" in bad["problems"][0]["message"]


def test_tiered_snapshot_is_not_bounded_by_its_name(tmp_path):
    """A tiered producer snapshot is named by its segment's start offset but taken at its
    end: its producers' last offsets lie past the name's offset, and that is no error."""
    from kseg.companions.check import check_producer_snapshot

    snaps = sorted((REPO / "fixtures").rglob("*.snapshot"))
    if not snaps:
        pytest.skip("no producer snapshot among the fixtures")
    src = snaps[0]
    copy = tmp_path / f"0-{kafka_uuid('snap')}.snapshot"
    shutil.copyfile(src, copy)
    errors = [f for f in check_producer_snapshot(copy) if f.severity == "error"]
    assert not errors


def test_from_the_object_store(s3_env, object_store, tmp_path):
    for style in ("local", "aiven"):
        root = tmp_path / style
        names = build_tiered(root, style)
        url = object_store.upload(root, "kseg-test", f"tiered-{style}")
        local = cli("verify", root, "--format", "json", "-v")
        remote = cli("verify", url, "--format", "json", "-v")
        assert remote.exit_code == local.exit_code == 0, remote.output
        assert segment_reports(remote.output, names, (url, str(root))) == segment_reports(local.output, names)
        copy = next(c for c in names if c.endswith(".log"))
        r = cli("dump", copy.replace(str(root), url), "--format", "kafka")
        assert r.exit_code == 0 and r.output.replace(url, str(root)) == cli("dump", copy, "--format", "kafka").output


def test_spark_verify_and_dump(tmp_path):
    """``kseg spark verify|dump`` over Aiven's layout print what ``kseg verify|dump`` print."""
    pytest.importorskip("pyspark")
    import subprocess
    import sys

    build_tiered(tmp_path, "aiven")
    kseg = str(Path(sys.executable).with_name("kseg"))
    part = next(p for p in tmp_path.glob("v2-txn-*/0"))
    for args in (["verify", str(tmp_path)], ["dump", "--format", "kafka", str(part)]):
        plain = subprocess.run([kseg, *args], capture_output=True, text=True)
        spark = subprocess.run([kseg, "spark", args[0], "--master", "local[1]", *args[1:]],
                               capture_output=True, text=True)
        assert (spark.returncode, spark.stdout) == (plain.returncode, plain.stdout), spark.stderr[-2000:]
        assert plain.returncode == 0 and plain.stdout
