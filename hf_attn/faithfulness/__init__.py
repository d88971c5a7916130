"""How faithful a model's attention is, measured as the field measures it (`measure_faithfulness`): agreement with
gradients and erasure, ERASER's comprehensiveness and sufficiency, and decision flips, each beside a random
ranking's and with its confidence interval. Integrated Gradients need Captum: `pip install "hf_attn[faithfulness]"`.
"""

from .erasure import ERASER_KS, remove_tokens, remove_units
from .measure import FaithfulnessReport, check_measurable, measure_faithfulness
from .statistics import Estimate

__all__ = [
    "ERASER_KS",
    "Estimate",
    "FaithfulnessReport",
    "check_measurable",
    "measure_faithfulness",
    "remove_tokens",
    "remove_units",
]
