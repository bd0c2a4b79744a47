"""``kseg verify`` reports for CI: JUnit XML, SARIF 2.1.0 and GitHub Actions workflow commands.

One test case (JUnit) or artifact (SARIF) per file checked, one failure or result per problem,
with the file and the byte position. Names and messages from the data are escaped
(``kseg.printable``) first: XML 1.0 cannot carry most control characters, and a workflow
command must stay on one line.
"""

from __future__ import annotations

from typing import Any, TextIO
from urllib.parse import quote

from kseg.errors import expected_found
from kseg.findings import ERROR
from kseg.printable import printable
from kseg.render.jsonout import dumps

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
__all__ = ["SARIF_SCHEMA", "verify_github", "verify_junit", "verify_sarif", "write_ci_report"]


def _what(p: Any) -> str:
    """A problem without its file: ``at byte N (where): message: expected X, found Y``."""
    loc = []
    if p.position is not None:
        loc.append(f"at byte {p.position}")
    if p.where:
        loc.append(f"({p.where})")
    head = " ".join(loc)
    text = f"{p.message}{expected_found(p.expected, p.found)}"
    return printable(f"{head}: {text}" if head else text)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version  # stdlib, late: only SARIF names it

    try:
        return version("kseg")
    except PackageNotFoundError:  # run from a source tree
        return "unknown"


def verify_junit(report: Any) -> str:
    """JUnit XML: a testsuite of one testcase per file; a ``failure`` per error (``error`` when the
    file could not be read), the notes as ``system-out``. Only the attributes the common JUnit
    schema (``junit-10.xsd``, which pytest's own xunit2 output follows) allows: the file is the
    testcase's name, ``skipped`` is on the testsuite alone."""
    from xml.etree import ElementTree as ET  # only for this format: loading it is a slice of every verify's start-up

    cases = []
    failures = errors = 0
    for f in report.files:
        case = ET.Element("testcase", classname=f"kseg.verify.{f.kind}", name=printable(f.path), time="0")
        notes = []
        for p in f.problems:
            if p.severity != ERROR:
                notes.append(f"{p.severity}: {_what(p)}")
                continue
            unreadable = p.check == "unreadable"
            el = ET.SubElement(case, "error" if unreadable else "failure", type=p.check, message=_what(p))
            el.text = printable(str(p))
            errors += unreadable
            failures += not unreadable
        if notes:
            ET.SubElement(case, "system-out").text = "\n".join(notes)
        cases.append(case)
    counts = {"tests": str(len(cases)), "failures": str(failures), "errors": str(errors)}
    root = ET.Element("testsuites", name="kseg verify", **counts)
    suite = ET.SubElement(root, "testsuite", name="kseg verify", **counts, skipped="0", time="0")
    suite.extend(cases)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _uri(path: str) -> str:
    """A file name as a SARIF URI: ``file://`` for an absolute path, a relative reference for
    a relative one (an ``s3://`` or other URL as it is)."""
    if "://" in path:
        return path
    text = quote(path.replace("\\", "/").encode("utf-8", "surrogateescape"), safe="/@!$&'()*+,;=-._~")
    return "file://" + text if path.startswith("/") else text


def verify_sarif(report: Any) -> dict:
    """A SARIF 2.1.0 log: one run of the tool ``kseg``, a rule per check, a result per problem
    located by byte offset in its file (files without problems listed as artifacts)."""
    rules: dict[str, int] = {}
    results = []
    artifacts = []
    for f in report.files:
        artifacts.append({"location": {"uri": _uri(f.path)}, "length": f.bytes if f.kind == "log" else -1})
        for p in f.problems:
            if p.check not in rules:
                rules[p.check] = len(rules)
            location: dict = {"artifactLocation": {"uri": _uri(p.file or f.path)}}
            if p.position is not None:
                location["region"] = {"byteOffset": p.position}
            results.append({
                "ruleId": p.check, "ruleIndex": rules[p.check],
                "level": "error" if p.severity == ERROR else "note",
                "message": {"text": _what(p)},
                "locations": [{"physicalLocation": location}],
            })
    driver = {"name": "kseg", "version": _version(),
              "rules": [{"id": check, "name": check, "shortDescription": {"text": f"kseg verify: {check} check"}}
                        for check in rules]}
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0",
            "runs": [{"tool": {"driver": driver}, "artifacts": artifacts, "results": results,
                      "invocations": [{"executionSuccessful": not report.unreadable}]}]}


def _gh_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_property(text: str) -> str:
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")


def verify_github(report: Any) -> str:
    """GitHub Actions workflow commands: ``::error file=F,title=...::message`` per error,
    ``::notice`` per note, then the summary line."""
    out = []
    for f in report.files:
        for p in f.problems:
            kind = "error" if p.severity == ERROR else "notice"
            out.append(f"::{kind} file={_gh_property(printable(p.file or f.path))},"
                       f"title={_gh_property(f'kseg verify: {p.check}')}::{_gh_data(_what(p))}\n")
    bad = sum(1 for f in report.files if not f.ok)
    out.append(f"{len(report.files)} file(s) checked, {bad} with errors, {report.error_count} error(s) in all\n")
    return "".join(out)


def write_ci_report(report: Any, out: TextIO, fmt: str) -> None:
    """A verify report in one of the CI formats (``junit``, ``sarif``, ``github``)."""
    if fmt == "junit":
        out.write(verify_junit(report))
    elif fmt == "sarif":
        out.write(dumps(verify_sarif(report), indent=2) + "\n")
    elif fmt == "github":
        out.write(verify_github(report))
    else:
        raise ValueError(f"not a CI report format: {fmt}")
