#!/usr/bin/env bash
# Build llama.cpp's benchmark tools from the pinned llama-cpp-python sdist's vendored source.
# The build is cached: $EXACTSERVE_CACHE/llama.cpp-build (default ~/.cache/exactserve).
# Prints the bin directory on its last line. About 15 minutes on two cores the first time.
set -euo pipefail
PY=${PYTHON:-python3}
src=$("$PY" -c 'from exactserve.runtime.assets import llama_cpp_dir; print(llama_cpp_dir())')
cache=$("$PY" -c 'from exactserve.runtime.assets import cache_dir; print(cache_dir())')
build="$cache/llama.cpp-build"
targets="llama-bench llama-perplexity llama-tokenize llama-server llama-cli"
if [ ! -x "$build/bin/llama-perplexity" ] || [ ! -x "$build/bin/llama-tokenize" ]; then
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DGGML_NATIVE=ON \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF >&2
  # shellcheck disable=SC2086
  cmake --build "$build" -j"${JOBS:-2}" --target $targets >&2
fi
echo "$build/bin"
