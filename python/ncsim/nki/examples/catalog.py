"""The tutorial kernels in one table: inputs at each size, reference, tolerance.

Every entry names a kernel of this folder, how to build its arguments at three
sizes, the NumPy reference, the tolerance the public tutorial (or workload)
checks with, the useful FLOPs (for MFU) and, for the measured workloads, the
trn1 latency and the hand-written NCA port to compare with.

Sizes:
  small     functional simulation in the tests (seconds)
  moderate  timing run in the tests
  tutorial  the size the tutorial benchmarks (timing only, for docs/nki.md)
"""
import importlib
from dataclasses import dataclass, field
from typing import Callable, Dict, Optional, Tuple

import numpy as np


def _bf16_placeholder(shape):
    """A shape-and-dtype placeholder (no values) for a timing run, as the matmul tutorial
    benchmarks with: `nt.tensor[[shape], nl.bfloat16]`."""
    import ncsim.nki.language as nl
    import ncsim.nki.typing as nt
    return nt.tensor[[*shape], nl.bfloat16]


def _rand(rng, shape, dtype=np.float32):
    return rng.random(shape, dtype=np.float32).astype(dtype)


@dataclass
class Case:
    name: str                 # short name used in tests and the docs table
    module: str               # module in ncsim.nki.examples
    kernel: str               # kernel function name in the module
    title: str                # what the docs table calls it
    sizes: Dict[str, dict]    # size name -> parameters for make_args
    make_args: Callable       # (params, rng) -> tuple of kernel arguments
    tol: Tuple[float, float]  # (atol, rtol) of np.allclose
    tol_source: str           # where the tolerance comes from
    flops: Optional[Callable] = None      # params -> useful FLOPs (matmul work)
    measured_us: Optional[float] = None   # trn1 measurement (tutorial size), microseconds
    measured_source: str = ""
    nca_port: Tuple[str, ...] = ()        # ids of the hand-written NCA port in validation/manifest.json
    exact: bool = False                   # compare with ==, not allclose
    extra: dict = field(default_factory=dict)

    def load(self):
        mod = importlib.import_module("ncsim.nki.examples." + self.module)
        return getattr(mod, self.kernel), mod.reference

    def args(self, size, seed=0, timing=False):
        """The kernel's arguments at a size. timing=True: for a timing run, where the
        matmul tutorials' bf16 inputs are given as placeholders (values are not needed)."""
        p = dict(self.sizes[size])
        if timing:
            p["timing"] = True
        return self.make_args(p, np.random.default_rng(seed))

    def describe(self, size):
        return ", ".join("%s=%s" % kv for kv in self.sizes[size].items())


# --- argument builders -------------------------------------------------------

def _mm_args(p, rng):
    if p.get("timing"):
        # The tutorial benchmarks bf16 operands.
        return (_bf16_placeholder((p["K"], p["M"])), _bf16_placeholder((p["K"], p["N"])))
    # Values: fp32 (the frontend has no bf16 host arrays without ml_dtypes); the kernels
    # compute in their inputs' dtype, so the check is of the fp32 version.
    lhs = _rand(rng, (p["M"], p["K"]))
    rhs = _rand(rng, (p["K"], p["N"]))
    # The kernels take the left operand already transposed.
    return (np.ascontiguousarray(lhs.T), rhs)


def _mm_opt_args(p, rng):
    args = _mm_args(p, rng)
    blocks = p.get("blocks")
    return args + tuple(blocks) if blocks else args


def _mm_flops(p):
    return 2.0 * p["M"] * p["N"] * p["K"]


def _ln_args(p, rng):
    x = _rand(rng, (p["R"], p["C"]))
    gamma = _rand(rng, (p["C"],))
    beta = _rand(rng, (p["C"],))
    return (x, 1e-5, gamma, beta)


def _attn_args(p, rng):
    shape = (p["seqlen"], p["d_head"])
    return (_rand(rng, shape), _rand(rng, shape), _rand(rng, shape))


def _attn_flops(p):
    return 4.0 * p["seqlen"] * p["seqlen"] * p["d_head"]


