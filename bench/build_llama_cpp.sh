#!/usr/bin/env bash
# Build llama.cpp's benchmark tools from the pinned llama-cpp-python sdist's vendored source.
# The build is cached: $EXACTSERVE_CACHE/llama.cpp-build (default ~/.cache/exactserve).
# Prints the bin directory on its last line (stdout); progress goes to stderr. About 15
# minutes on two cores the first time; afterwards it returns at once.
#
# The instruction sets are chosen from /proc/cpuinfo, never with GGML_NATIVE: on VMs whose
# CPU lists AMX while the hypervisor traps it, a -march=native build died with SIGILL at the
# first matmul. So: GGML_NATIVE=OFF, AMX off, SSE4.2/AVX/AVX2/BMI2/FMA/F16C on, and each
# AVX-512 (and AVX-VNNI) option only where /proc/cpuinfo lists its flag. The source path and
# the -D options are written to exactserve-build.txt beside bin/ once the built tools have
# passed a short run (`llama-server --version`, a tiny `llama-bench` on the demo model); a
# build with other options (an older -march=native one) is reconfigured and rebuilt, one
# from another source tree is deleted first.
#
#   JOBS=2 nice -n 15 bash bench/build_llama_cpp.sh        # PYTHON=... picks the interpreter
#
# LLAMA_ISA=avx2 builds only llama-bench, for AVX2 (no AVX-512, no VNNI) whatever the CPU
# lists, into llama.cpp-build-avx2: llama.cpp as it runs on an AVX2-only CPU, to compare
# with exactserve's avx2 matmul (bench/cpu_speed.py --llama-bin DIR --cpu-matmul avx2).
set -euo pipefail
PY=${PYTHON:-python3}
log() { echo "[build_llama_cpp $(date -u +%H:%M:%S)] $*" >&2; }

src=$("$PY" -c 'from exactserve.runtime.assets import llama_cpp_dir; print(llama_cpp_dir())')
cache=$("$PY" -c 'from exactserve.runtime.assets import cache_dir; print(cache_dir())')
build="$cache/llama.cpp-build"
targets="llama-bench llama-perplexity llama-tokenize llama-server llama-cli"
isa=${LLAMA_ISA:-cpu}
case "$isa" in
cpu) ;;
avx2) build="$cache/llama.cpp-build-avx2" targets="llama-bench" ;;
*) echo "LLAMA_ISA must be cpu (what /proc/cpuinfo lists) or avx2, not '$isa'" >&2 && exit 2 ;;
esac
stamp="$build/exactserve-build.txt"

# -D options: what this CPU runs, nothing it merely lists (AMX).
flags="-DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF"
flags+=" -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF"
flags+=" -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF" # no npm, no download: no web UI
if [ "$(uname -m)" = x86_64 ]; then
  cpu_flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
  has() { [[ "$cpu_flags" == *" $1 "* ]] && echo ON || echo OFF; }
  flags+=" -DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
  flags+=" -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_BMI2=ON -DGGML_FMA=ON"
  if [ "$isa" = avx2 ]; then
    has() { echo OFF; } # nothing beyond the AVX2 set above
  fi
  flags+=" -DGGML_F16C=ON -DGGML_AVX_VNNI=$(has avx_vnni)"
  # GGML_AVX512 compiles with -mavx512f/cd/vl/dq/bw: all five must be listed.
  avx512=ON
  for f in avx512f avx512cd avx512vl avx512dq avx512bw; do
    [ "$(has $f)" = ON ] || avx512=OFF
  done
  flags+=" -DGGML_AVX512=$avx512"
  if [ $avx512 = ON ]; then
    flags+=" -DGGML_AVX512_VBMI=$(has avx512vbmi) -DGGML_AVX512_VNNI=$(has avx512_vnni)"
    flags+=" -DGGML_AVX512_BF16=$(has avx512_bf16)"
  else
    flags+=" -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF"
  fi
else
  flags+=" -DGGML_NATIVE=ON"
fi

wanted="$src $flags"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; then
  echo "$build/bin"
  exit 0
fi
if [ -f "$build/CMakeCache.txt" ] &&
  ! grep -qxF "CMAKE_HOME_DIRECTORY:INTERNAL=$src" "$build/CMakeCache.txt"; then
  log "the build was made from another source tree: starting afresh"
  rm -rf "$build"
fi

log "source: $src"
log "build:  $build"
log "cpu:    $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores"
log "cmake $flags"
mkdir -p "$build"
rm -f "$stamp"
# shellcheck disable=SC2086
cmake -S "$src" -B "$build" $flags >"$build/configure.log" 2>&1 || {
  tail -n 40 "$build/configure.log" >&2
  log "configure failed (full log: $build/configure.log)"
  exit 1
}
log "configured; building $targets with ${JOBS:-2} jobs (about 15 minutes on two cores)"
# Progress: cmake's [ NN%] lines, one per compiled file.
set +e
# shellcheck disable=SC2086
cmake --build "$build" -j"${JOBS:-2}" --target $targets 2>&1 | tee "$build/build.log" |
  grep --line-buffered -E '^\[ *[0-9]+%\]' >&2
status=${PIPESTATUS[0]}
set -e
if [ "$status" != 0 ]; then
  tail -n 40 "$build/build.log" >&2
  log "build failed with exit status $status (full log: $build/build.log)"
  exit 1
fi

# The check: each tool starts, and one matmul-heavy run on the demo model completes (an
# instruction the CPU traps shows here as SIGILL, exit status 132).
check() {
  log "check: $*"
  local status=0
  "$@" >"$build/check.log" 2>&1 || status=$?
  sed 's/^/    /' "$build/check.log" >&2
  if [ $status != 0 ]; then
    [ $status = 132 ] && log "SIGILL: the build uses an instruction this CPU traps"
    log "check failed with exit status $status: $*"
    exit 1
  fi
}
bin="$build/bin"
if [ "$isa" = cpu ]; then
  check "$bin/llama-server" --version
  check "$bin/llama-cli" --version
fi
model=$("$PY" -c 'from exactserve.runtime.assets import demo_model_path; print(demo_model_path())' \
  2>/dev/null) || model=""
if [ -n "$model" ]; then
  check "$bin/llama-bench" -m "$model" -p 32 -n 8 -r 1 -t "${JOBS:-2}"
else
  log "demo model not installed (pip install -e '.[demo]'): skipping the llama-bench check"
fi
echo "$wanted" >"$stamp"
log "built and checked"
echo "$bin"
