"""Stand-ins for the modules transformers' source distribution imports from its tests but does not ship
(`tests/transformers_tests.py` installs them in their place; a transformers checkout's own files win).

- `ExportTesterMixin` (`tests/exporters/test_export.py`): empty. The export checks of transformers' repository drive
  its exporters over its own models; ours export in `tests/test_export.py` (torch.export and ONNX, checked with
  onnxruntime).
- `GenerationTesterMixin` (`tests/generation/test_utils.py`): a small mixin of our own over `generate()`, on the
  heads that generate: greedy search with and without the cache, beam search and sampling, each against the
  others' invariants (not transformers' full generation suite, which the distribution lacks).
- `config_common_kwargs` (`tests/utils/test_configuration_utils.py`): the keyword arguments the config tests set.
"""

from __future__ import annotations

import torch


class ExportTesterMixin:
    pass


class GenerationTesterMixin:
    """`generate()` on the tester's head (`self.all_model_classes`), prompts of full length (no padding)."""

    max_new_tokens = 3

    def _generation_inputs(self, model_class):
        config, inputs = self.model_tester.prepare_config_and_inputs_for_common()
        prompt = {name: value for name, value in inputs.items() if not name.startswith("decoder_")}
        prompt["attention_mask"] = torch.ones_like(prompt["attention_mask"])  # every position real
        model = model_class(config).eval()
        return model, prompt

    def _generate(self, model, prompt, **options):
        torch.manual_seed(0)
        with torch.no_grad():
            return model.generate(
                **prompt,
                max_new_tokens=self.max_new_tokens,
                return_dict_in_generate=True,
                output_scores=True,
                **options,
            )

    def test_greedy_generate(self):
        for model_class in self.all_generative_model_classes:
            model, prompt = self._generation_inputs(model_class)
            output = self._generate(model, prompt, do_sample=False)
            batch = prompt["input_ids"].shape[0]
            start = 0 if model.config.is_encoder_decoder else prompt["input_ids"].shape[1]
            new = output.sequences.shape[1] - start - (1 if model.config.is_encoder_decoder else 0)
            self.assertEqual(output.sequences.shape[0], batch)
            self.assertTrue(1 <= new <= self.max_new_tokens)
            self.assertEqual(len(output.scores), new)
            for step, scores in enumerate(output.scores):  # the token chosen is the best scored
                chosen = output.sequences[:, output.sequences.shape[1] - new + step]
                best = scores.argmax(-1)
                finished = chosen == (model.generation_config.pad_token_id or 0)
                self.assertTrue(torch.equal(chosen[~finished], best[~finished]))

    def test_greedy_generate_cache_equivalence(self):
        for model_class in self.all_generative_model_classes:
            model, prompt = self._generation_inputs(model_class)
            cached = self._generate(model, prompt, do_sample=False, use_cache=True)
            recomputed = self._generate(model, prompt, do_sample=False, use_cache=False)
            self.assertTrue(torch.equal(cached.sequences, recomputed.sequences))
            for one, other in zip(cached.scores, recomputed.scores, strict=True):
                finite = torch.isfinite(one)
                self.assertTrue(torch.equal(finite, torch.isfinite(other)))
                torch.testing.assert_close(one[finite], other[finite], rtol=0, atol=1e-5)

    def test_beam_search_generate(self):
        for model_class in self.all_generative_model_classes:
            model, prompt = self._generation_inputs(model_class)
            batch = prompt["input_ids"].shape[0]
            beams = self._generate(model, prompt, do_sample=False, num_beams=2, num_return_sequences=2)
            self.assertEqual(beams.sequences.shape[0], 2 * batch)
            self.assertEqual(beams.sequences_scores.shape, (2 * batch,))
            # per prompt, the returned beams come best first
            scores = beams.sequences_scores.view(batch, 2)
            self.assertTrue(torch.all(scores[:, 0] >= scores[:, 1]))
            one_beam = self._generate(model, prompt, do_sample=False, num_beams=1)
            greedy = self._generate(model, prompt, do_sample=False)
            self.assertTrue(torch.equal(one_beam.sequences, greedy.sequences))

    def test_sample_generate(self):
        for model_class in self.all_generative_model_classes:
            model, prompt = self._generation_inputs(model_class)
            first = self._generate(model, prompt, do_sample=True, top_k=0)
            again = self._generate(model, prompt, do_sample=True, top_k=0)
            self.assertTrue(torch.equal(first.sequences, again.sequences))  # the seed decides
            vocabulary = first.scores[0].shape[-1]
            self.assertTrue(torch.all((first.sequences >= 0) & (first.sequences < vocabulary)))


config_common_kwargs: dict = {}
