"""The ctypes declarations (smla/_abi.py) against include/smla.h: a C program compiled from
the header prints every struct's size and field offsets and the enum values, which must be
the binding's. Catches a header change the binding has not followed."""
import ctypes
import os
import subprocess

from conftest import REPO
from smla import _abi

STRUCTS = {"smla_tensor": _abi.Tensor, "smla_kv_pool": _abi.KvPool,
           "smla_plan_capacity": _abi.PlanCapacity, "smla_batch": _abi.Batch,
           "smla_plan_view": _abi.PlanView, "smla_attention_args": _abi.AttentionArgs}
ENUMS = {"SMLA_ERR_FILE_FORMAT": _abi.ERR_FILE_FORMAT, "SMLA_ERR_CUDA": _abi.ERR_CUDA,
         "SMLA_ERR_MEMORY_SPACE": _abi.ERR_MEMORY_SPACE, "SMLA_DTYPE_U8": _abi.DTYPE_U8,
         "SMLA_DTYPE_FP8_E4M3": _abi.DTYPE_FP8_E4M3, "SMLA_MEMORY_DEVICE": _abi.MEMORY_DEVICE,
         "SMLA_KV_FP8_DS_MLA": _abi.KV_FP8_DS_MLA, "SMLA_BACKEND_CUDA": _abi.BACKEND_CUDA,
         "SMLA_SPLIT_FIXED": _abi.SPLIT_FIXED, "SMLA_SPLIT_NONE": _abi.SPLIT_NONE,
         "SMLA_HEAD_DIM": _abi.HEAD_DIM, "SMLA_DEFAULT_WINDOW": _abi.DEFAULT_WINDOW,
         "SMLA_MAX_DIMS": _abi.MAX_DIMS, "SMLA_SEGMENT_CAP_DEFAULT": _abi.SEGMENT_CAP_DEFAULT,
         "SMLA_PLAN_NOT_DECODE": _abi.PLAN_NOT_DECODE}


def expected_lines():
    lines = []
    for c_name, cls in STRUCTS.items():
        lines.append(f"{c_name} size {ctypes.sizeof(cls)}")
        for field, _ in cls._fields_:
            lines.append(f"{c_name}.{field} {getattr(cls, field).offset}")
    lines += [f"{name} {value}" for name, value in ENUMS.items()]
    return lines


def c_program():
    body = []
    for c_name, cls in STRUCTS.items():
        body.append(f'printf("{c_name} size %zu\\n", sizeof({c_name}));')
        for field, _ in cls._fields_:
            body.append(f'printf("{c_name}.{field} %zu\\n", offsetof({c_name}, {field}));')
    body += [f'printf("{name} %d\\n", (int){name});' for name in ENUMS]
    return ("#include <stddef.h>\n#include <stdio.h>\n#include \"smla.h\"\n"
            "int main(void)\n{\n    " + "\n    ".join(body) + "\n    return 0;\n}\n")


def test_structs_and_enums_match_the_header(tmp_path):
    source, binary = tmp_path / "abi.c", tmp_path / "abi"
    source.write_text(c_program())
    subprocess.run([os.environ.get("CC", "cc"), "-std=c11", "-I", str(REPO / "include"),
                    str(source), "-o", str(binary)], check=True)
    printed = subprocess.run([str(binary)], check=True, capture_output=True,
                             text=True).stdout.splitlines()
    assert printed == expected_lines()
