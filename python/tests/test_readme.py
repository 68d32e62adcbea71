"""The README's Python example runs as written and computes what it says."""
import re

import numpy as np

import smla
from conftest import REPO


def readme_example():
    text = (REPO / "README.md").read_text()
    section = text.split("## Python", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_example_runs(capsys):
    namespace = {}
    exec(compile(readme_example(), "README.md", "exec"), namespace)
    printed = capsys.readouterr().out
    assert "token 0, head 0, out[:4] = [" in printed and "lse of each token = [" in printed
    assert "plan: 1 decode, 1 prefill segment, segment seq lens [40]" in printed
    out, q, plan = namespace["out"], namespace["q"], namespace["plan"]
    assert out.shape == q.shape and out.dtype == np.uint16
    assert plan.num_decodes == 1 and plan.num_prefill_tokens == 2
    assert np.isfinite(namespace["lse"]).all() and np.any(out != 0)
    unplanned = smla.sparse_mla(q, namespace["cache"], namespace["indices"],
                                cu_seqlens_q=np.array([0, 1, 3], np.int32),
                                seq_lens=np.array([10, 40], np.int32),
                                bmm1_scale=namespace["scale"])
    assert np.array_equal(out, unplanned)
