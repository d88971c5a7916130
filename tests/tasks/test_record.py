"""The training record, typed (`hf_attn.tasks.record`): the file's layout round-trips, a folder saved by an earlier
hf_attn (`tests/saved_folders/`) reads back field by field, and a row a later version adds is kept, not lost."""

from __future__ import annotations

import json

from hf_attn.tasks.record import TRAINING_FILE, DatasetRecord, RunSettings, TrainingRecord
from tests.helpers import REPO_ROOT

SAVED = REPO_ROOT / "tests" / "saved_folders" / "lin_self_attentive"


def test_a_record_saved_before_reads_back_field_by_field_and_writes_the_same_file(tmp_path):
    written = json.loads((SAVED / TRAINING_FILE).read_text())
    record = TrainingRecord.read(SAVED)
    assert record.dataset == DatasetRecord(
        "local/reviews.csv", "reviews.csv", "columns review, stars; held-out: held_out.csv"
    )
    assert (record.settings.training_examples, record.settings.held_out_examples, record.settings.steps) == (
        120,
        24,
        4,
    )
    assert record.settings.word_vectors is None and record.settings.others == {}
    assert record.metrics == {"accuracy": 0.5} and record.evaluation_options == {} and record.paper is None
    assert record.example == {"text": "and the was awful the service"}
    record.save(tmp_path)
    assert json.loads((tmp_path / TRAINING_FILE).read_text()) == written


def test_settings_the_run_did_not_have_are_left_out_and_unknown_rows_kept():
    settings = RunSettings(
        seed=3, steps=10, word_vectors=None, config_overrides={}, dropped_rows={"train": {"no label": 2}}
    )
    assert settings.shown == {"dropped rows": {"train": {"no label": 2}}, "seed": 3, "steps": 10}
    later = RunSettings.from_shown({"seed": 3, "a later setting": "on"})
    assert later.seed == 3 and later.others == {"a later setting": "on"}
    assert later.shown == {"seed": 3, "a later setting": "on"}
    record = TrainingRecord(DatasetRecord("t", "n", "d"), later, {"accuracy": 1.0}, {"max_length": 64})
    assert TrainingRecord.from_json(record.as_json()) == record
    assert record.as_json()["evaluation options"] == {"max_length": 64}


def test_a_folder_without_a_record_reads_none(tmp_path):
    assert TrainingRecord.read(tmp_path) is None
