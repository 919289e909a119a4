#!/usr/bin/env bash
# Run ON the lent GPU machine (device tool: carry [".device"], timeout_s about 540), after
# bench/device_prepare.sh here. One call: PTX audit for this GPU, conformance against the
# reference on the device, every timing, then pytest tests/kernels on the GPU (the demo
# model's tests left out: the 241 MiB file cannot travel). Results land in $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/out}
mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .device/whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD EXACTSERVE_CACHE=$PWD/.device/cache PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
# The Triton version decides what compiles (3.6 and 3.9 differ: see kernels.fp); the audit
# has been run without a GPU on 3.6.0 and 3.9.0.
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$out/gpu.txt"
echo "triton found: $(python3 -c 'import triton; print(triton.__version__)') (audited without a GPU: 3.6.0, 3.9.0)"
python3 bench/gpu_check.py --out "$out/table.md" --pytest \
  --pytest-marks "not slow and not real_model" 2>&1 | tee "$out/gpu_check.log"
