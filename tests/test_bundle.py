"""kseg bundle: support bundles of the Kafka corpora, read in place by every command; the
selection (topics, offset and time windows, a group's and a transactional id's coordinator
partition, the metadata log, checkpoints); the manifest; the output rules; and redacted bundles,
which hold none of the original keys, values or header values (searched byte for byte in the
archive and in every decompressed batch) yet verify clean with the same offsets and counts."""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import shutil
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import FIXTURES_LOGDIR, REPO
from kseg.cli.main import main
from kseg.log.decode import scan_entries
from kseg.log.records import batch_records, payload_bytes
from kseg.log.segment import partition_segments, strict_batches
from kseg.ops.bundle import MANIFEST
from kseg.ops.state import coordinator_partition

K39 = REPO / "fixtures" / "kafka-3.9" / "logdir"
K4 = REPO / "fixtures" / "kafka-4" / "logdir"
CLIENTS = REPO / "fixtures" / "kafka-clients" / "4" / "logdir"
CORPORA = [FIXTURES_LOGDIR, K39, K4, CLIENTS]
MIN_SEARCHED = 4  # shorter originals are too likely to occur by chance in any bytes


def run(*args: object) -> tuple[int, str]:
    res = CliRunner().invoke(main, [str(a) for a in args])
    return res.exit_code, res.output


def make(src: Path, out: Path, *extra: object) -> dict:
    code, text = run("bundle", src, "-o", out, "--format", "json", *extra)
    assert code == 0, text
    return json.loads(text)


def members(bundle: Path) -> dict[str, bytes]:
    with tarfile.open(bundle, "r:gz") as t:
        return {m.name: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}  # type: ignore[union-attr]


def manifest(bundle: Path) -> dict:
    return json.loads(members(bundle)[MANIFEST])


def _json(*args: object) -> dict:
    code, text = run(*args)
    assert code == 0, text
    return json.loads(text)


# --------------------------------------------------------------------------- whole bundles


@pytest.mark.parametrize("src", CORPORA, ids=lambda p: str(p.relative_to(REPO)))
def test_bundle_holds_the_log_directory(src: Path, tmp_path: Path) -> None:
    out = tmp_path / "case.tar.gz"
    make(src, out)
    files = members(out)
    m = json.loads(files.pop(MANIFEST))
    assert m["kseg_bundle"] == 1 and m["kseg_version"] and m["redaction"] is None and m["secrets"].startswith("hidden")
    assert {f["name"] for f in m["files"]} == set(files)
    for f in m["files"]:
        data = files[f["name"]]
        assert (len(data), hashlib.sha256(data).hexdigest()) == (f["size"], f["sha256"])
        assert Path(f["source"]).read_bytes() == data, f["name"]
    on_disk = {str(p.relative_to(src.parent)) for p in src.rglob("*") if p.is_file()}
    assert set(files) == on_disk


@pytest.mark.parametrize("src", CORPORA, ids=lambda p: str(p.relative_to(REPO)))
def test_every_command_reads_the_bundle_in_place(src: Path, tmp_path: Path) -> None:
    out = tmp_path / "case.tar.gz"
    make(src, out)
    inside = f"{out}/{src.name}"
    v_src, v_out = _json("verify", "--format", "json", src), _json("verify", "--format", "json", out)
    assert v_out["ok"] and _counts(v_out) == _counts(v_src)
    s_src, s_out = _json("stats", "--format", "json", src), _json("stats", "--format", "json", inside)
    assert [s_out[k] for k in ("records", "batches", "bytes")] == [s_src[k] for k in ("records", "batches", "bytes")]
    for cmd in (["dump", "-r", "--format", "jsonl"], ["find", "--format", "json", "--from-offset", "0"]):
        a, b = run(*cmd, src), run(*cmd, out)
        assert a[0] == b[0] == 0 and len(a[1].splitlines()) == len(b[1].splitlines()), cmd
    assert run("diff", src, inside)[0] == 0
    assert run("txn", "--all", "--now-ms", "1800000000000", out)[0] == 0
    assert run("index", "--check", out)[0] == 0
    if any(p.name.startswith("__") for p in src.iterdir()):
        assert _json("state", "--format", "json", out)["partitions"]


# --------------------------------------------------------------------------- selection


