"""Number formats and KV-cache formats of DESIGN section 3, decoded from raw bytes.

Written from the specification alone (not from the C code), so that the two can check
each other. Everything decodes to float64.
"""
import numpy as np

HEAD_DIM = 512
DS_MLA_NOPE = 448        # E4M3 values per fp8_ds_mla token
DS_MLA_ROPE = 64         # BF16 values per fp8_ds_mla token
DS_MLA_TILE = 64         # NoPE values per UE8M0 scale
DS_MLA_DATA_BYTES = DS_MLA_NOPE + 2 * DS_MLA_ROPE   # 576
DS_MLA_SCALE_BYTES = 8   # 7 scales + 1 pad byte
DS_MLA_SCALES = DS_MLA_NOPE // DS_MLA_TILE          # 7

E4M3_NAN_CODES = (0x7F, 0xFF)
BF16_NAN = 0x7FC0


def _e4m3_table():
    """OCP FP8 E4M3 ("FN"): 1 sign, 4 exponent bits (bias 7), 3 mantissa bits; exponent 0
    is subnormal (m/8 * 2^-6); no infinities; S.1111.111 is NaN; largest finite 448."""
    table = np.empty(256, dtype=np.float64)
    for code in range(256):
        sign = -1.0 if code & 0x80 else 1.0
        exponent = (code >> 3) & 0xF
        mantissa = code & 0x7
        if exponent == 0xF and mantissa == 0x7:
            table[code] = np.nan
        elif exponent == 0:
            table[code] = sign * (mantissa / 8.0) * 2.0 ** -6
        else:
            table[code] = sign * (1.0 + mantissa / 8.0) * 2.0 ** (exponent - 7)
    return table


E4M3 = _e4m3_table()
E4M3_MAX = 448.0


def e4m3_to_f64(codes):
    return E4M3[np.asarray(codes, dtype=np.uint8)]


def bf16_to_f64(bits):
    """BF16 is the upper half of an IEEE float32."""
    wide = np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16
    return wide.view(np.float32).astype(np.float64)


def ue8m0_to_f64(codes):
    """A biased power-of-two exponent byte: 2^(b - 127)."""
    return np.ldexp(1.0, np.asarray(codes, dtype=np.int64) - 127)


def f64_to_bf16(values):
    """Round to BF16 (nearest even) through float32; for making test data."""
    f = np.asarray(values, dtype=np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def f64_to_e4m3(values):
    """Nearest finite E4M3 code (saturating at +-448); for making test data."""
    x = np.clip(np.asarray(values, dtype=np.float64), -E4M3_MAX, E4M3_MAX)
    finite_codes = np.array([c for c in range(256) if c not in E4M3_NAN_CODES], dtype=np.uint8)
    finite_values = E4M3[finite_codes]
    order = np.argsort(finite_values, kind="stable")
    sorted_values, sorted_codes = finite_values[order], finite_codes[order]
    idx = np.clip(np.searchsorted(sorted_values, x), 1, len(sorted_values) - 1)
    left, right = sorted_values[idx - 1], sorted_values[idx]
    pick = np.where(x - left <= right - x, idx - 1, idx)
    return sorted_codes[pick]


# ---------------------------------------------------------------- KV pools

def block_bytes(kv_format, block_size):
    """Natural bytes of one block; fp8_ds_mla rounds up to a multiple of 576."""
    token = {"bf16": 1024, "fp8": 512, "fp8_ds_mla": 584}[kv_format]
    raw = token * block_size
    if kv_format == "fp8_ds_mla":
        raw = -(-raw // DS_MLA_DATA_BYTES) * DS_MLA_DATA_BYTES
    return raw


def ds_mla_regions(raw, block_size):
    """Splits fp8_ds_mla blocks raw [num_blocks][block_stride] (uint8) into views of their
    data rows [num_blocks][block_size][576] and scale rows [num_blocks][block_size][8]: a
    block holds block_size data rows of 576 B, then block_size scale rows of 8 B, then
    padding up to the stride."""
    num_blocks = raw.shape[0]
    data_end = block_size * DS_MLA_DATA_BYTES
    scales_end = data_end + block_size * DS_MLA_SCALE_BYTES
    data = raw[:, :data_end].reshape(num_blocks, block_size, DS_MLA_DATA_BYTES)
    scales = raw[:, data_end:scales_end].reshape(num_blocks, block_size, DS_MLA_SCALE_BYTES)
    return data, scales


def decode_ds_mla(raw, block_size):
    """All slots of an fp8_ds_mla pool -> [num_blocks * block_size][512] float64: 448 E4M3
    NoPE values, each times the UE8M0 scale of its 64-value tile, then 64 BF16 RoPE values
    (little-endian). The scale row's 8th byte is padding."""
    data, scales = ds_mla_regions(raw, block_size)
    scale = ue8m0_to_f64(scales[..., :DS_MLA_SCALES])
    nope = e4m3_to_f64(data[..., :DS_MLA_NOPE]) * np.repeat(scale, DS_MLA_TILE, axis=-1)
    rope = bf16_to_f64(np.ascontiguousarray(data[..., DS_MLA_NOPE:]).view("<u2"))
    return np.concatenate([nope, rope], axis=-1).reshape(-1, HEAD_DIM)


class Pool:
    """A KV pool decoded to values [rows][512] float64; slot s is row s % block_size of
    block s // block_size, i.e. row s of the flattened blocks."""

    def __init__(self, kv_format, array, block_size):
        self.block_size = block_size
        self.num_blocks = array.shape[0]
        if kv_format == "fp8_ds_mla":
            self.values = decode_ds_mla(np.asarray(array, dtype=np.uint8), block_size)
        else:
            flat = array.reshape(-1, HEAD_DIM)
            self.values = bf16_to_f64(flat) if kv_format == "bf16" else e4m3_to_f64(flat)

    def rows(self):
        return self.num_blocks * self.block_size
