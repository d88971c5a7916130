"""Pretrained word vectors (`hf_attn.data.word_vectors`): the text (GloVe, word2vec, fastText `.vec`) and binary
word2vec formats read for the words of a vocabulary only."""

from __future__ import annotations

import numpy as np

from hf_attn.data.word_vectors import read_word_vectors


def test_word2vec_text_and_binary_files_give_the_vectors_of_the_vocabularys_words(tmp_path):
    """Lower-cased lookups (`Dog` for `dog`), words the vocabulary lacks skipped, and a word it has but the file
    lacks (`cow`) left out."""
    vectors = {"cat": np.array([1.5, -2.0, 0.25], np.float32), "Dog": np.array([0.0, 3.0, -1.0], np.float32)}
    (tmp_path / "w.vec").write_text("2 3\n" + "".join(f"{w} {' '.join(map(str, v))}\n" for w, v in vectors.items()))
    with (tmp_path / "w.bin").open("wb") as handle:
        handle.write(b"2 3\n")
        for word, vector in vectors.items():
            handle.write(word.encode() + b" " + vector.astype("<f4").tobytes() + b"\n")
    for name in ("w.vec", "w.bin"):
        found, dimension = read_word_vectors(tmp_path / name, {"cat": 5, "dog": 7, "cow": 9}, lowercase=True)
        assert dimension == 3 and set(found) == {5, 7}, name
        assert np.array_equal(found[5], vectors["cat"]) and np.array_equal(found[7], vectors["Dog"]), name


def test_a_glove_file_without_a_header_and_a_case_kept_vocabulary(tmp_path):
    (tmp_path / "glove.txt").write_text("The 0.5 1.0\nthe -1.0 2.0\nzebra 3.0 3.0\n")
    found, dimension = read_word_vectors(tmp_path / "glove.txt", {"The": 1, "the": 2, "cow": 3}, lowercase=False)
    assert dimension == 2 and set(found) == {1, 2}
    assert np.array_equal(found[1], [0.5, 1.0]) and np.array_equal(found[2], [-1.0, 2.0])