def test_topic_group_transactional_id_and_the_metadata_log(tmp_path: Path) -> None:
    out = tmp_path / "b.tgz"
    group, txn = "my-group", "my-txn"
    doc = make(K4, out, "--topic", "txn", "--group", group, "--transactional-id", txn,
               "--coordinator-partitions", "1")
    sel = doc["selection"]
    assert sel["groups"] == {group: "__consumer_offsets-0"} and sel["transactional_ids"] == {
        txn: "__transaction_state-0"}
    folders = {n.split("/")[1] for n in members(out) if n.count("/") == 2}
    assert folders == {"txn-0", "__consumer_offsets-0", "__transaction_state-0", "__cluster_metadata-0"}
    root = {n.split("/")[1] for n in members(out) if n.count("/") == 1}
    assert {"bootstrap.checkpoint", "recovery-point-offset-checkpoint", "replication-offset-checkpoint",
            "log-start-offset-checkpoint"} <= root
    kraft = [n for n in members(out) if n.startswith("logdir/__cluster_metadata-0/")]
    assert any(n.endswith(".checkpoint") for n in kraft) and any(n.endswith("quorum-state") for n in kraft)


def test_a_group_whose_partition_is_elsewhere_is_named(tmp_path: Path) -> None:
    group = next(g for g in (f"g{i}" for i in range(100)) if coordinator_partition(g) != 0)
    code, text = run("bundle", K39, "-o", tmp_path / "b.tar.gz", "--group", group)
    assert code == 2 and f"__consumer_offsets-{coordinator_partition(group)}" in text
    assert not (tmp_path / "b.tar.gz").exists()
    code, text = run("bundle", K39, "-o", tmp_path / "b.tar.gz", "--topic", "nope")
    assert code == 2 and "nope" in text


def _segments(bundle: Path, folder: str) -> list[str]:
    return sorted(Path(n).name for n in members(bundle) if f"/{folder}/" in n and n.endswith(".log"))


def test_offset_window_takes_the_segments_covering_it(tmp_path: Path) -> None:
    logs = [p.name for p in partition_segments(K39 / "v2-0")]  # 0, 40, 104, 180, 256
    out = tmp_path / "w.tar.gz"
    make(K39, out, "--topic", "v2", "--from-offset", "50", "--to-offset", "104")
    assert _segments(out, "v2-0") == logs[1:3]
    names = {Path(n).name for n in members(out) if "/v2-0/" in n}
    assert {logs[1].replace(".log", s) for s in (".index", ".timeindex")} <= names
    left_out = (logs[0].split(".")[0], logs[3].split(".")[0])
    assert not any(n.startswith(left_out) and not n.endswith(".snapshot") for n in names)  # snapshots: all
    assert {"leader-epoch-checkpoint", "partition.metadata"} <= names
    assert run("verify", out)[0] == 0


def test_time_window_takes_the_segments_covering_it(tmp_path: Path) -> None:
    logs = partition_segments(K39 / "v2-0")
    spans = []
    for p in logs:  # what a segment's batch headers say: first and newest timestamps
        ts = [t for b in strict_batches(p) for t in (b.base_timestamp, b.max_timestamp) if t >= 0]
        spans.append((min(ts), max(ts)))
    lo, hi = spans[1][1], spans[1][1]
    out = tmp_path / "t.tar.gz"
    make(K39, out, "--topic", "v2", "--from-time", str(lo), "--to-time", str(hi))
    expected = [p.name for p, (a, b) in zip(logs, spans) if b >= lo and a <= hi]
    assert logs[1].name in expected and len(expected) < len(logs)
    assert _segments(out, "v2-0") == expected
    out2 = tmp_path / "t2.tar.gz"
    doc = make(K39, out2, "--topic", "v2", "--from-time", "2100-01-01")
    assert _segments(out2, "v2-0") == [] and any("no segment covers" in n for n in doc["notes"])


# --------------------------------------------------------------------------- the output


def test_output_rules(tmp_path: Path) -> None:
    out = tmp_path / "b.tar.gz"
    code, text = run("bundle", FIXTURES_LOGDIR, "-o", tmp_path / "b.tar")
    assert code == 2 and ".tar.gz" in text
    out.write_bytes(b"mine")
    code, text = run("bundle", FIXTURES_LOGDIR, "-o", out)
    assert code == 2 and "--force" in text and out.read_bytes() == b"mine"
    assert run("bundle", FIXTURES_LOGDIR, "-o", out, "--force")[0] == 0 and MANIFEST in members(out)
    code, text = run("bundle", FIXTURES_LOGDIR / "v2-none-0" / "00000000000000000000.log", "-o", tmp_path / "c.tgz")
    assert code == 2 and "log directory" in text
    code, text = run("bundle", FIXTURES_LOGDIR, "-o", "s3://bucket/b.tar.gz")  # never a local "s3:" folder
    assert code == 2 and len(text.splitlines()) == 1 and "one local .tar.gz file" in text, text
    assert not Path("s3:").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.tar.gz"]


