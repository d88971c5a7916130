"""Local path or Hub id (`hf_attn.utils.paths`): a name that can only be a local path and is missing is refused at
once, naming the option, and a repo id the Hub would refuse is refused before any upload."""

from __future__ import annotations

import pytest

from hf_attn.utils.paths import check_local_path, check_repo_id, looks_local


@pytest.mark.parametrize("name", ["./data", "../x", "/abs/reviews", "~/reviews", "reviews.csv", "a/b/c", "data\\x",
                                  "no spaces allowed"])  # fmt: skip
def test_a_name_that_can_only_be_a_path_is_local(name):
    assert looks_local(name)


@pytest.mark.parametrize("name", ["imdb", "stanfordnlp/snli", "user/model-1.0"])
def test_a_hub_id_is_not_local(name):
    assert not looks_local(name)


def test_a_missing_local_path_is_named_with_its_option_and_a_present_one_passes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"^--dataset reviews\.csv: no such file or folder .*local path"):
        check_local_path("reviews.csv", "--dataset")
    (tmp_path / "reviews.csv").write_text("text,label\n")
    check_local_path("reviews.csv", "--dataset")
    check_local_path("stanfordnlp/snli", "--dataset")  # a Hub id: the Hub answers for it
    (tmp_path / "user").mkdir()  # a folder of that name here: `user/missing` can only be a path into it
    with pytest.raises(FileNotFoundError, match="user/missing"):
        check_local_path("user/missing", "MODEL")


@pytest.mark.parametrize("repo_id", ["/lin-demo", "a//b", "user/", "bad name/x"])
def test_a_repo_id_the_hub_refuses_is_refused_naming_the_argument(repo_id):
    with pytest.raises(ValueError, match=rf"^--repo-id '{repo_id}' is not a Hub repo id"):
        check_repo_id(repo_id, "--repo-id")
    check_repo_id("alice/lin-demo", "--repo-id")
