"""ncsim-neuron-profile: the `neuron-profile` command's interface over ncsim's simulated runs.

    ncsim-neuron-profile view -n file.neff -s profile.ntff --output-format summary-json
    ncsim-neuron-profile view -n file.neff -s profile.ntff --output-format json --output-file out.json
    ncsim-neuron-profile capture -n file.neff -s profile.ntff
    ncsim-neuron-profile view --terminology
    ncsim-neuron-profile install-alias DIR      # a `neuron-profile` in DIR (opt-in; refuses a real one)

The "NEFF" is the lowered program ncsim writes for `nki.baremetal(save_neff_name=...)` (an .ncx
image), the "NTFF" is the trace of its simulated run (`save_trace_name=...`). Every figure is
simulated: the summary says so (`is_simulation`, `simulator`). The summary itself is computed
once, in C (traces/profile.c, ncsim_profile_summary); this module is its command line.
docs/nki.md lists every field and how it is computed.
"""
import argparse
import json
import os
import shutil
import sys

ALIAS_MARK = "# ncsim neuron-profile alias"

# exit codes of the ncsim command (docs/cli.md)
EXIT_USAGE, EXIT_IO = 2, 3


def _fail(msg, code):
    print(f"ncsim-neuron-profile: {msg}", file=sys.stderr)
    return code


def _sidecar(ntff):
    """What nki.baremetal recorded next to the NTFF (kernel, options, the lowering's spills)."""
    try:
        with open(ntff + ".ncsim.json") as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def _session_files(d):
    """-d DIR: the one NEFF and NTFF of a session directory."""
    names = sorted(os.listdir(d))
    neffs = [n for n in names if n.endswith(".neff")]
    ntffs = [n for n in names if n.endswith(".ntff")]
    if len(ntffs) != 1:
        raise ValueError(f"{d}: expected one .ntff file, found {len(ntffs)}")
    return (os.path.join(d, neffs[0]) if len(neffs) == 1 else None), os.path.join(d, ntffs[0])


def view(args):
    import ncsim
    if args.terminology:
        _print_terminology()
        return 0
    fmt = args.output_format
    if fmt in ("db", "perfetto"):
        what = ("the NTFF ncsim writes is already a Perfetto trace: open it at "
                "https://ui.perfetto.dev" if fmt == "perfetto" else
                "ncsim has no profile database")
        return _fail(f"--output-format {fmt} is not supported ({what}); use summary-json, "
                     "summary-text or json", EXIT_USAGE)
    neff, ntff = args.neff, args.session_file
    if args.session_dir:
        try:
            neff2, ntff = _session_files(args.session_dir)
        except (OSError, ValueError) as e:
            return _fail(str(e), EXIT_IO)
        neff = neff or neff2
    if not ntff:
        return _fail("view needs -s NTFF (the trace of the run) or -d DIR", EXIT_USAGE)
    side = _sidecar(ntff)
    key = os.path.splitext(os.path.basename(ntff))[0] or "ncsim"
    try:
        text = ncsim.profile_summary(
            ntff, output_format={"summary-text": "summary-text", "summary-json": "summary-json",
                                 "json": "json"}[fmt],
            core=args.nc_idx, program=neff, key=key,
            spill_save_bytes=side.get("spill_save_bytes"),
            spill_reload_bytes=side.get("spill_reload_bytes"))
    except ncsim.NcsimError as e:
        hint = ""
        if neff and e.file and os.path.abspath(e.file) == os.path.abspath(neff):
            hint = (" (ncsim reads the program it wrote for save_neff_name=, an .ncx image, "
                    "not a NEFF compiled by neuronx-cc)")
        lines = str(e).splitlines() or [""]
        more = f" (and {len(lines) - 1} more lines)" if len(lines) > 1 else ""
        return _fail(f"{lines[0]}{more}{hint}", ncsim_exit(e))
    out = args.output_file
    if out:
        try:
            tmp = out + ".tmp"
            with open(tmp, "w") as f:
                f.write(text)
            os.replace(tmp, out)
        except OSError as e:
            return _fail(f"cannot write {out}: {e.strerror}", EXIT_IO)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return 0


def ncsim_exit(e):
    """The exit code of the ncsim command for this error (docs/cli.md)."""
    return getattr(e, "exit_code", None) or EXIT_IO