def _mamba_args(p, rng):
    b, c, s, L = p["batch"], p["channels"], p["state"], p["L"]
    if p.get("ones"):
        # The tutorial's own check: all-ones inputs, A = -1.
        return (np.ones((b, c, L), np.float32), np.ones((b, c, L), np.float32),
                -np.ones((c, s), np.float32), np.ones((b, s, L), np.float32),
                np.ones((b, s, L), np.float32))
    delta = (0.05 + 0.1 * rng.random((b, c, L))).astype(np.float32)
    u = rng.standard_normal((b, c, L)).astype(np.float32)
    A = -(0.5 + rng.random((c, s))).astype(np.float32)
    B = rng.standard_normal((b, s, L)).astype(np.float32)
    C = rng.standard_normal((b, s, L)).astype(np.float32)
    return (delta, u, A, B, C)


def _transpose_args(p, rng):
    P, X, Y = p["P"], p["X"], p["Y"]
    dt = np.dtype(p["dtype"])
    data = (np.arange(P * X * Y) % (127 if dt == np.int8 else 1 << 20)).astype(dt)
    return (data.reshape(P, X * Y), (X, Y))


def _avgpool_args(p, rng):
    C, H, W = p["C"], p["H"], p["W"]
    dt = np.dtype(p["dtype"])
    data = (np.arange(C * H * W) % 1024).astype(dt).reshape(C, H, W)
    return (data, p["pool"])


def _rms_args(p, rng):
    return (_rand(rng, (p["R"], p["N"])), _rand(rng, (p["N"],)))


def _adamw_args(p, rng):
    shape = (p["M"], p["N"])
    theta = rng.standard_normal(shape).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    m = (0.1 * rng.standard_normal(shape)).astype(np.float32)
    v = (0.01 * rng.random(shape)).astype(np.float32)
    return (theta, g, m, v)


def _silu_args(p, rng):
    return (rng.standard_normal((p["M"], p["N"])).astype(np.float32),)


# --- the cases ---------------------------------------------------------------

MM_TOL = (1e-4, 1e-2)
MM_TOL_SRC = "matmul tutorial test (atol 1e-4, rtol 1e-2)"
MM_BENCH = dict(M=4096, K=8192, N=8192)   # tutorial benchmark: lhsT [8192, 4096], rhs [8192, 8192]
MM_MODERATE = dict(M=2048, K=1024, N=1024)   # the smallest size every blocked version takes

