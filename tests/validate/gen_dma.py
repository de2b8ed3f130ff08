"""gen_dma.py -- a generator fixture of tests/unit/test_validate.c: prints an NCA program with
one DMA of a [128, C] fp32 tile from HBM into SBUF (C from --cols)."""
import argparse

p = argparse.ArgumentParser()
p.add_argument("--cols", type=int, required=True)
a = p.parse_args()
print(f".hbm x fp32 [128, {a.cols}] input")
print(".core 0")
print(f".sbuf t fp32 [128, {a.cols}]")
print(".engine sp")
print("    dma t, x, queue=0")
