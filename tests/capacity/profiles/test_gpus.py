from __future__ import annotations

import pytest

from capacity.figures import GIB
from capacity.profiles import GPU_PROFILES, gpu_profile, nameplate_memory_flag


def test_every_seeded_gpu_is_an_example_with_usable_memory_below_its_nameplate() -> None:
    for profile in GPU_PROFILES.values():
        usable = profile.usable_memory()
        assert profile.example and usable.origin == "example"
        assert usable.value is not None and usable.value < profile.nameplate_memory_gb * GIB
        assert "nvidia-smi" in usable.note


def test_an_80_gb_card_offers_about_79_1_gib() -> None:
    assert gpu_profile("h100-80gb").usable_memory().value == pytest.approx(79.1 * GIB)


def test_seeded_prices_say_they_are_examples_to_replace() -> None:
    price = gpu_profile("A100-80GB").price()
    assert price.origin == "example"
    assert price.note == "example price, replace with your own"


def test_an_unknown_gpu_profile_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown GPU profile 'B300'; known: H100-80GB"):
        gpu_profile("B300")


@pytest.mark.parametrize("value", [80 * GIB, 80e9, 40 * GIB, 24e9, 48 * GIB, 141e9, 192 * GIB])
def test_nameplate_memory_entered_as_usable_is_flagged(value: float) -> None:
    assert "nameplate" in (nameplate_memory_flag(value) or "")


@pytest.mark.parametrize("value", [79.1 * GIB, 39.4 * GIB, None, float("nan")])
def test_real_usable_memory_is_not_flagged(value: float | None) -> None:
    assert nameplate_memory_flag(value) is None


def test_the_migration_seeds_the_same_examples_the_command_offers() -> None:
    import importlib

    from capacity.profiles import GPU_PROFILES

    seeded = importlib.import_module("capacity.migrations.0002_example_gpu_profiles")
    offered = {(p.name, p.usable_memory_gib, p.price_usd_per_hour) for p in GPU_PROFILES.values()}
    assert set(seeded.EXAMPLES) == offered
    assert "example" in seeded.NOTE and "replace" in seeded.NOTE
