"""Compile group_loop.c once per machine and pick the fastest variant that runs here.

The shared library is built with the system C compiler (`$CC`, else `cc`) into
~/.cache/exactserve/cpu-kernels/<key>/ (or $EXACTSERVE_CACHE/cpu-kernels), keyed by the
source, the flags and the compiler's version, so a change of any of them rebuilds. No
Python headers are needed: the library is plain C loaded with ctypes (which releases the GIL
during a call, so the model's tile threads run it concurrently).

A variant is used only after it ran here: each is tried in a child process on random
operands and must reproduce the reference's bits (a VM may list an instruction set in
/proc/cpuinfo and trap it; the child dies instead of the server). The verdicts are cached
beside the library, keyed by the CPU's model name and flags.

    EXACTSERVE_CPU_MATMUL=auto        the fastest variant that passed (default)
    EXACTSERVE_CPU_MATMUL=numpy       the reference's float32 BLAS path, no compiler needed
    EXACTSERVE_CPU_MATMUL=<variant>   one of VARIANTS; an error if it cannot run here
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from exactserve.runtime.errors import UnsupportedError

SOURCE = Path(__file__).with_name("group_loop.c")
MATMUL_ENV = "EXACTSERVE_CPU_MATMUL"
# fastest first; "scalar" is portable C and runs on any CPU the compiler targets
VARIANTS = ("avx512vnni", "avx512", "avx2", "scalar")
CFLAGS = ("-O3", "-std=c11", "-fPIC", "-shared", "-ffp-contract=off", "-fno-fast-math",
          "-fno-strict-aliasing")  # fmt: skip
_P, _I, _L = ctypes.c_void_p, ctypes.c_int, ctypes.c_long
_SIGNATURES = {  # group_loop.c's entry points, by name prefix
    "es_group_loop": (_P, _P, _P, _I, _I, _P, _P, _P, _I, _I, _I, _P, _I),
    "es_gated": (_P, _P, _P, _L, _I),
    "es_quantize": (_P, _L, _I, _P, _P, _P),
}


@dataclass(frozen=True)
class Kernel:
    """The chosen variant's entry points (group_loop.c says what each argument is):
    `function(w, scale, offset, K, group, qa, p2e, psum, M, p0, p1, y, ldy)` (contract 5.2),
    `gated(gate, up, out, n, activation)` (4.5; 0 = SiLU, 1 = GELU) and
    `quantize(x, m, k, q, p2e, values)` (3.1)."""

    variant: str
    function: ctypes._CFuncPtr
    library: Path
    gated: ctypes._CFuncPtr | None = None
    quantize: ctypes._CFuncPtr | None = None


def cache_dir() -> Path:
    """~/.cache/exactserve/cpu-kernels (or under $EXACTSERVE_CACHE); a folder under the
    system's temporary directory when that one cannot be created."""
    root = os.environ.get("EXACTSERVE_CACHE") or Path.home() / ".cache" / "exactserve"
    folder = Path(root) / "cpu-kernels"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        return folder
    except OSError:
        return Path(tempfile.gettempdir()) / f"exactserve-{os.getuid()}" / "cpu-kernels"


def compiler() -> str | None:
    name = os.environ.get("CC") or "cc"
    return shutil.which(name) or shutil.which("gcc") or shutil.which("clang")


def build_library() -> Path:
    """The compiled library's path, compiling it if this source/compiler has not been built.
    Raises UnsupportedError when no C compiler is found or compilation fails."""
    cc = compiler()
    if cc is None:
        raise UnsupportedError("no C compiler (cc, gcc or clang; or $CC) found")
    version = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout
    key = hashlib.sha256(
        SOURCE.read_bytes() + " ".join(CFLAGS).encode() + version.encode()
    ).hexdigest()[:16]
    target = cache_dir() / key / "libgroup_loop.so"
    if target.exists():
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UnsupportedError(f"cannot create {target.parent}: {exc}") from None
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        out = Path(tmp) / target.name
        proc = subprocess.run([cc, *CFLAGS, str(SOURCE), "-o", str(out)], capture_output=True,
                              text=True)  # fmt: skip
        if proc.returncode != 0:
            raise UnsupportedError(f"compiling {SOURCE.name} failed:\n{proc.stderr[-2000:]}")
        os.replace(out, target)  # atomic: a concurrent build finds a whole file or none
    return target


def _cpu_key() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown"
    wanted = [ln for ln in text.splitlines() if ln.startswith(("model name", "flags"))][:2]
    return hashlib.sha256("\n".join(wanted).encode()).hexdigest()[:16]


def probe(library: Path, variant: str) -> bool:
    """True when `variant` runs in a child process and matches the reference bit for bit."""
    cmd = [sys.executable, "-m", "exactserve.runtime.cpu.probe", str(library), variant]
    env = {**os.environ, MATMUL_ENV: "numpy"}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    except subprocess.TimeoutExpired:
        return False
    return proc.returncode == 0 and proc.stdout.strip().endswith("ok")


def working_variants(library: Path) -> list[str]:
    """The variants that passed `probe` on this CPU (cached beside the library)."""
    verdicts_path = library.with_name(f"verdicts-{_cpu_key()}.json")
    try:
        verdicts = json.loads(verdicts_path.read_text())
    except (OSError, ValueError):
        verdicts = {}
    if set(verdicts) != set(VARIANTS):
        verdicts = {v: probe(library, v) for v in VARIANTS}
        tmp = verdicts_path.with_suffix(f".{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps(verdicts))
            os.replace(tmp, verdicts_path)
        except OSError:
            pass  # probed again next time
    return [v for v in VARIANTS if verdicts[v]]


def load_function(library: Path, variant: str, prefix: str = "es_group_loop"):
    """One entry point of the library: `prefix` (a key of _SIGNATURES) for `variant`."""
    function = getattr(ctypes.CDLL(str(library)), f"{prefix}_{variant}")
    function.argtypes = _SIGNATURES[prefix]
    function.restype = None
    return function


def load_kernel(library: Path, variant: str) -> Kernel:
    """Every entry point of `variant` (none is checked here: see `probe`)."""
    return Kernel(
        variant,
        load_function(library, variant),
        library,
        load_function(library, variant, "es_gated"),
        load_function(library, variant, "es_quantize"),
    )


@cache
def select_kernel(requested: str | None = None) -> Kernel | None:
    """The group-loop kernel to use, or None for the reference's NumPy path.

    `requested` (else $EXACTSERVE_CPU_MATMUL, else "auto"): "auto" falls back to None when
    nothing can be built or run (the bits are the same, only slower); "numpy" is None; a
    named variant raises UnsupportedError if it cannot be built or did not pass its probe.
    """
    name = (requested or os.environ.get(MATMUL_ENV) or "auto").strip().lower()
    if name == "numpy":
        return None
    if name != "auto" and name not in VARIANTS:
        raise UnsupportedError(
            f"unknown CPU matmul {name!r} (from {'the argument' if requested else MATMUL_ENV});"
            f" choose auto, numpy or one of: {', '.join(VARIANTS)}"
        )
    try:
        library = build_library()
    except UnsupportedError as exc:
        if name != "auto":
            raise
        print(f"exactserve: using the slower NumPy matmul: {exc}", file=sys.stderr)
        return None
    if name == "auto":
        working = working_variants(library)
        if not working:
            print("exactserve: no compiled matmul passed its check here; using NumPy's",
                  file=sys.stderr)  # fmt: skip
            return None
        name = working[0]
    elif not probe(library, name):
        raise UnsupportedError(f"CPU matmul {name!r} does not run correctly on this CPU")
    return load_kernel(library, name)