def _print_terminology():
    """Every field: name, unit, how ncsim computes it (the C side's one table)."""
    import ncsim
    print("Fields of the summary; every figure is simulated by ncsim. *_percent fields are")
    print("fractions in [0, 1]. [trace]: absent from a summary of a statistics file.")
    for key, unit, text, trace_only in ncsim.profile_fields():
        print(f"{key:44s} {unit:9s} {text}{' [trace]' if trace_only else ''}")


def capture(args):
    """Simulate the program (timing only, seeded random inputs) and write its trace as NTFF."""
    import ncsim
    if not args.neff or not args.session_file:
        return _fail("capture needs -n PROGRAM and -s NTFF", EXIT_USAGE)
    target = args.session_file
    tmp = target + ".tmp.pftrace"
    try:
        prog = ncsim.load(args.neff) if args.neff.endswith(".ncx") else ncsim.assemble_file(args.neff)
        ncsim.run(prog, None, timing_only=True, trace=tmp)
        os.replace(tmp, target)
    except ncsim.NcsimError as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        return _fail(str(e), ncsim_exit(e))
    return 0


def install_alias(args):
    """Write DIR/neuron-profile running this command; refuse when a real one would be shadowed."""
    d = os.path.abspath(args.directory)
    dest = os.path.join(d, "neuron-profile")

    def ours(path):
        try:
            with open(path) as f:
                return ALIAS_MARK in f.read(4096)
        except (OSError, UnicodeDecodeError):
            return False
    found = shutil.which("neuron-profile")
    if found and not ours(found) and not args.force:
        return _fail(f"a real neuron-profile is on PATH ({found}); ncsim will not shadow it "
                     "(pass --force to write the alias anyway)", 1)
    if os.path.exists(dest) and not ours(dest):
        return _fail(f"{dest} exists and is not ncsim's alias; not replacing it", 1)
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    script = (f"#!/bin/sh\n{ALIAS_MARK}: written by `ncsim-neuron-profile install-alias`.\n"
              "# Every figure it prints is simulated by ncsim (the summaries say so).\n"
              f"PYTHONPATH='{pkg_parent}'${{PYTHONPATH:+:$PYTHONPATH}} "
              f"exec '{sys.executable}' -m ncsim.neuron_profile \"$@\"\n")
    try:
        os.makedirs(d, exist_ok=True)
        with open(dest + ".tmp", "w") as f:
            f.write(script)
        os.chmod(dest + ".tmp", 0o755)
        os.replace(dest + ".tmp", dest)
    except OSError as e:
        return _fail(f"cannot write {dest}: {e.strerror}", EXIT_IO)
    print(f"wrote {dest}; put {d} on PATH to use it as neuron-profile")
    return 0


def _parser():
    p = argparse.ArgumentParser(
        prog="ncsim-neuron-profile",
        description="The neuron-profile interface (view, capture) over ncsim's simulated runs.")
    sub = p.add_subparsers(dest="command")
    v = sub.add_parser("view", help="print the summary of a run")
    v.add_argument("-n", "--neff", help="the program (.ncx from save_neff_name=, or .nca)")
    v.add_argument("-s", "--session-file", help="the trace of the run (NTFF)")
    v.add_argument("-d", "--session-dir", help="a directory holding one .ntff (and .neff)")
    v.add_argument("--output-format", default="summary-text",
                   help="summary-json, summary-text (default) or json")
    v.add_argument("--output-file", help="write there instead of stdout")
    v.add_argument("--nc-idx", type=int, default=0, help="the NeuronCore (default 0)")
    v.add_argument("--terminology", action="store_true", help="where the fields are described")
    c = sub.add_parser("capture", help="simulate a program and write its trace as NTFF")
    c.add_argument("-n", "--neff", help="the program (.ncx or .nca)")
    c.add_argument("-s", "--session-file", help="the NTFF to write")
    a = sub.add_parser("install-alias", help="write DIR/neuron-profile (opt-in)")
    a.add_argument("directory")
    a.add_argument("--force", action="store_true",
                   help="even when a real neuron-profile is on PATH")
    return p


def main(argv=None):
    p = _parser()
    # the real tool accepts options it has and ignores none; unknown ones are usage errors
    args, extra = p.parse_known_args(argv)
    if extra:
        return _fail(f"unknown arguments: {' '.join(extra)}", EXIT_USAGE)
    if args.command == "view":
        return view(args)
    if args.command == "capture":
        return capture(args)
    if args.command == "install-alias":
        return install_alias(args)
    p.print_usage(sys.stderr)
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