def test_one_partition_folder(tmp_path: Path) -> None:
    out = tmp_path / "p.tar.gz"
    make(FIXTURES_LOGDIR / "v2-gzip-0", out)
    assert all(n == MANIFEST or n.startswith("logdir/v2-gzip-0/") for n in members(out))
    assert run("verify", out)[0] == 0


def test_damaged_data_is_taken_as_it_is_but_never_redacted(tmp_path: Path) -> None:
    src = tmp_path / "logs"
    shutil.copytree(FIXTURES_LOGDIR / "v2-none-0", src / "v2-none-0")
    log = partition_segments(src / "v2-none-0")[0]
    data = bytearray(log.read_bytes())
    data[-3] ^= 0x5A
    log.write_bytes(bytes(data))
    out = tmp_path / "b.tar.gz"
    make(src, out)
    assert members(out)[f"logs/v2-none-0/{log.name}"] == bytes(data)
    code, text = run("bundle", src, "-o", tmp_path / "r.tar.gz", "--redact", "values")
    assert code == 1 and "cannot redact a damaged batch" in text
    assert not (tmp_path / "r.tar.gz").exists()


# --------------------------------------------------------------------------- redaction


def _originals(src: Path) -> set[bytes]:
    """Every key, value and header value of the ordinary topics, of the searched length."""
    found = set()
    for p in src.iterdir():
        if not p.is_dir() or p.name.startswith("__"):
            continue
        for log in partition_segments(p):
            for b in strict_batches(log):
                if b.is_v2 and b.is_control:
                    continue
                for r in batch_records(b):
                    found.update(x for x in (r.key, r.value, *(h.value for h in r.headers))
                                 if x is not None and len(x) >= MIN_SEARCHED)
    return found


def _payloads(files: dict[str, bytes]) -> list[bytes]:
    out = []
    for name, data in files.items():
        if name.endswith(".log") and "/__" not in name:
            out += [payload_bytes(b)[0] for b in scan_entries(data, 0, final=True).batches if b.is_compressed]
    return out


def _counts(doc: dict) -> list:
    """(partition/segment, batches, records) of each segment verify read."""
    return sorted(("/".join(f["file"].split("/")[-2:]), f["batches"], f["records"]) for f in doc["files"]
                  if f["kind"] == "log")


