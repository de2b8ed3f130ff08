"""The options of every ncsim command come from one table per command through one machinery
(cli/options.c): the same messages and exit code 2 for a bad command line everywhere, --help
generated from the table (so every option it lists is one the parser takes), and -h/--help on
stdout with exit 0. One table of cases, run against every command."""
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NCSIM = os.environ.get("NCSIM_BINARY") or os.path.join(ROOT, "build", "ncsim")

# command: (an option that takes a value, a flag or None, operands that are too many,
#           the message for a wrong number of operands)
COMMANDS = {
    "asm": ("--arch", None, ["a.nca", "b.nca"], "expected one input file"),
    "dis": ("--output", None, ["a.ncx", "b.ncx"], "expected one input file"),
    "run": ("--seed", "--timing-only", ["a.nca", "b.nca"], "expected one program"),
    "check": ("--max", "--json", ["a.nca", "b.nca"], "expected one program"),
    "report": ("--top", "--json", ["a.json", "b.json"],
               "expected one statistics or trace file"),
    "diff": ("--top", "--json", ["a.json", "b.json", "c.json"], "expected two files, A and B"),
    "sweep": ("--jobs", "--force", ["a.json", "b.json"], "expected one spec file"),
    "validate": ("--only", "--quiet", ["a.json", "b.json"], "expected one manifest file"),
    "fit": ("--key", "--quiet", ["a.json", "b.json"], "expected one manifest file"),
    "arch": ("--set", None, ["trn1", "inf2"],
             "expected at most one preset name or config file"),
    "viz": ("--width", "--verbose", ["a.json", "b.json", "c.json"],
            "expected one trace file, or two to compare"),
}


def ncsim(*argv, cwd=None):
    return subprocess.run([NCSIM, *argv], capture_output=True, text=True, cwd=cwd)


@pytest.fixture(autouse=True)
def need_binary(request):
    if not os.path.exists(NCSIM):
        pytest.skip("no ncsim executable (NCSIM_BINARY)")
    cmd = request.node.callspec.params.get("cmd") if hasattr(request.node, "callspec") else None
    if cmd == "viz" and "built without the viewer" in ncsim("viz", "--help").stderr:
        pytest.skip("ncsim built without the viewer (NCSIM_BUILD_VIZ=OFF)")


def bad_command_lines(cmd):
    """(argv, the first line of stderr) for each kind of bad command line."""
    valued, flag, too_many, operands = COMMANDS[cmd]
    cases = [
        ([cmd, "x", "--no-such-option"],
         f"ncsim {cmd}: unknown or ambiguous option '--no-such-option'"),
        ([cmd, "x", "-Z"], f"ncsim {cmd}: unknown option '-Z'"),
        ([cmd, "x", valued], f"ncsim {cmd}: option '{valued}' needs a value"),
        ([cmd, *too_many], f"ncsim {cmd}: {operands}"),
    ]
    if flag:
        cases.append(([cmd, "x", flag + "=1"], f"ncsim {cmd}: option '{flag}' takes no value"))
    return cases


@pytest.mark.parametrize("cmd", sorted(COMMANDS))
def test_bad_command_lines(cmd, tmp_path):
    for argv, first in bad_command_lines(cmd):
        r = ncsim(*argv, cwd=tmp_path)
        assert r.returncode == 2, (argv, r.stderr)
        assert r.stderr.splitlines()[0] == first, (argv, r.stderr)
        # then the help, on stderr; nothing on stdout
        assert f"usage: ncsim {cmd}" in r.stderr, (argv, r.stderr)
        assert r.stdout == "", argv
        assert os.listdir(tmp_path) == [], (argv, os.listdir(tmp_path))


@pytest.mark.parametrize("cmd", sorted(COMMANDS))
def test_help_lists_what_the_parser_takes(cmd):
    for flag in ("--help", "-h"):
        r = ncsim(cmd, flag)
        assert r.returncode == 0 and r.stderr == "", (cmd, flag, r.stderr)
        assert r.stdout.startswith(f"usage: ncsim {cmd}"), r.stdout
    text = ncsim(cmd, "--help").stdout
    rows = re.findall(r"^  (?:-(\w), )?--([a-z][a-z0-9-]*)( \S+)?", text, re.M)
    assert rows, text
    for letter, name, value in rows:
        # the option is known: whatever is wrong with the command line now is not its name
        r = ncsim(cmd, f"--{name}")
        first = r.stderr.splitlines()[0] if r.stderr else ""
        assert "unknown" not in first, (name, r.stderr)
        if value:
            assert first == f"ncsim {cmd}: option '--{name}' needs a value", (name, r.stderr)
        if letter:
            r = ncsim(cmd, f"-{letter}")
            first = r.stderr.splitlines()[0] if r.stderr else ""
            assert "unknown" not in first, (letter, r.stderr)


def test_unknown_command():
    r = ncsim("no-such-command")
    assert r.returncode == 2
    assert r.stderr.startswith("ncsim: unknown command 'no-such-command'")
