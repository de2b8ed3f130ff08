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
Then a fixed-seed sample of random folders and --sbatch values is checked the same way, without
running anything: each is refused, or read back exactly by bash, /bin/sh and the #SBATCH splitting.

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


def directive_parser():
    """directive_args of the fake sbatch, for the property check below."""
    src = FAKE_SBATCH.split("log = os.environ")[0]
    ns = {}
    exec(src.split("\n", 1)[1], ns)
    return ns["directive_args"]


def property_check(ncsim, exe, spec, top, env):
    """A fixed-seed sample of random output folders and --sbatch values, every byte but NUL
    and '/' in the folder's last component: each is refused (a control character; '%' in
    the folder) or reaches bash and sbatch's own splitting exactly as it was given."""
    import random
    rng = random.Random(28)
    split = directive_parser()
    alphabet = [chr(c) for c in range(32, 127) if c != ord("/")] + ["\u00e9", "\u4e2d", "\U0001f600"]
    controls = [chr(c) for c in range(1, 32)] + ["\x7f"]

    def sample(chars):
        text = "".join(rng.choice(chars) for _ in range(rng.randint(1, 12)))
        if rng.random() < 0.2:  # now and then a control character somewhere
            k = rng.randint(0, len(text))
            text = text[:k] + rng.choice(controls) + text[k:]
        return text
    checked = refused = 0
    for trial in range(150):
        name = sample(alphabet)
        if name in (".", ".."):
            continue
        opt = "--comment=" + sample(alphabet + ["/"])
        folder = os.path.join(top, "prop", name)
        os.makedirs(os.path.join(top, "prop"), exist_ok=True)
        gen = subprocess.run([ncsim, "sweep", spec, "--slurm", "--out", folder, "--sbatch", opt],
                             capture_output=True, env=env)
        bad = any(ord(c) < 32 or ord(c) == 127 for c in name + opt) or "%" in name
        if bad:
            if gen.returncode != 2 or gen.stdout:
                fail("%r / %r: exit %d, wanted a refusal (2)" % (name, opt, gen.returncode))
            if os.path.lexists(folder):
                fail("%r: a refused --out folder was left behind" % name)
            refused += 1
            continue
        if gen.returncode != 0:
            fail("%r / %r: exit %d: %s" % (name, opt, gen.returncode, gen.stderr))
        text = gen.stdout.decode("utf-8", "surrogateescape")
        real = os.path.realpath(folder)
        # the shell values, as bash reads them
        assigns = "\n".join(l for l in text.splitlines()
                            if l.split("=", 1)[0] in ("ncsim", "spec", "out", "csv", "merge_cmd"))
        r = subprocess.run(["bash", "-c", assigns + '\nprintf "%s\\0" "$ncsim" "$spec" "$out" '
                            '"$csv" "$merge_cmd"'], capture_output=True)
        got = r.stdout.decode("utf-8", "surrogateescape").split("\0")[:5]
        want = [exe, os.path.realpath(spec), real, real + "/results.csv"]
        if got[:4] != want:
            fail("bash reads %r, wanted %r" % (got[:4], want))
        # the merge command, as /bin/sh reads it
        r = subprocess.run(["sh", "-c", 'set -- ' + got[4].replace("exec ", "", 1) +
                            '; printf "%s\\0" "$@"'], capture_output=True)
        words = r.stdout.decode("utf-8", "surrogateescape").split("\0")[:-1]
        if words != [exe, "sweep", want[1], "--merge", "--out", real, "--csv", want[3]]:
            fail("the merge command splits into %r" % words)
        dirs = [split(l[len("#SBATCH"):]) for l in text.splitlines() if l.startswith("#SBATCH")]
        def as_bytes(words):  # sbatch works on bytes; escaped UTF-8 decodes byte by byte here
            return [w.encode("utf-8", "surrogateescape") for w in words]
        if (as_bytes(dirs[4]) != as_bytes(["--output=" + real + "/slurm-%A_%a.out"])
                or as_bytes(dirs[5]) != as_bytes([opt])):
            fail("#SBATCH lines split into %r and %r" % (dirs[4], dirs[5]))
        checked += 1
    if checked < 20 or refused < 20:
        fail("the sample checked %d values and refused %d: too few of one kind" % (checked, refused))
    print("property: %d values checked, %d refused" % (checked, refused))


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
    property_check(ncsim, exe, spec, top, env)
    for dirpath, dirnames, filenames in os.walk(top):
        for n in filenames + dirnames:
            if n.startswith("PWNED"):
                fail("injected command ran: %s" % os.path.join(dirpath, n))


if __name__ == "__main__":
    main()
