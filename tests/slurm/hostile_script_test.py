#!/usr/bin/python3
"""The script of `ncsim sweep --slurm` run for real against a fake `sbatch`, with hostile spec
names, output folders and --sbatch options (issue 28, item 1).

The fake sbatch (written below, put first on PATH) records every call: its arguments, the
#SBATCH directives of the script it is given, split the way sbatch splits them (whitespace,
quotes, '#' comments, backslash escapes), and then does what Slurm would do: it runs the array
tasks (bash SCRIPT with SLURM_ARRAY_TASK_ID set) and the merge job (--wrap, under /bin/sh).
Every value carries `$(touch${IFS}PWNED...)`, backquotes, quotes, ';', '#' and spaces: the test
checks that the calls and the directives are exactly the intended ones, that the sweep's
results arrive in the hostile folder, and that no PWNED file appeared anywhere.
Values that cannot be quoted safely (a line break, '%' in the folder) must be refused, exit 2.

usage: hostile_script_test.py NCSIM SOURCE_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

FAKE_SBATCH = r'''#!/usr/bin/python3
import json, os, subprocess, sys

def directive_args(line):
    """One #SBATCH line split like sbatch's _get_argument does."""
    args, cur, have, q, esc = [], [], False, None, False
    for c in line:
        if esc:
            cur.append(c); have = True; esc = False
        elif c == "\\":
            esc = True
        elif q:
            if c == q: q = None
            else: cur.append(c)
        elif c in "\"'":
            q = c; have = True
        elif c == "#":
            break
        elif c.isspace():
            if cur or have: args.append("".join(cur))
            cur, have = [], False
        else:
            cur.append(c); have = True
    if cur or have: args.append("".join(cur))
    return args

log = os.environ["FAKE_SBATCH_LOG"]
argv = sys.argv[1:]
rec = {"argv": argv}
wrap = [a[len("--wrap="):] for a in argv if a.startswith("--wrap=")]
if wrap:
    r = subprocess.run(["/bin/sh", "-c", wrap[0]], capture_output=True, text=True)
    rec["wrap_exit"] = r.returncode
    rec["wrap_stderr"] = r.stderr
else:
    script = argv[-1]
    dirs = []
    with open(script) as f:
        for line in f:
            if line.startswith("#SBATCH"):
                dirs.append(directive_args(line[len("#SBATCH"):]))
            elif line.strip() and not line.startswith("#"):
                break
    rec["directives"] = dirs
    arr = [d[0] for d in dirs if d and d[0].startswith("--array=")][0]
    last = int(arr.split("=")[1].split("-")[1])
    rec["task_exits"] = []
    for t in range(last + 1):
        env = dict(os.environ, SLURM_ARRAY_TASK_ID=str(t))
        r = subprocess.run(["bash", script], env=env, capture_output=True, text=True)
        rec["task_exits"].append(r.returncode)
with open(log, "a") as f:
    f.write(json.dumps(rec) + "\n")
