#!/usr/bin/python3
"""Writes validation/manifest.json: one entry per measurement of the published trn1 figures
(docs/validation.md). Edit the entries here, not in the JSON: `/usr/bin/python3
validation/gen/mkmanifest.py > validation/manifest.json`."""
import json

E = []


def entry(id, title, source, choices, figure, measured, band=0.15, weight=1.0, fit=True,
          program=None, generate=None, arch="trn1", set=None, divide=None, relative_to=None):
    e = {"id": id, "title": title, "source": source, "choices": choices}
    if program:
        e["program"] = program
    else:
        e["generate"] = generate
    e["arch"] = arch
    if set:
        e["set"] = set
    e["figure"] = figure
    if divide:
        e["divide"] = divide
    if relative_to:
        e["relative_to"] = relative_to
    e.update({"measured": measured, "band": band, "weight": weight, "fit": fit})
    E.append(e)


PY = "python3"

# ---- section 1: DMA throughput against bytes per partition ------------------------------------
curve = [(32, 0.015), (64, 0.027), (128, 0.0515), (256, 0.104), (512, 0.21), (1024, 0.422),
         (2048, 0.813), (4096, 0.966), (8192, 0.9835), (16384, 0.991), (32768, 1.0)]
# The figure has no y-axis values: every point is relative to the 32 KiB one. That one's
# absolute value is inferred from fig30 (section 2): 32 KiB engine transfers of 4 KiB per
# partition move 16 x 32768 B / 1810 ns = 290 GB/s per core, which the curve puts at 0.966 of
# its plateau, so the plateau is ~300 GB/s (low weight: a cross-figure inference).
for b, rel in reversed(curve):
    entry(f"dma-curve-{b}", f"DMA throughput, 128 partitions x {b} B, relative to 32 KiB",
          "measurements.md section 1: DMA-overview figure nki-dma-intro-1.jpg, mean of the two "
          "pixel readings, relative to the 32 KiB/partition point",
          "64 back-to-back loads of a contiguous HBM [128, B] tensor into SBUF on one queue "
          "(the figure gives neither the count nor the queues; the flat part of the curve says "
          "the DMAs' fixed costs did not overlap each other, i.e. one queue)",
          "dma_bandwidth_gbps", rel if b != 32768 else 300.0,
          band=0.15 if b >= 64 else 0.25, weight=(1.0 if b >= 64 else 0.5) if b != 32768 else 0.25,
          generate=[PY, "gen/dma_stream.py", "--mode", "curve", "--bpp", str(b), "--n", "64"],
          relative_to=None if b == 32768 else "dma-curve-32768")

# ---- section 2: fig29 / fig30 -----------------------------------------------------------------
entry("fig30-transfer", "one 32 KiB DMA engine transfer while all engines stream (fig30)",
      "measurements.md section 2: perf guide fig30 tooltip, 32 KiB on DMA engine 9 in 1810 ns",
      "the guide's snippet repeated 32 times: load fp32 [128, 1024] (16 engine transfers of "
      "8 partitions x 4 KiB), copy on ScalarE, store; loads and stores on one queue (the profile "
      "names one IO queue set), 4 tile buffers",
      "dma_transfer_ns", 1810,
      generate=[PY, "gen/dma_stream.py", "--mode", "loadstore", "--n", "32"])
entry("fig30-utilisation", "DMA throughput of the fig30 stream (~68% of 16 x 27.2 GB/s)",
      "measurements.md section 2: fig30 annotation '~68% DMA throughput utilization' of "
      "16 x 27.2 GB/s = 296 GB/s (the peak the profiler uses is inferred)",
      "as fig30-transfer; the figure is the DMA bytes over the whole run",
      "dma_bandwidth_gbps", 296, weight=0.5,
      generate=[PY, "gen/dma_stream.py", "--mode", "loadstore", "--n", "32"])
