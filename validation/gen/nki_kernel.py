#!/usr/bin/python3
"""An NKI kernel lowered by the repository's NKI frontend (python/ncsim/nki), printed as NCA.

  nki_kernel.py --example NAME [--size tutorial]
      one of our tutorial kernels (python/ncsim/nki/examples/catalog.py) at a size of its
      catalog entry, inputs as shape-and-dtype placeholders (a timing-only program);
  nki_kernel.py --shared FILE --arg SHAPE [--arg SHAPE ...]
      a third-party NKI kernel (not in the repository), run unmodified from the directory
      that $NCSIM_NKI_KERNELS names; each --arg is an fp32 input shape such as 128x32x7168
      (validation/nki_shared.json).

The lowering policy is the frontend's default (docs/nki.md, "Lowering")."""
import argparse
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))

import numpy as np  # noqa: E402

from ncsim import nki  # noqa: E402
import ncsim.nki.typing as nt  # noqa: E402


def placeholder(a):
    if isinstance(a, np.ndarray):
        return nt.tensor[[*a.shape], a.dtype]
    return a


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--example")
    ap.add_argument("--size", default="tutorial")
    ap.add_argument("--shared")
    ap.add_argument("--func", default="kernel")
    ap.add_argument("--arg", action="append", default=[])
    a = ap.parse_args()
    if a.example:
        from ncsim.nki.examples.catalog import BY_NAME
        case = BY_NAME[a.example]
        kernel, _ = case.load()
        args = tuple(placeholder(x) for x in case.args(a.size, 0, timing=True))
    elif a.shared:
        d = os.environ.get("NCSIM_NKI_KERNELS")
        if not d:
            sys.exit("nki_kernel.py: set NCSIM_NKI_KERNELS to the directory of the NKIBench kernels")
        path = os.path.join(d, a.shared + ".py")
        if not os.path.isfile(path):
            sys.exit(f"nki_kernel.py: {path}: no such kernel (set NCSIM_NKI_KERNELS to the "
                     "directory of the shared NKI kernels)")
        nki.install_neuronxcc_alias()
        spec = importlib.util.spec_from_file_location("shared_kernel", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        kernel = getattr(mod, a.func)
        args = tuple(nt.tensor[[int(x) for x in s.split("x")], np.float32] for s in a.arg)
    else:
        sys.exit("nki_kernel.py: give --example NAME or --shared FILE")
    sys.stdout.write(nki.lower(kernel, *args).text)


if __name__ == "__main__":
    main()
