"""The shared example files (`hf_attn.data.examples`): each in the layout of the real dataset it stands for, seeded,
and learnable (a review's stars are set by its one cue word)."""

from __future__ import annotations

import csv
import json

from hf_attn.data.examples import STAR_CUES, review_rows, write_shared_example_files

FILES = ("reviews.csv", "snli.jsonl", "topics.jsonl", "pairs.tsv", "corpus.txt")


def test_each_file_is_written_in_its_layout_and_a_seed_writes_the_same_rows(tmp_path):
    first, second = write_shared_example_files(tmp_path / "a", 60), write_shared_example_files(tmp_path / "b", 60)
    for name in FILES:
        assert (first / name).read_bytes() == (second / name).read_bytes() and (first / name).stat().st_size, name
    with (first / "reviews.csv").open(newline="") as handle:
        reviews = list(csv.DictReader(handle))
    assert len(reviews) == 60 and set(reviews[0]) == {"stars", "review"}
    snli = [json.loads(line) for line in (first / "snli.jsonl").read_text().splitlines()]
    assert set(snli[0]) == {"premise", "hypothesis", "label"} and {row["label"] for row in snli} <= {-1, 0, 1, 2}
    assert all("\t" in line for line in (first / "pairs.tsv").read_text().splitlines())  # source<TAB>target, no header
    assert (
        write_shared_example_files(tmp_path / "c", 60, seed=1).joinpath("reviews.csv").read_bytes()
        != (first / "reviews.csv").read_bytes()
    )


def test_a_reviews_stars_are_set_by_its_one_cue_word():
    cue_stars = {cue: stars for stars, cues in STAR_CUES.items() for cue in cues}
    rows = review_rows(200, seed=0)
    for row in rows:
        words = set(str(row["review"]).split())
        cues = [cue for cue in cue_stars if cue in words]
        assert len(cues) == 1 and cue_stars[cues[0]] == row["stars"], row
    assert {row["stars"] for row in rows} == set(STAR_CUES)  # every rating occurs
