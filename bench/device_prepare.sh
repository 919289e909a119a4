#!/usr/bin/env bash
# Run HERE (the development machine) before asking for a GPU machine: gathers into .device/
# (git-ignored, about 1 MiB) what bench/device_check.sh needs there and cannot fetch:
#   .device/whl/    the gguf wheel (the GPU image has torch, triton, numpy, jinja2, pytest,
#                   but not gguf)
#   .device/cache/  the llama.cpp vocabulary and templates the tiny test models use, laid
#                   out as runtime.assets expects its cache ($EXACTSERVE_CACHE)
# Then: device run with carry [".device"] and command "bash bench/device_check.sh".
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -c "import gguf, exactserve.runtime.assets" 2>/dev/null || { echo "activate the project's venv first (it has gguf)" >&2; exit 1; }
rm -rf .device && mkdir -p .device/whl
python3 -m pip download -q --no-deps --only-binary=:all: -d .device/whl gguf==0.19.0
src=$(python3 -c "from exactserve.runtime.assets import llama_cpp_source; print(llama_cpp_source())")
dst=.device/cache/$(basename "$src")
mkdir -p "$dst/vendor/llama.cpp/models/templates"
cp "$src/vendor/llama.cpp/models/ggml-vocab-llama-spm.gguf" "$dst/vendor/llama.cpp/models/"
for t in $(python3 -c "from exactserve.runtime import tiny_model; print(*tiny_model.DEFAULT_TEMPLATE.values())"); do
  cp "$src/vendor/llama.cpp/models/templates/$t.jinja" "$dst/vendor/llama.cpp/models/templates/"
done
touch "$dst/.exactserve-unpacked"
du -sh .device
