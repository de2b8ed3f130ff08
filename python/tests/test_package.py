"""The package's version and library lookup."""
import os
import re
import subprocess
import sys

import ncsim

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_setup_version_matches_header():
    header = open(os.path.join(SRC, "include", "ncsim.h")).read()
    v = ".".join(re.search(rf"#define NCSIM_VERSION_{k} (\d+)", header).group(1)
                 for k in ("MAJOR", "MINOR", "PATCH"))
    setup = open(os.path.join(SRC, "python", "setup.py")).read()
    assert f'version="{v}"' in setup
    assert ncsim.version() == v == ncsim.__version__


def test_bad_library_path_is_a_clear_error():
    """Without the library, the builder still imports; the simulator says why it is missing."""
    env = dict(os.environ, NCSIM_LIBRARY="/nonexistent/libncsim.so")
    code = "import ncsim.builder, ncsim; print(hasattr(ncsim, 'run')); ncsim.run"
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                       text=True, cwd=os.path.join(SRC, "python"))
    assert p.returncode != 0
    assert p.stdout.strip() == "False"
    assert "cannot load libncsim" in p.stderr and "NCSIM_LIBRARY" in p.stderr


def test_docs_show_the_compiler_test_verbatim():
    doc = open(os.path.join(SRC, "docs", "python.md")).read()
    block = doc.split("<!-- example: test_compiler.py -->\n```python\n", 1)[1].split("```\n<!-- end example -->", 1)[0]
    code = open(os.path.join(SRC, "python", "tests", "test_compiler.py")).read()
    assert block == code, "docs/python.md shows an old copy of python/tests/test_compiler.py"
