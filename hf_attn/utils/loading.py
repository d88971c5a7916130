"""Safetensors-only loading and self-contained saving for every hf_attn model (a base of each `PreTrainedModel`).

The mixin is all a model file needs: pickle weights are refused, and `save_pretrained` writes the model's code
(its folder's files and the hf_attn modules they import, `hf_attn.utils.remote_code`) so that the saved folder
loads with `trust_remote_code=True` where hf_attn is not installed. When hf_attn is installed, weights are checked
before they are read (`hf_attn.utils.integrity`: a Hub download against the hash it is named after, a local file
against the record `save_pretrained` writes into its safetensors header), and a failed load is handed to the
Hub-cache repair (`hf_attn.utils.hub_cache`: evicts corrupt downloads, names the damaged file or the root cause). A
model loaded with `trust_remote_code` where hf_attn is not installed loads as transformers does, pickle refused.
"""

from __future__ import annotations


class SafetensorsLoadingMixin:
    """`from_pretrained` for hf_attn models: safetensors only (a folder holding only pickle weights is refused, and
    `use_safetensors=False` raises: loading never unpickles), weights verified before use; `save_pretrained` records
    each weight file's digest in its own header and writes the folder's code. Listed before `PreTrainedModel` in a
    model's bases.

    Also `get/set_input_embeddings` from `_input_embed_layer` as a dotted path (`"encoder.embeddings"`): transformers
    follows a single attribute name, and an embedding inside an encoder module would otherwise need both methods
    written by hand."""

    def get_input_embeddings(self):
        name = getattr(self, "_input_embed_layer", "embed_tokens")
        if "." not in name:
            return super().get_input_embeddings()
        return self.get_submodule(name)

    def set_input_embeddings(self, value) -> None:
        name = getattr(self, "_input_embed_layer", "embed_tokens")
        if "." not in name:
            super().set_input_embeddings(value)
            return
        parent, _, leaf = name.rpartition(".")
        setattr(self.get_submodule(parent), leaf, value)

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *args, **kwargs):
        if kwargs.get("use_safetensors") is False:
            raise ValueError("hf_attn models load safetensors only; pickle checkpoints are never unpickled.")
        kwargs["use_safetensors"] = True
        try:  # hf_attn installed: its integrity checks and Hub-cache repair
            from hf_attn.utils import hub_cache, integrity
        except ImportError:
            hub_cache = integrity = None
        if integrity is not None:
            integrity.verify_before_load(pretrained_model_name_or_path, kwargs)
        try:
            return super().from_pretrained(pretrained_model_name_or_path, *args, **kwargs)
        except Exception as error:
            explained = hub_cache and hub_cache.explain_load_failure(error, pretrained_model_name_or_path, kwargs)
            if explained is None:
                raise
            raise explained from error

    def save_pretrained(self, save_directory, *args, push_to_hub: bool = False, **kwargs) -> None:
        hub_kwargs = {}
        if push_to_hub:  # upload once the folder is complete (its code and records written below)
            hub_kwargs = {key: kwargs.pop(key) for key in ("commit_message", "create_pr", "private") if key in kwargs}
            hub_kwargs["repo_id"] = kwargs.pop("repo_id", str(save_directory).rstrip("/\\").split("/")[-1])
        try:  # hf_attn installed: the folder's code from its single sources, the weights' integrity records, and
            # a staged save (every file written aside, then moved in with the weights last: a kill leaves the
            # earlier save or the new one, hf_attn.utils.saving)
            from hf_attn.utils.auto_classes import mark_for_auto_class
            from hf_attn.utils.integrity import write_records
            from hf_attn.utils.remote_code import write_remote_code
            from hf_attn.utils.saving import staged_save
        except ImportError:  # loaded as remote code: transformers has copied the folder's files as they are
            write_records = write_remote_code = staged_save = None
        else:  # the saved config carries `auto_map` (trust_remote_code users), however the model was built
            mark_for_auto_class(self)
        if staged_save is None or not kwargs.get("is_main_process", True):
            super().save_pretrained(save_directory, *args, **kwargs)
        else:
            # Into another save's staging folder, `staged_save` writes directly: that save moves the files in.
            with staged_save(save_directory) as staging:
                super().save_pretrained(staging, *args, **kwargs)
                # Every head's code, an Auto class or not (a pair or few-shot head loads with
                # `get_class_from_dynamic_module("modeling_<name>.<Class>", folder)`).
                write_remote_code(staging, [type(self), type(self.config)])
                write_records(staging)
        if push_to_hub and kwargs.get("is_main_process", True):  # the folder as written, not serialised again
            from huggingface_hub import HfApi

            api = HfApi(token=kwargs.get("token"))
            repo = api.create_repo(hub_kwargs["repo_id"], private=hub_kwargs.get("private"), exist_ok=True)
            api.upload_folder(
                folder_path=save_directory,
                repo_id=repo.repo_id,
                commit_message=hub_kwargs.get("commit_message"),
                create_pr=bool(hub_kwargs.get("create_pr")),
            )