CASES = [
    Case("matmul_basic", "matmul_basic", "nki_matmul_basic_", "matmul 0: one tile",
         {"small": dict(M=64, K=128, N=512), "moderate": dict(M=64, K=128, N=512),
          "tutorial": dict(M=64, K=128, N=512)},
         _mm_args, MM_TOL, MM_TOL_SRC, flops=_mm_flops),
    Case("matmul_tiled", "matmul_tiled", "nki_matmul_tiled_", "matmul 1: tiled",
         {"small": dict(M=256, K=256, N=1024), "moderate": MM_MODERATE,
          "tutorial": MM_BENCH},
         _mm_args, MM_TOL, MM_TOL_SRC, flops=_mm_flops),
    Case("matmul_hoisted", "matmul_hoisted", "nki_matmul_hoist_load_", "matmul 2: hoisted loads",
         {"small": dict(M=256, K=256, N=1024), "moderate": MM_MODERATE,
          "tutorial": MM_BENCH},
         _mm_args, MM_TOL, MM_TOL_SRC, flops=_mm_flops),
    Case("matmul_block_free", "matmul_block_free", "nki_matmul_block_free_dimension_",
         "matmul 3: blocked free dims",
         {"small": dict(M=256, K=256, N=1024), "moderate": MM_MODERATE,
          "tutorial": MM_BENCH},
         _mm_args, MM_TOL, MM_TOL_SRC, flops=_mm_flops),
    Case("matmul_optimized", "matmul_optimized", "nki_matmul_fully_optimized_",
         "matmul 4: fully optimised",
         {"small": dict(M=256, K=512, N=1024, blocks=(2, 2, 2)),
          "moderate": MM_MODERATE,
          "tutorial": MM_BENCH},
         _mm_opt_args, MM_TOL, MM_TOL_SRC, flops=_mm_flops),
    Case("layernorm_v1", "layernorm_v1", "nki_layernorm_kernel_v1", "LayerNorm v1 (nl)",
         {"small": dict(R=300, C=1000), "moderate": dict(R=1024, C=2048),
          "tutorial": dict(R=4096, C=8192)},
         _ln_args, (1e-3, 1e-2), "layernorm tutorial test (atol 1e-3, rtol 1e-2)",
         measured_us=2311.0, measured_source="LayerNorm tutorial, trn1, p50",
         nca_port=("layernorm-v1",)),
    Case("layernorm_v2", "layernorm_v2", "nki_layernorm_kernel_v2",
         "LayerNorm v2 (bn_stats/bn_aggr)",
         {"small": dict(R=300, C=1000), "moderate": dict(R=1024, C=2048),
          "tutorial": dict(R=4096, C=8192)},
         _ln_args, (1e-3, 1e-2), "layernorm tutorial test (atol 1e-3, rtol 1e-2)",
         measured_us=1969.0, measured_source="LayerNorm tutorial, trn1, p50",
         nca_port=("layernorm-v2",)),
    Case("attention", "fused_self_attention", "fused_self_attn_for_SD_small_head_size",
         "fused self-attention (SD, d_head 64)",
         {"small": dict(seqlen=256, d_head=64), "moderate": dict(seqlen=1024, d_head=64),
          "tutorial": dict(seqlen=4096, d_head=64)},
         _attn_args, (1e-5, 1e-3), "fused attention script (atol 1e-5, rtol 1e-3)",
         flops=_attn_flops),
    Case("mamba_v1", "mamba_v1", "mamba_v1", "Mamba v1",
         {"small": dict(batch=1, channels=256, state=4, L=512),
          "moderate": dict(batch=1, channels=256, state=16, L=512),
          "tutorial": dict(batch=1, channels=256, state=16, L=2048)},
         _mamba_args, (1e-2, 1e-2), "mamba torch toy example (atol = rtol = 1e-2)"),
    Case("mamba_v2", "mamba_v2", "mamba_v2", "Mamba v2",
         {"small": dict(batch=1, channels=256, state=4, L=512),
          "moderate": dict(batch=1, channels=256, state=16, L=512),
          "tutorial": dict(batch=1, channels=256, state=16, L=2048)},
         _mamba_args, (1e-2, 1e-2), "mamba torch toy example (atol = rtol = 1e-2)"),
    Case("mamba_v3", "mamba_v3", "mamba_v3", "Mamba v3",
         {"small": dict(batch=1, channels=256, state=4, L=1024),
          "moderate": dict(batch=1, channels=256, state=16, L=512),
          "tutorial": dict(batch=1, channels=256, state=16, L=2048)},
         _mamba_args, (1e-2, 1e-2), "mamba torch toy example (atol = rtol = 1e-2)"),
    Case("transpose2d", "transpose2d", "tensor_transpose2D_kernel_", "transpose2d",
         {"small": dict(P=5, X=3, Y=4, dtype="int8"),
          "moderate": dict(P=128, X=32, Y=32, dtype="float32"),
          "tutorial": dict(P=5, X=3, Y=4, dtype="int8")},
         _transpose_args, (0.0, 0.0), "transpose2d test (exact)", exact=True),
    Case("avgpool2d", "avgpool2d", "tensor_avgpool_kernel", "avgpool2d",
         {"small": dict(C=2, H=6, W=6, pool=2, dtype="float16"),
          "moderate": dict(C=128, H=64, W=64, pool=2, dtype="float32"),
          "tutorial": dict(C=2, H=6, W=6, pool=2, dtype="float16")},
         _avgpool_args, (0.0, 0.0), "avgpool2d test (exact)", exact=True),
    Case("rmsnorm", "rmsnorm", "nki_rmsnorm_kernel", "RMSNorm",
         {"small": dict(R=250, N=512), "moderate": dict(R=1024, N=2048),
          "tutorial": dict(R=250, N=512)},
         _rms_args, (1e-5, 1e-3), "rmsnorm torch script (atol 1e-5, rtol 1e-3)"),
    Case("adamw", "adamw", "adamw_kernel", "adamw (NKIBench)",
         {"small": dict(M=200, N=2048), "moderate": dict(M=1088, N=2048),
          "tutorial": dict(M=10944, N=2048)},
         _adamw_args, (1e-5, 1e-4), "ours: fp32 throughout (NKIBench's tolerance is not published)",
         measured_us=1999.8, measured_source="NKIBench/AccelOpt baseline, trn1, mean of 10",
         nca_port=("adamw-time",)),
    Case("silu", "silu", "silu_kernel", "silu (NKIBench)",
         {"small": dict(M=256, N=2048), "moderate": dict(M=1024, N=7168),
          "tutorial": dict(M=4096, N=7168)},
         _silu_args, (1e-5, 1e-4), "ours: fp32 throughout (NKIBench's tolerance is not published)",
         measured_us=1333.2, measured_source="NKIBench/AccelOpt baseline, trn1, mean of 10",
         nca_port=("silu-time",)),
]

BY_NAME = {c.name: c for c in CASES}
