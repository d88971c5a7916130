#!/usr/bin/env bash
# One GPU session's checks, prepared on the CPU and run once on the lent machine from the repository root:
#   bash benchmarks/gpu_session.sh     (REPORT="lstmn elmo paths" by default: the recurrences; REPORT="transformer biblosa",
#                                       REPORT=all for every figure; PROFILE_DIR=benchmarks/results by default)
# It prints the card and versions, runs `make test-gpu` and then benchmarks/gpu_report.py, each under a timeout, so
# that one stuck step cannot eat the other's time; the recurrences' benchmarks write their torch.profiler summaries
# into PROFILE_DIR (on the lent machine, $OUT: what comes back). Wheels carried in .whl/ (a newer transformers, say)
# are installed into /tmp/site first: the GPU machine has no package index. The default run takes about 6 minutes
# on an H200 (make test-gpu about 1, the report about 5).
set -uo pipefail
cd "$(dirname "$0")/.."
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        && export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
# The benchmarks run in their own processes from benchmarks/: they find hf_attn through the repository root.
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
python3 - <<'PY'
import torch, transformers
try:
    import triton
    triton_version = triton.__version__
except ImportError:
    triton_version = "absent"
card = torch.cuda.get_device_name() if torch.cuda.is_available() else "no CUDA device"
print(f"card: {card}; torch {torch.__version__} (CUDA {torch.version.cuda}); triton {triton_version}; "
      f"transformers {transformers.__version__}")
PY
timeout "${TEST_TIMEOUT:-150}" make test-gpu
echo "make test-gpu: exit $?"
REPORT="${REPORT:-lstmn elmo paths}"
if [ "$REPORT" = all ]; then only=(); else read -ra only <<<"--only $REPORT"; fi
timeout "${REPORT_TIMEOUT:-330}" python3 benchmarks/gpu_report.py "${only[@]}" --timeout "${BENCHMARK_TIMEOUT:-160}" \
    --profile-dir "${PROFILE_DIR:-benchmarks/results}"
echo "gpu_report: exit $?"
