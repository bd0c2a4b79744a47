"""The internal-topic families: one row each in ``kseg.decoders.FAMILY_TABLE``, and a row of
the same name in every table a layer above keeps per family (the state replay's appliers,
the state summary's writers, kafka-dump-log.sh's decoder flags). A family added to one
table and not the others fails here."""

from __future__ import annotations

from pathlib import Path

import pytest

from kseg.cli.dumplog import DECODER_FLAGS
from kseg.decoders import DECODE_CHOICES, FAMILIES, FAMILY, FAMILY_TABLE, family_for
from kseg.lazy import load
from kseg.ops.state import APPLIERS
from kseg.render.answers import STATE_WRITERS

# Each table a layer above the decoders keeps per family, by where it lives.
PER_FAMILY_TABLES = {
    "kseg.ops.state.APPLIERS": set(APPLIERS),
    "kseg.render.answers.STATE_WRITERS": set(STATE_WRITERS),
    "kseg.cli.dumplog.DECODER_FLAGS (values)": set(DECODER_FLAGS.values()),
}


@pytest.mark.parametrize("table", sorted(PER_FAMILY_TABLES))
def test_every_table_has_exactly_the_families(table: str) -> None:
    assert PER_FAMILY_TABLES[table] == set(FAMILIES), table


def test_names_and_topics_are_unique() -> None:
    assert len({f.name for f in FAMILY_TABLE}) == len({f.topic for f in FAMILY_TABLE}) == len(FAMILY_TABLE)
    assert DECODE_CHOICES == ("none", *FAMILIES, "auto")


@pytest.mark.parametrize("family", FAMILIES)
def test_a_family_has_a_decoder_an_applier_and_a_writer(family: str) -> None:
    row = FAMILY[family]
    assert callable(load(row.decoder)), row.decoder
    assert row.decoder.startswith("kseg.decoders.")
    assert callable(getattr(APPLIERS[family], "apply", None))
    assert callable(STATE_WRITERS[family])


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("folder", ["{topic}-0", "{topic}-7.0123456789abcdef0123456789abcdef-future"])
def test_auto_finds_the_family_by_its_topic_folder(family: str, folder: str) -> None:
    name = folder.format(topic=FAMILY[family].topic)
    assert family_for(Path("logs") / name / f"{0:020d}.log", "auto") == family
    assert family_for(Path("logs") / name / f"{0:020d}.log.deleted", "auto") == family


def test_user_topics_have_no_family() -> None:
    assert family_for(Path("logs/orders-0") / f"{0:020d}.log", "auto") is None
    assert family_for(Path("logs/_consumer_offsets-0") / f"{0:020d}.log", "auto") is None


def test_secrets_are_the_metadata_logs_only() -> None:
    """What kseg.decoders.secrets hides (SCRAM keys, delegation tokens, sensitive configs) is
    in the KRaft metadata log alone; dump and bundle hide by this flag."""
    assert [f.name for f in FAMILY_TABLE if f.secrets] == ["metadata"]