entry("fig29-tiny", "a 4-byte DMA transfer (fig29)",
      "measurements.md section 2: perf guide fig29 tooltip, 4 B transfer lasting 7 ns",
      "64 single-element fp32 DMAs on one queue",
      "dma_transfer_ns", 7, weight=0.5,
      generate=[PY, "gen/dma_stream.py", "--mode", "tiny", "--n", "64"])

# ---- section 5: nccom-test ----------------------------------------------------------------------
ar = [(1024, 58), (4096, 58), (16384, 58), (65536, 58), (262144, 60), (1048576, 68),
      (4194304, 107), (16777216, 332), (67108864, 1214), (268435456, 4750),
      (1073741824, 18930)]
for s, us in ar:
    entry(f"allreduce-2r-{s}", f"2-rank fp32 all-reduce of {s} B on one chip",
          "measurements.md section 5.2: nccom-test -r 2 --datatype fp32 allr, P50 time",
          "the two NeuronCores of one trn1 chip, ring algorithm (2 steps of S/2); one "
          "collective per run (nccom-test's P50 of 20)",
          "time_ns", us * 1000.0,
          generate=[PY, "gen/collective.py", "--op", "all_reduce", "--ranks", "2",
                    "--bytes", str(s)])
entry("allreduce-2r-u8-32M", "2-rank uint8 all-reduce of 32 MiB on one chip",
      "measurements.md section 5.1: nccom-test -r 2 allr (uint8 default), 768 us",
      "as the fp32 sweep, with uint8 data (reduced through fp32 by the DMA engines)",
      "time_ns", 768000.0, fit=False,
      generate=[PY, "gen/collective.py", "--op", "all_reduce", "--ranks", "2",
                "--bytes", "33554432", "--dtype", "u8"])
for s, us in [(1024, 151), (8192, 149), (65536, 150), (524288, 179)]:
    entry(f"allgather-32r-{s}", f"32-rank fp32 all-gather, {s} B output per rank",
          "measurements.md section 5.3: nccom-test -r 32 --datatype fp32 --check allg, P50 time",
          "trn1.32xlarge (preset trn1-32xl, 16 chips in a 4 x 4 torus); ring over the cores in a "
          "snake order of the chips (both cores of a chip adjacent), so each step crosses at most "
          "one NeuronLink hop",
          "time_ns", us * 1000.0, arch="trn1-32xl",
          generate=[PY, "gen/collective.py", "--op", "all_gather", "--ranks", "32",
                    "--bytes", str(s), "--arch", "trn1-32xl"])

# ---- section 6: ScalarE chain -------------------------------------------------------------------
for fig, val, what in [("mean_duration_ns:activate", 159, "duration"),
                       ("mean_interval_ns:activate", 189, "interval")]:
    entry(f"act-chain-{what}", f"dependent 1-element ScalarE activations: {what}",
          "measurements.md section 6: perf guide fig16, ACTIVATE lasting 159 ns, 189 ns apart",
          "256 dependent activate(identity) of [128, 1] fp32 with per-partition scale and bias "
          "vectors; each waits on and posts the ScalarE's own semaphore as in the profile",
          fig, val, generate=[PY, "gen/act_chain.py", "--k", "256"])

# ---- section 8: one MATMUL -----------------------------------------------------------------------
entry("matmul-latency-148ns", "one fp16 MATMUL with a 3-column moving tile (sanity)",
      "measurements.md section 8: neuron-profile JSON example, MATMUL fp16 [3,1,1] lasting 148 ns",
      "a 128 x 128 fp16 stationary and a [128, 3] fp16 moving tile; start-to-end duration",
      "mean_duration_ns:matmul", 148, weight=0.25, program="programs/matmul_148.nca")

json.dump({"name": "trn1-published",
           "description": "Published trn1 (NeuronCore-v2) measurements: DMA curve and transfers, "
                          "nccom-test collectives, ScalarE chain, AccelOpt kernels, LayerNorm, "
                          "conv1d (docs/validation.md)",
           "entries": E}, __import__("sys").stdout, indent=2)
print()
