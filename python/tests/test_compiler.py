"""A worked compiler test (docs/python.md): generate a GEMM kernel for several shapes, run each
in-process, check the result against NumPy and the simulated time against a budget derived
from the architecture's peak figures."""
import numpy as np
import pytest

import ncsim


def gemm_kernel(K, N, M=128):
    """NCA for c[M, N] = a[K, M]^T @ b[K, N] on one core: bf16 in, fp32 accumulation in two
    PSUM banks (512 columns each), so the copy-out of block n overlaps the matmuls of n+1."""
    assert K % 128 == 0 and N % 512 == 0 and M <= 128
    KT, NB = K // 128, N // 512
    out = [f".hbm a bf16 [{K}, {M}] input", f".hbm b bf16 [{K}, {N}] input",
           f".hbm c fp32 [{M}, {N}] output", ".core 0",
           f".sbuf ta bf16 [128, {KT}, {M}]", f".sbuf tb bf16 [128, {KT}, {N}]",
           f".psum acc fp32 [{M}, 2, 512]", f".sbuf tc fp32 [{M}, {N}]",
           ".sem la", ".sem lb", ".sem mm", ".sem cp", ".engine sp"]
    for k in range(KT):
        out.append(f"    dma ta[:, {k}, :], a[{k * 128}:{(k + 1) * 128}, :], queue={k % 8} | post la")
        out.append(f"    dma tb[:, {k}, :], b[{k * 128}:{(k + 1) * 128}, :], queue={8 + k % 8} | post lb")
    out.append(f"    dma c, tc, queue=0 | wait cp >= {NB}")
    out.append(".engine pe")
    for n in range(NB):
        if n >= 2:
            out.append(f"    nop | wait cp >= {n - 1}")  # PSUM bank n%2 has been copied out
        for k in range(KT):
            ops = f"acc[:, {n % 2}, :], ta[:, {k}, :], tb[:, {k}, {n * 512}:{(n + 1) * 512}]"
            acc = ", acc" if k else ""
            sync = f" | wait la >= {k + 1} | wait lb >= {k + 1}" if n == 0 else ""
            post = " | post mm" if k == KT - 1 else ""
            out.append(f"    matmul {ops}{acc}{sync}{post}")
    out.append(".engine act")
    for n in range(NB):
        out.append(f"    activate tc[:, {n * 512}:{(n + 1) * 512}], acc[:, {n % 2}, :], copy"
                   f" | wait mm >= {n + 1} | post cp")
    return "\n".join(out) + "\n"


def to_bf16(x):
    """float32 -> the nearest bf16 value (ties to even), as float32."""
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16 << 16).astype(np.uint32).view(np.float32)


def time_budget_ns(cfg, K, N, M=128):
    """Twice the roofline of one core (tensor-engine peak vs DMA bandwidth vs the DMA engines'
    descriptor processing, one descriptor per row moved) plus the latency of the first load
    and of the store (trigger and HBM) and 3 us for pipeline fill and drain."""
    pe = cfg["pe"]
    flops_per_ns = 2 * pe["rows"] * pe["cols"] * pe["clock_ghz"]
    dma = cfg["dma"]
    bytes_per_ns = min(dma["engines"] * dma["engine_bandwidth_gbps"], cfg["hbm"]["bandwidth_gbps"])
    moved = 2 * K * (M + N) + 4 * M * N
    descriptors = 2 * K + M                     # rows of a, of b, of c
    desc_ns = descriptors * dma["descriptor_ns"] / dma["engines"]
    latency = 2 * (dma["trigger_latency_ns"] + cfg["hbm"]["latency_ns"])
    return 2 * max(2 * M * N * K / flops_per_ns, moved / bytes_per_ns, desc_ns) + latency + 3000


@pytest.mark.parametrize("K,N", [(128, 512), (256, 1024), (512, 2048), (1024, 512)])
def test_generated_gemm(K, N):
    rng = np.random.default_rng(K * 7 + N)
    a = to_bf16(rng.standard_normal((K, 128)))
    b = to_bf16(rng.standard_normal((K, N)))
    result = ncsim.run(gemm_kernel(K, N), {"a": a, "b": b}, arch="trn1")

    want = a.astype(np.float64).T @ b.astype(np.float64)
    np.testing.assert_allclose(result.outputs["c"], want, rtol=2e-5, atol=2e-5 * np.sqrt(K))

    budget = time_budget_ns(ncsim.arch("trn1"), K, N)
    assert result.time_ns <= budget, f"{result.time_ns:.0f} ns > budget {budget:.0f} ns"
    assert result.stats["tensor_flops"] == 2 * 128 * N * K
