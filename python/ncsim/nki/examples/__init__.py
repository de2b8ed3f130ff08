"""NKI tutorial kernels, written for ncsim from the public tutorials' descriptions.

One module per kernel, each with the kernel (NKI style, `@nki.jit`) and a
NumPy `reference`. `catalog.CASES` lists them with their sizes and
tolerances; `table.py` writes the table of docs/nki.md.
"""
