"""kv_pack / kv_unpack / quantize / dequantize against the oracle's own encoders and
decoders (tests/oracle/formats.py, written from DESIGN section 3)."""
import numpy as np
import pytest

import formats as oracle
import smla


@pytest.mark.parametrize("kv_format,block_size", [("bf16", 16), ("fp8", 1), ("fp8_ds_mla", 64),
                                                  ("fp8_ds_mla", 3)])
def test_pack_decodes_as_the_oracle_reads_it(rng, kv_format, block_size):
    rows = rng.normal(scale=np.exp(rng.uniform(-3, 3)), size=(4 * block_size, 512))
    cache = smla.kv_pack(rows, kv_format, block_size)
    if kv_format == "fp8_ds_mla":
        assert cache.shape == (4, oracle.block_bytes(kv_format, block_size))
    else:
        assert cache.shape == (4, block_size, 512)
    decoded = oracle.Pool(kv_format, cache, block_size).values
    assert np.array_equal(smla.kv_unpack(cache, block_size=block_size), decoded)
    # Half a unit in the last place: 8 significant bits (BF16), 4 (E4M3), and E4M3's
    # subnormal step 2^-9 times the tile scale (<= amax / 224 for fp8_ds_mla).
    amax = np.abs(rows).max()
    relative, absolute = {"bf16": (2.0 ** -8, 0.0), "fp8": (2.0 ** -4, 2.0 ** -10),
                          "fp8_ds_mla": (2.0 ** -4, 2.0 ** -10 * amax / 224)}[kv_format]
    assert np.all(np.abs(decoded - rows) <= relative * np.abs(rows) + absolute)


def test_quantize_rounds_as_the_oracle(rng):
    values = rng.normal(scale=50, size=(3, 2, 512))
    values[0, 0, :4] = [1000.0, -1000.0, 0.0, 3 * 2.0 ** -9]  # saturation, zero, subnormal
    bf16 = smla.quantize(values, "bf16")
    assert bf16.dtype == np.uint16 and bf16.shape == values.shape
    assert np.array_equal(bf16, oracle.f64_to_bf16(values.astype(np.float32)))
    fp8 = smla.quantize(values, "fp8_e4m3")
    assert fp8.dtype == np.uint8
    # The oracle's encoder (for test data) breaks ties downwards and may give -0 for +0;
    # smla rounds to nearest even: where the two differ it must be a tie, won by the even code.
    x = np.clip(values.astype(np.float32), -448, 448)
    ours, theirs = oracle.e4m3_to_f64(fp8), oracle.e4m3_to_f64(oracle.f64_to_e4m3(x))
    differ = ours != theirs
    assert np.array_equal(np.abs(ours - x)[differ], np.abs(theirs - x)[differ])
    assert not np.any(fp8[differ] & 1)
    assert np.array_equal(smla.dequantize(bf16), oracle.bf16_to_f64(bf16))
    assert np.array_equal(smla.dequantize(fp8), oracle.e4m3_to_f64(fp8))


def test_format_errors():
    with pytest.raises(smla.ShapeError, match="rows: shape \\[4, 500\\]"):
        smla.kv_pack(np.zeros((4, 500)), "bf16", 1)
    with pytest.raises(smla.ShapeError, match="5 rows do not fill blocks of 2"):
        smla.kv_pack(np.zeros((5, 512)), "bf16", 2)
    with pytest.raises(smla.KvFormatError, match="kv_format: 'fp4'"):
        smla.kv_pack(np.zeros((4, 512)), "fp4", 1)
    with pytest.raises(smla.ValueRangeError, match="block_size: 4294967297 does not fit"):
        smla.kv_pack(np.zeros((0, 512)), "fp8_ds_mla", 2**32 + 1)  # not a block of 1
    with pytest.raises(smla.ValueRangeError, match="block_size: 4294967297 does not fit"):
        smla.kv_unpack(np.zeros((1, 1152), np.uint8), "fp8_ds_mla", 2**32 + 1)
    with pytest.raises(smla.DtypeError, match="dtype: 'fp16'"):
        smla.quantize(np.zeros(512), "fp16")
    with pytest.raises(smla.ShapeError, match="the last dimension must be 512"):
        smla.quantize(np.zeros(500), "bf16")
    with pytest.raises(smla.ShapeError, match="the last dimension must be 512"):
        smla.dequantize(np.zeros(3, np.uint8))
    with pytest.raises(smla.DtypeError, match="cache: dtype float32"):
        smla.dequantize(np.zeros(512, np.float32))
