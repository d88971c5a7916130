"""An unknown `model_type` in an hf_attn folder (`hf_attn.utils.model_type`) is refused with the names it may have
meant, before transformers offers to run the folder's code; someone else's custom-code model is left alone."""

from __future__ import annotations

import json

import pytest
from transformers import AutoConfig

import hf_attn  # noqa: F401 (installs the check, as `import hf_attn` does)
from hf_attn.registry.table import ARCHITECTURES
from hf_attn.utils.model_type import check_model_type

KNOWN = {name: row.config_class.__name__ for name, row in ARCHITECTURES.items()}


def saved(model_type: str | None, config_class: str) -> dict:
    config = {"auto_map": {"AutoConfig": f"configuration_x.{config_class}"}}
    return config if model_type is None else {**config, "model_type": model_type}


def test_a_typo_of_a_known_model_type_names_the_one_meant():
    name, config_class = next(iter(KNOWN.items()))
    with pytest.raises(ValueError, match=rf"model_type '{name}x', which is not a known architecture\. Did you mean "
                                         rf"'{name}'\?.*trust_remote_code=True"):  # fmt: skip
        check_model_type(saved(f"{name}x", config_class), "FOLDER", KNOWN)
    with pytest.raises(ValueError, match=rf"has no model_type\. Did you mean '{name}'\?"):
        check_model_type(saved(None, config_class), "FOLDER", KNOWN)


def test_a_known_type_and_another_projects_custom_code_pass():
    name, config_class = next(iter(KNOWN.items()))
    check_model_type(saved(name, config_class), "FOLDER", KNOWN)  # registered: transformers loads it
    check_model_type(saved("someone_elses_model", "SomeoneElsesConfig"), "FOLDER", KNOWN)
    check_model_type({"model_type": "bert"}, "FOLDER", KNOWN)  # no code of ours


def test_auto_config_refuses_the_folder_before_offering_its_code(tmp_path):
    name, config_class = next(iter(KNOWN.items()))
    (tmp_path / "config.json").write_text(json.dumps(saved(f"{name}_typo", config_class)))
    with pytest.raises(ValueError, match=f"Did you mean '{name}'"):
        AutoConfig.from_pretrained(tmp_path)
