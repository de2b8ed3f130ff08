"""Run a catalog case through the ncsim NKI frontend: values, check, timing.

The one place that knows how the frontend returns values, statistics and
check results, shared by the tests and by table.py.
"""
import numpy as np

from ncsim import nki

from ncsim.nki.examples.catalog import BY_NAME, CASES  # noqa: F401


def simulate(case, size="small", seed=0):
    """Run the kernel functionally; return (output, expected, args)."""
    kernel, reference = case.load()
    args = case.args(size, seed)
    out = nki.simulate_kernel(kernel, *args)
    return out, reference(*args), args


def compare(case, out, expected):
    """Raise AssertionError if out differs from expected beyond the case's tolerance."""
    out = np.asarray(out)
    assert out.shape == expected.shape, "shape %s, expected %s" % (out.shape, expected.shape)
    if case.exact:
        np.testing.assert_array_equal(out, expected)
    else:
        atol, rtol = case.tol
        np.testing.assert_allclose(out.astype(np.float64), expected.astype(np.float64),
                                   atol=atol, rtol=rtol)


class CheckReport:
    """`ncsim check` findings of a lowered kernel; clean when there are none."""

    def __init__(self, findings):
        self.findings = list(findings)
        self.clean = not self.findings

    def __repr__(self):
        return "CheckReport(%d findings: %r)" % (len(self.findings), self.findings[:5])


def check(case, size="small", seed=0):
    kernel, _ = case.load()
    return CheckReport(nki.check(kernel, *case.args(size, seed)))


def benchmark(case, size="moderate", seed=0, policy=None):
    """Timing-only run; return (p50 latency in microseconds, statistics dict)."""
    kernel, _ = case.load()
    args = case.args(size, seed, timing=True)
    bench = nki.benchmark(warmup=0, iters=1, **({"policy": policy} if policy else {}))(kernel)
    bench(*args)
    result = bench.benchmark_result
    latency_us = result.nc_latency.get_latency_percentile(50)
    return latency_us, result.stats


# --- figures derived from ncsim statistics ------------------------------------

ENGINES = ("pe", "act", "dve", "pool")
LATENCY_BOUND_BUSY = 0.25   # below this the busiest resource does not explain the time


def summarize(stats):
    """Busy fractions per engine and DMA, MFU, DMA bandwidth, busiest resource."""
    total = float(stats["total_ns"])
    core = stats["cores"][0]
    busy = {e: core["engines"][e]["busy_ns"] / total for e in ENGINES}
    busy["dma"] = core["dma"]["busy_ns"] / total
    dma_gbps = core["dma"]["bytes"] / total    # bytes per ns = GB/s
    bottleneck = max(busy, key=busy.get)
    if busy[bottleneck] < LATENCY_BOUND_BUSY:
        # No resource is busy for most of the run: fixed costs (DMA latency, semaphore
        # round trips, instruction start-up) make up the time.
        bottleneck = "latency"
    return {
        "total_us": total / 1000.0,
        "busy": busy,
        "mfu": stats.get("mfu", 0.0),
        "dma_gbps": dma_gbps,
        "hbm_gbps": stats.get("hbm", {}).get("achieved_gbps", 0.0),
        "bottleneck": bottleneck,
        "instructions": stats.get("instructions", 0),
    }
