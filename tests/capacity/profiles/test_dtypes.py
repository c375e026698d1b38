from __future__ import annotations

import pytest

from capacity.profiles import kv_bytes_per_element, weight_format


@pytest.mark.parametrize(
    ("dtype", "width"),
    [
        ("fp32", 4.0),
        ("bf16", 2.0),
        ("torch.bfloat16", 2.0),
        ("float16", 2.0),
        ("fp8", 1.0),
        ("int8", 1.0),
        ("int4", 0.5),
        ("awq", 0.5),
        ("GPTQ", 0.5),
    ],
)
def test_bytes_per_parameter_follow_the_dtype(dtype: str, width: float) -> None:
    assert weight_format(dtype).bytes_per_parameter == width


def test_four_bit_groups_of_128_carry_a_scale_and_zero_point_allowance() -> None:
    fmt = weight_format("awq")
    assert fmt.allowance_bytes_per_parameter == pytest.approx((16 + 4) / 128 / 8)
    assert "group size 128" in fmt.allowance_text
    assert "(16+4)/128" in fmt.allowance_text


def test_a_smaller_group_size_raises_the_allowance() -> None:
    assert weight_format("gptq", group_size=32).allowance_bytes_per_parameter == pytest.approx(
        20 / 32 / 8
    )


def test_unquantised_weights_have_no_allowance() -> None:
    assert weight_format("bf16").allowance_bytes_per_parameter == 0.0


def test_an_unknown_weight_dtype_is_refused_naming_it_and_the_accepted_list() -> None:
    with pytest.raises(ValueError, match=r"unknown weight dtype 'int3'; accepted: .*bf16"):
        weight_format("int3")


def test_kv_dtype_auto_follows_the_model_dtype() -> None:
    assert kv_bytes_per_element("auto", "bfloat16") == (2.0, "auto = model dtype bf16")


@pytest.mark.parametrize("name", ["fp8", "fp8_e4m3", "fp8_e5m2"])
def test_fp8_kv_dtypes_take_one_byte(name: str) -> None:
    assert kv_bytes_per_element(name, "bf16")[0] == 1.0


def test_kv_dtype_auto_without_a_model_dtype_asks_for_the_kv_dtype() -> None:
    with pytest.raises(ValueError, match="needs the model dtype"):
        kv_bytes_per_element("auto", None)


def test_an_unknown_kv_dtype_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match=r"unknown kv dtype 'int2'; accepted: auto, "):
        kv_bytes_per_element("int2", "bf16")
