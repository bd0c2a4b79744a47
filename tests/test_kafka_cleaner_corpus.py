"""``kseg compact`` against the broker's own LogCleaner, on files real brokers wrote (no Java needed).

``fixtures/kafka-cleaner/<release>/`` holds compacted partitions as a broker
wrote them with its cleaner off (``before/``), the same partitions after the
broker's cleaner ran on them (``after/``), and ``manifest.json`` with the
topic settings and the wall-clock window in which the cleaning happened
(``tests/kafka/cleaning.py`` writes them: ``make kafka-cleaner-corpus``).

``kseg compact --single-pass`` of ``before/`` with those settings must give
``after/``: the same segment files (the cleaner's grouping), per batch the same
offsets, attributes, producer fields, sequences, sizes and positions, the same
records, the same ``.index``/``.timeindex``/``.txnindex`` bytes, delete horizons
set where the broker set them and inside the window, for a clock at either end
of the window; with the cleaner's own clock (read back from the horizons it
stamped) every ``.log`` file is byte-identical.

A third cleaning (``before3/``, ``after3/``, ``manifest.json:third``) has
more distinct keys than the broker's smallest dedupe buffer (1 MiB) maps: the
broker cleans it over several cleanings, kseg in as many key-map rounds.

Beside the plain topics: one per message format whose producers use every
codec (none, gzip, snappy, lz4, zstd; v1 without zstd), each on keys of its
own, so that the cleaner rebuilds batches of each codec (zstd byte for byte;
snappy within ``checks.CODEC_OUTPUT_MAY_DIFFER``), one with ``min.compaction.lag.ms`` (old records
cleaned, the segments from the first recent record on left as they are) and
LogAppendTime topics (v2, and on 3.9 v1).

A second cleaning (``before2/``, ``after2/``, ``manifest.json:second``) runs on
a topic with a short ``delete.retention.ms``: new data made it dirty again
after the first cleaning's delete horizons had passed, so the broker removed
those tombstones and stamped horizons on the transaction markers whose data the
first cleaning had removed (KIP-534's second step).

Where kseg differs today the case is marked ``xfail(strict=True)`` from the one
table ``KNOWN_DIFFERENCES`` below.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "kafka"))

import cleaning  # noqa: E402

RELEASES = sorted(p.name for p in cleaning.CORPUS.iterdir() if (p / "manifest.json").is_file()) \
    if cleaning.CORPUS.is_dir() else []
CLOCKS = ("window-start", "window-end", "cleaner")

#: (release, cleaning, partition, clock) -> why kseg differs from the broker's cleaner (empty: it matches everywhere)
KNOWN_DIFFERENCES: dict[tuple[str, str, str], str] = {
}


def _cases() -> list:
    out = []
    for release in RELEASES:
        manifest = json.loads((cleaning.CORPUS / release / "manifest.json").read_text())
        for stage, m in cleaning.stages(manifest):
            for part in m["partitions"]:
                for clock in CLOCKS:
                    cleaning_no = stage or "1"
                    reason = KNOWN_DIFFERENCES.get((release, cleaning_no, part, clock))
                    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
                    out.append(pytest.param(release, stage, part, clock, marks=marks,
                                            id=f"{release}:cleaning{cleaning_no}:{part}:{clock}"))
    return out


def test_corpus_present() -> None:
    assert {"3.9", "4"} <= set(RELEASES)


@pytest.mark.parametrize(("release", "stage", "partition", "clock"), _cases())
def test_compact_like_the_broker_cleaner(release: str, stage: str, partition: str, clock: str,
                                         tmp_path: Path) -> None:
    root = cleaning.CORPUS / release
    manifest = dict(cleaning.stages(json.loads((root / "manifest.json").read_text())))[stage]
    now = {"window-start": manifest["window_ms"][0], "window-end": manifest["window_ms"][1],
           "cleaner": "cleaner"}[clock]
    diffs = cleaning.compare(root / f"before{stage}", root / f"after{stage}", tmp_path, manifest, now)[partition]
    assert not diffs, f"{len(diffs)} differences from Kafka {manifest['kafka_version']}'s cleaner:\n" + "\n".join(diffs)


def test_corpus_exercises_the_cleaner() -> None:
    """The corpus covers what it claims: grouping, removed records, delete horizons, aborted data, markers."""
    for release in RELEASES:
        root = cleaning.CORPUS / release
        manifest = json.loads((root / "manifest.json").read_text())
        part = root / "after" / "cv2-0"
        before = sorted(p.name for p in (root / "before" / "cv2-0").glob("*.log"))
        after = sorted(p.name for p in part.glob("*.log"))
        assert len(after) < len(before), "the cleaner grouped no segments"
        batches, records = cleaning._dump(part)
        assert any(b.get("delete_horizon_ms") for b in batches), "no delete horizon stamped"
        assert any(b["is_control"] for b in batches) and any(b["is_transactional"] for b in batches)
        assert any(r.get("value") is None and not r.get("control") for r in records), "no tombstone kept"
        n_before = len(cleaning._dump(root / "before" / "cv2-0")[1])
        assert len(records) < n_before / 2, "the cleaner removed little"
        assert cleaning.cleaner_clock(root / "before", root / "after", manifest, ["cv2-0"]) is not None
        # min.compaction.lag.ms: the cleaning stopped at the first segment holding a recent record,
        # which is kept as it was, duplicates and all
        lag = f"{cleaning.LAG_TOPIC}-0"
        end = manifest["checkpoint"][lag]
        assert 0 < end < cleaning._active_base(root / "before" / lag)
        for seg in (root / "before" / lag).glob("*.log"):
            if int(seg.stem) >= end:
                assert seg.read_bytes() == (root / "after" / lag / seg.name).read_bytes()
        assert len(cleaning._dump(root / "after" / lag)[1]) < len(cleaning._dump(root / "before" / lag)[1])
        # LogAppendTime: every batch carries the broker's clock, before and after cleaning
        for topic in cleaning.LAT_TOPICS:
            if f"{topic}-0" in manifest["partitions"]:
                for stage in ("before", "after"):
                    batches = cleaning._dump(root / stage / f"{topic}-0")[0]
                    assert batches and all(b["timestamp_type"] == "LogAppendTime" for b in batches)
        # every compression codec: the cleaner rebuilt (recompressed) batches of it, keeping part of their records
        for topic, codecs in cleaning.CODEC_TOPICS.items():
            if f"{topic}-0" in manifest["partitions"]:
                was = {(b["base_offset"], b["crc"]) for b in cleaning._dump(root / "before" / f"{topic}-0")[0]}
                rebuilt = {b["codec"] for b in cleaning._dump(root / "after" / f"{topic}-0")[0]
                           if (b["base_offset"], b["crc"]) not in was}
                assert {c for c in codecs if c} <= rebuilt, f"{topic}: no rebuilt batch of {codecs}"
        # the second cleaning removes the tombstones the first stamped, and stamps the markers whose
        # transactions' data the first removed
        second = manifest["second"]
        part = second["partitions"][0]
        b2, r2 = cleaning._dump(root / "before2" / part)
        a2, ra2 = cleaning._dump(root / "after2" / part)
        earlier = cleaning._horizons(root / "before2" / part)
        assert earlier and not earlier & cleaning._horizons(root / "after2" / part), "stamped tombstones stay"
        assert sum(r["value"] is None for r in ra2) < sum(r["value"] is None for r in r2)
        assert any(b["is_control"] and b.get("delete_horizon_ms") for b in a2)
        assert not any(b["is_control"] and b.get("delete_horizon_ms") for b in b2)


@pytest.mark.parametrize("release", RELEASES)
def test_key_map_rounds_are_needed(release: str, tmp_path: Path) -> None:
    """The third cleaning's dirty range holds more distinct keys than the broker's dedupe buffer: the
    broker cleaned it in several cleanings, kseg in as many rounds; one round alone does not get there."""
    root = cleaning.CORPUS / release
    third = json.loads((root / "manifest.json").read_text())["third"]
    part = third["partitions"][0]
    keys = {r["key"] for r in cleaning._dump(root / "before3" / part)[1]}
    assert len(keys) > int(third["settings"]["key_map_bytes"] // 24 * 0.9)
    rc, out, err = cleaning.checks.run_kseg(
        ["compact", str(root / "before3" / part), "--dry-run", "--format", "json", "--now-ms",
         str(third["window_ms"][0]), "--key-map-bytes", str(third["settings"]["key_map_bytes"]),
         "--segment-bytes", str(third["settings"]["segment_bytes"])], cwd=tmp_path)
    assert rc == 0, err.decode()
    assert json.loads(out)["rounds"] >= 2
    one = {**third, "settings": {**third["settings"], "single_pass": True}}
    cleaning.kseg_compact(root / "before3", tmp_path / "one", one)
    assert cleaning.compare_partition(tmp_path / "one" / part, root / "after3" / part, one), \
        "one round already gives the broker's result: the scenario does not fill the key map"


def test_compact_index_interval_bytes(tmp_path: Path) -> None:
    """``--index-interval-bytes`` (the topic's index.interval.bytes) spaces the written index entries."""
    root = cleaning.CORPUS / "4"
    manifest = json.loads((root / "manifest.json").read_text())
    cleaning.kseg_compact(root / "before", tmp_path / "fine", manifest)
    coarse = {**manifest, "settings": {**manifest["settings"], "index_interval_bytes": 4096}}
    cleaning.kseg_compact(root / "before", tmp_path / "coarse", coarse)
    active = max((root / "before" / "cv2-0").glob("*.log")).with_suffix(".index").name
    assert (tmp_path / "fine" / "cv2-0" / active).read_bytes() == (root / "after" / "cv2-0" / active).read_bytes()
    assert len((tmp_path / "fine" / "cv2-0" / active).read_bytes()) > 0
    assert (tmp_path / "coarse" / "cv2-0" / active).read_bytes() == b""


@pytest.mark.parametrize("release", RELEASES)
def test_default_mode_is_one_cleaning_ahead_on_markers(release: str, tmp_path: Path) -> None:
    """Without ``--single-pass`` kseg cleans until nothing changes: it also stamps delete horizons on the
    transaction markers whose data the same run removed, which the broker does at its next cleaning.
    That is the only difference (the stamped markers grow by their timestamp delta, later batches move)."""
    root = cleaning.CORPUS / release
    manifest = json.loads((root / "manifest.json").read_text())
    stamped = 0
    for stage, m in cleaning.stages(manifest):
        for part in m["partitions"]:
            out = tmp_path / f"out{stage}"
            cleaning.kseg_compact(root / f"before{stage}", out, {**m, "partitions": [part]}, single_pass=False)
            want = root / f"after{stage}" / part
            control = {b["base_offset"] for b in cleaning._dump(want)[0] if b.get("is_control")}
            unplaced = [[{k: v for k, v in r.items() if k != "batch_position"} for r in cleaning._dump(d)[1]]
                        for d in (out / part, want)]
            assert unplaced[0] == unplaced[1], "the same records, only at other positions"
            earlier = cleaning._horizons(root / f"before{stage}" / part)
            for d in cleaning.compare_partition(out / part, want, m, False, earlier):
                if ": delete horizon broker None kseg " in d or ": size broker 78 kseg " in d:
                    assert int(d.split("batch ")[1].split("..")[0]) in control, d
                    stamped += "delete horizon" in d
                else:
                    assert ": position broker " in d or ": record " in d or d.endswith("not the same"), d
    assert stamped > 0
