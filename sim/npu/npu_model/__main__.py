"""`python -m npu_model IMAGE ...`: the npu-trace tool (trace.py)."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path[:0] = [os.path.join(ROOT, "site_scons"), os.path.join(ROOT, "sim", "board"),
                os.path.join(ROOT, "sim", "programmer")]

from npu_model.trace import main  # noqa: E402

sys.exit(main())