print("%d;cluster" % (4242 + sum(1 for _ in open(log))))
'''

HOSTILE = "x$(touch${IFS}PWNED1)`touch PWNED2`;touch PWNED3;'q\"#h \\"


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    ncsim, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    exe = os.path.realpath(ncsim)
    top = tempfile.mkdtemp(prefix="ncsim-slurm-hostile-")
    try:
        run(ncsim, exe, src, top)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    print("ok")


def run(ncsim, exe, src, top):
    bindir = os.path.join(top, "bin")
    os.mkdir(bindir)
    with open(os.path.join(bindir, "sbatch"), "w") as f:
        f.write(FAKE_SBATCH)
    os.chmod(os.path.join(bindir, "sbatch"), 0o755)
    work = os.path.join(top, "work" + HOSTILE)
    os.mkdir(work)
    spec = os.path.join(work, "-" + HOSTILE + ".json")
    prog = os.path.join(src, "kernels", "demo_gemm.nca")
    with open(spec, "w") as f:
        json.dump({"program": prog, "grid": {"hbm.bandwidth_gbps": [410, 820]}}, f)
    out = os.path.join(work, "out" + HOSTILE)
    opt = "--comment=" + HOSTILE
    env = dict(os.environ, PATH=bindir + ":" + os.environ.get("PATH", ""),
               FAKE_SBATCH_LOG=os.path.join(top, "sbatch.log"))
    env.pop("SLURM_ARRAY_TASK_ID", None)

    gen = subprocess.run([ncsim, "sweep", spec, "--slurm", "--out", out, "--sbatch", opt],
                         cwd=work, capture_output=True, text=True, env=env)
    if gen.returncode != 0:
        fail("--slurm exit %d: %s" % (gen.returncode, gen.stderr))
    script = os.path.join(top, "job.sh")
    with open(script, "w") as f:
        f.write(gen.stdout)
    r = subprocess.run(["bash", script], cwd=work, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        fail("bash SCRIPT exit %d: %s%s" % (r.returncode, r.stdout, r.stderr))

    calls = [json.loads(line) for line in open(env["FAKE_SBATCH_LOG"])]
    if len(calls) != 2:
        fail("%d sbatch calls, wanted 2: %r" % (len(calls), calls))
    a, m = calls
    if a["argv"] != ["--parsable", "--", script]:
        fail("array submission: %r" % a["argv"])
    want_dirs = [["--job-name=ncsim-sweep--" + HOSTILE], ["--array=0-1"], ["--ntasks=1"],
                 ["--cpus-per-task=1"], ["--output=" + out + "/slurm-%A_%a.out"], [opt]]
    if a["directives"] != want_dirs:
        fail("directives as sbatch reads them:\n%r\nwanted\n%r" % (a["directives"], want_dirs))
    if a["task_exits"] != [0, 0]:
        fail("array tasks exited %r" % a["task_exits"])
    spec_real = os.path.realpath(spec)
    csv = out + "/results.csv"
    merge = "exec '%s' sweep '%s' --merge --out '%s' --csv '%s'" % tuple(
        v.replace("'", "'\\''") for v in (exe, spec_real, out, csv))
    want_merge = ["--parsable", "--dependency=afterok:4243",
                  "--job-name=ncsim-merge--" + HOSTILE, "--ntasks=1",
                  "--output=" + out + "/slurm-merge-%j.out", opt, "--wrap=" + merge]
    if m["argv"] != want_merge:
        fail("merge submission:\n%r\nwanted\n%r" % (m["argv"], want_merge))
    if m["wrap_exit"] != 0:
        fail("merge job exit %d: %s" % (m["wrap_exit"], m["wrap_stderr"]))
    rows = open(csv).read().splitlines()
    if len(rows) != 3 or not all(r.endswith(",ok") for r in rows[1:]):
        fail("results.csv: %r" % rows)
    if "array job 4243 (2 tasks), merge job 4244" not in r.stdout:
        fail("bash SCRIPT printed %r" % r.stdout)
    for dirpath, dirnames, filenames in os.walk(top):
        for n in filenames + dirnames:
            if n.startswith("PWNED"):
                fail("injected command ran: %s" % os.path.join(dirpath, n))

    # refused: a line break in the folder, the spec name or an option; '%' in the folder
    nl_spec = os.path.join(work, "a\ntouch PWNED4\n.json")
    shutil.copy(spec, nl_spec)
    for args, needle in (([spec, "--out", work + "/o\ntouch PWNED5"], "control character"),
                         ([nl_spec, "--out", out], "control character"),
                         ([spec, "--out", out, "--sbatch", "--x=1\ntouch PWNED6"],
                          "control character"),
                         ([spec, "--out", work + "/o%j"], "'%'"),
                         ([spec, "--out", out, "--sbatch", "touch"], "not an sbatch option")):
        r = subprocess.run([ncsim, "sweep"] + args + ["--slurm"], cwd=work, capture_output=True,
                           text=True, env=env)
        if r.returncode != 2 or needle not in r.stderr or r.stdout:
            fail("%r: exit %d, stdout %r, stderr %r (wanted exit 2 naming %r)"
                 % (args, r.returncode, r.stdout, r.stderr, needle))
    for dirpath, dirnames, filenames in os.walk(top):
        for n in filenames + dirnames:
            if n.startswith("PWNED"):
                fail("injected command ran: %s" % os.path.join(dirpath, n))


if __name__ == "__main__":
    main()
