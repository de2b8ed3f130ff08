"""Shared fixtures: small NCA kernels written for the tests."""
import os
import sys

import pytest

# the package from this source tree (python/ncsim), whatever is installed
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

ADD = """
.hbm a fp32 [128, 64] input
.hbm b fp32 [128, 64] input
.hbm c fp32 [128, 64] output
.core 0
.sbuf ta fp32 [128, 64]
.sbuf tb fp32 [128, 64]
.sbuf tc fp32 [128, 64]
.sem ld
.sem done
.engine sp
    dma ta, a, queue=0 | post ld
    dma tb, b, queue=1 | post ld
    dma c, tc, queue=2 | wait done >= 1
.engine dve
    tensor_tensor tc, ta, tb, add | wait ld >= 2 | post done
"""


@pytest.fixture
def add_src():
    return ADD

