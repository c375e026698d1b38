"""Seeded GPU profiles: examples to replace, never facts about anyone's fleet.

Usable memory is what CUDA exposes, not the nameplate: an "80 GB" card shows about
79.1 GiB to `torch.cuda.mem_get_info`, because the driver, ECC and the CUDA context keep
part of the card for themselves. Replace each figure with `nvidia-smi`'s
total minus what the driver reserves on your machines, and each price with your own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from capacity.figures import GIB, Quantity

EXAMPLE_PRICE = "example price, replace with your own"
EXAMPLE_MEMORY = (
    "example usable memory (what CUDA exposes, not the nameplate); replace with "
    "nvidia-smi's total minus what the driver reserves"
)

# The sizes cards are sold by, in GB or GiB: a usable figure equal to one is a nameplate.
NAMEPLATE_SIZES = (16, 24, 32, 40, 48, 80, 94, 96, 141, 192)


@dataclass(frozen=True)
class GpuProfile:
    name: str
    nameplate_memory_gb: int
    usable_memory_gib: float
    price_usd_per_hour: float
    example: bool = True

    def usable_memory(self) -> Quantity:
        return Quantity(
            "usable_memory_bytes_per_gpu",
            self.usable_memory_gib * GIB,
            "bytes",
            "example",
            f"GPU profile {self.name} ({self.nameplate_memory_gb} GB nameplate)",
            EXAMPLE_MEMORY,
        )

    def price(self) -> Quantity:
        return Quantity(
            "price_usd_per_gpu_hour",
            self.price_usd_per_hour,
            "usd_per_gpu_hour",
            "example",
            f"GPU profile {self.name}",
            EXAMPLE_PRICE,
        )


GPU_PROFILES: dict[str, GpuProfile] = {
    p.name: p
    for p in (
        GpuProfile("H100-80GB", 80, 79.1, 4.00),
        GpuProfile("H200-141GB", 141, 139.8, 5.00),
        GpuProfile("A100-80GB", 80, 79.1, 2.50),
        GpuProfile("A100-40GB", 40, 39.4, 1.60),
        GpuProfile("L40S-48GB", 48, 44.4, 1.50),
        GpuProfile("L4-24GB", 24, 22.0, 0.80),
    )
}


def gpu_profile(name: str) -> GpuProfile:
    found = {k.lower(): p for k, p in GPU_PROFILES.items()}.get(name.strip().lower())
    if found is None:
        raise ValueError(f"unknown GPU profile {name!r}; known: {', '.join(GPU_PROFILES)}")
    return found


def nameplate_memory_flag(usable_memory_bytes: float | None) -> str | None:
    """A message when the "usable" figure is exactly a nameplate size, else None.

    A card sold as N GB never gives CUDA N GiB nor N x 10^9 bytes to use, so an exact
    match means the nameplate was typed where the usable memory belongs.
    """
    if usable_memory_bytes is None or not math.isfinite(usable_memory_bytes):
        return None
    for size in NAMEPLATE_SIZES:
        for unit, scale in (("GiB", GIB), ("GB", 10**9)):
            if math.isclose(usable_memory_bytes, size * scale, rel_tol=1e-9):
                return (
                    f"usable memory is exactly {size} {unit}, a nameplate size: CUDA exposes "
                    f"less (an 80 GB card shows about 79.1 GiB); use nvidia-smi's total minus "
                    f"what the driver reserves"
                )
    return None
