"""Every layout's example files (`hf_attn.tasks.examples.write_example_files`): the shared shapes' and, in a folder
of its own, each architecture's that writes its original's layout; seeded, so two writes are the same bytes."""

from __future__ import annotations

from hf_attn.data.examples import write_shared_example_files
from hf_attn.data.files import load_splits
from hf_attn.data.request import DataRequest
from hf_attn.registry.table import ARCHITECTURES
from hf_attn.tasks.examples import write_example_files


def files(folder) -> dict:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def test_the_shared_files_and_each_architectures_own_are_written_seeded(tmp_path):
    written = files(write_example_files(tmp_path / "a", num_rows=40))
    assert written == files(write_example_files(tmp_path / "b", num_rows=40))
    shared = files(write_shared_example_files(tmp_path / "shared", num_rows=40))
    assert {name: written[name] for name in shared} == shared
    own = {name.split("/")[0] for name in set(written) - set(shared)}
    writers = [row for row in ARCHITECTURES.values() if row.example_files is not None]
    assert writers and len(own) == len(writers) and all("/" in name for name in set(written) - set(shared))
    assert all(written[name] for name in written)  # none empty
    for name in ("reviews.csv", "snli.jsonl", "topics.jsonl", "corpus.txt"):  # the shared ones load as they are
        train, held_out, _ = load_splits(DataRequest(str(tmp_path / "a" / name)), notes=[])
        assert held_out is None and len(train) >= 36, name