@pytest.mark.parametrize("src", CORPORA, ids=lambda p: str(p.relative_to(REPO)))
def test_redacted_bundle_holds_no_original_value(src: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.tar.gz"
    doc = make(src, out, "--redact", "keys", "--redact", "values,headers")
    assert doc["redaction"]["fields"] == ["headers", "keys", "values"]
    originals = _originals(src)
    assert originals
    archive = gzip.decompress(out.read_bytes())
    files = members(out)
    payloads = _payloads(files)
    # File names and paths are not record data (a value "large-0" is also a folder's name).
    names = "\n".join([str(src.resolve()), *files, *(f["source"] for f in json.loads(files[MANIFEST])["files"])])
    searched = {v for v in originals if v.decode("latin-1") not in names}
    assert len(searched) > len(originals) * 0.9
    leaked = sorted(v for v in searched if v in archive or any(v in p for p in payloads))
    assert leaked == [], leaked[:5]
    m = json.loads(files[MANIFEST])
    redacted = {f["name"] for f in m["files"] if f["redacted"]}
    assert redacted and all("/__" not in n and n.endswith((".log", ".index", ".timeindex")) for n in redacted)
    v_src = _json("verify", "--format", "json", src)
    v_out = _json("verify", "--format", "json", out)
    assert v_out["errors"] == 0 == v_src["errors"] and v_out["ok"]
    assert _counts(v_out) == _counts(v_src)
    a = [json.loads(x) for x in run("dump", "-r", "--format", "jsonl", src)[1].splitlines()]
    b = [json.loads(x) for x in run("dump", "-r", "--format", "jsonl", out)[1].splitlines()]
    assert [(x.get("offset"), x.get("timestamp"), x.get("type")) for x in a] == [
        (x.get("offset"), x.get("timestamp"), x.get("type")) for x in b]


def test_a_given_key_hashes_alike_across_bundles(tmp_path: Path) -> None:
    one, two = tmp_path / "1.tar.gz", tmp_path / "2.tar.gz"
    for out in (one, two):
        doc = make(FIXTURES_LOGDIR, out, "--redact", "values", "--redact-key", "k")
        assert doc["redaction"]["key"].startswith("given")
    names = [n for n in members(one) if n.endswith(".log")]
    assert all(members(one)[n] == members(two)[n] for n in names)
    three = tmp_path / "3.tar.gz"
    make(FIXTURES_LOGDIR, three, "--redact", "values")
    assert any(members(one)[n] != members(three)[n] for n in names)


def test_redact_usage(tmp_path: Path) -> None:
    code, text = run("bundle", FIXTURES_LOGDIR, "-o", tmp_path / "b.tgz", "--redact", "passwords")
    assert code == 2 and "keys, values, headers" in text
    code, text = run("bundle", FIXTURES_LOGDIR, "-o", tmp_path / "b.tgz", "--redact-key", "k")
    assert code == 2 and "--redact" in text
    assert list(tmp_path.iterdir()) == []


def test_text_report(tmp_path: Path) -> None:
    code, text = run("bundle", FIXTURES_LOGDIR, "-o", tmp_path / "b.tgz", "--redact", "values")
    assert code == 0
    assert "(redacted)" in text and text.splitlines()[-1].endswith(")") and "values redacted" in text
    assert "secrets hidden" in text
    assert io.StringIO(text).readline().startswith("logdir/")


# --------------------------------------------------------------------------- the metadata log's secrets


def test_metadata_secrets_are_hidden_unless_asked(tmp_path: Path) -> None:
    """fixtures/record-types/4 holds SCRAM credentials, delegation tokens and configurations: by
    default the bundle's metadata log holds none of their secret bytes, verifies clean and
    replays; --show-secrets takes it byte for byte."""
    from kseg.decoders.secrets import SECRET_FIELDS

    src = REPO / "fixtures" / "record-types" / "4"
    log = partition_segments(src / "__cluster_metadata-0")[0]
    code, text = run("dump", "--decode", "auto", "--format", "jsonl", "--show-secrets", log)
    assert code == 0
    doc = [json.loads(x) for x in text.split("\n") if x]
    secrets = set()
    for line in doc:
        v = (line.get("value_decoded") or {})
        for f in SECRET_FIELDS.get(v.get("schema"), ()):
            raw = v["data"].get(f)
            if raw:
                secrets.add(base64.b64decode(raw) if f != "tokenId" else raw.encode())
    # The corpus writes one string into many fields: a secret that is also a name is not searched for.
    code, text = run("dump", "--decode", "auto", "--format", "jsonl", log)
    public = {v.encode() for x in text.split("\n") if x for v in _strings(json.loads(x).get("value_decoded"))}
    secrets = {x for x in secrets if len(x) >= MIN_SEARCHED and x not in public}
    assert secrets
    out = tmp_path / "s.tar.gz"
    m = make(src, out)
    name = f"4/__cluster_metadata-0/{log.name}"
    files = members(out)
    assert [x for x in secrets if x in files[name]] == []
    assert next(f for f in m["files"] if f["name"] == name)["redacted"]
    assert run("verify", out)[0] == 0
    hidden_state = _json("state", "--format", "json", "--show-secrets", out)
    assert hidden_state["partitions"]
    shown = tmp_path / "shown.tar.gz"
    m = make(src, shown, "--show-secrets")
    assert members(shown)[name] == log.read_bytes() and m["secrets"].startswith("kept")


def _strings(v: object) -> list[str]:
    if isinstance(v, str):
        return [v]
    if isinstance(v, dict):
        return [s for x in v.values() for s in _strings(x)]
    if isinstance(v, list):
        return [s for x in v for s in _strings(x)]
    return []


def test_a_folder_given_as_dot_is_named_by_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO / "fixtures" / "record-types" / "4" / "__cluster_metadata-0")
    out = tmp_path / "m.tgz"
    doc = make(Path("."), out)
    assert [f["name"] for f in doc["files"]] == ["4/__cluster_metadata-0/00000000000000000000.log"]
    assert doc["files"][0]["redacted"]  # recognised as the metadata log by its folder's name: secrets hidden
