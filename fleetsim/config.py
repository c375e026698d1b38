"""How a simulated fleet is laid out: each replica's model, GPU, engine flags and names."""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from fleetsim.hardware import GPUS, MODELS, GpuSpec, ModelSpec, kv_capacity_tokens, smallest_tp

DIALECTS = ("current", "v1-0.10", "v1-0.8", "v0")  # newest first
DIALECTS_WITH_ENGINE_LABEL = ("current", "v1-0.10")
NAMESPACE = "llm-serving"
DRIVER_VERSION = "570.133.20"
GPUS_PER_NODE = 8


@dataclass(frozen=True, slots=True)
class Deployment:
    """One row of the fleet template: a model served on a GPU type with its engine flags."""

    model: str
    gpu: str
    max_model_len: int
    kv_dtype: str = "auto"
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    gpu_memory_utilization: float = 0.9
    enable_lora: bool = False
    max_loras: int = 4
    max_cpu_loras: int = 8


# Replica i gets TEMPLATE[i % len(TEMPLATE)]: mixed models, context lengths and GPUs,
# so bucket sets and capacity differ between replicas as they do in real fleets.
TEMPLATE: tuple[Deployment, ...] = (
    Deployment("llama-3.1-8b-instruct", "H100", 32768, enable_lora=True),
    Deployment("llama-3.1-70b-instruct", "H100", 16384, kv_dtype="fp8"),
    Deployment("llama-3.1-8b-instruct", "H100", 32768, enable_lora=True),
    Deployment("qwen2.5-7b-instruct", "L40S", 8192, max_num_batched_tokens=4096),
)


@dataclass(frozen=True, slots=True)
class GpuSlot:
    index: int  # position on its node: DCGM's `gpu` label
    uuid: str
    pci_bus_id: str


@dataclass(slots=True)
class ReplicaConfig:
    index: int
    deployment: Deployment
    model: ModelSpec
    gpu: GpuSpec
    tp: int
    dp: int
    dialect: str
    pod: str
    node: str
    gpus: list[GpuSlot] = field(default_factory=list)
    kv_tokens: int = 0
    block_size: int = 16

    @property
    def name(self) -> str:
        return f"r{self.index}"

    @property
    def max_model_len(self) -> int:
        return self.deployment.max_model_len

    @property
    def num_gpu_blocks(self) -> int:
        return self.kv_tokens // self.block_size


def build_replicas(
    n: int,
    *,
    dialect: str = "current",
    dialect_of: Mapping[int, str] | None = None,
    dp: int = 1,
    seed: int = 0,
    max_model_len: int | None = None,
) -> list[ReplicaConfig]:
    """The fleet's replicas, deterministic for a seed; GPUs packed onto 8-GPU nodes.

    Every replica speaks `dialect` unless `dialect_of` names another for its index
    (a mixed fleet, as in the middle of a rollout).
    """
    dialect_of = dialect_of or {}
    rng = random.Random(f"layout:{seed}")
    replicas: list[ReplicaConfig] = []
    nodes: dict[str, list[int]] = {}  # gpu type -> GPUs used on each node so far
    for i in range(n):
        dep = TEMPLATE[i % len(TEMPLATE)]
        if max_model_len is not None:
            dep = _with_max_model_len(dep, max_model_len)
        model, gpu = MODELS[dep.model], GPUS[dep.gpu]
        tp = smallest_tp(
            model,
            gpu,
            max_model_len=dep.max_model_len,
            gpu_memory_utilization=dep.gpu_memory_utilization,
            kv_dtype=dep.kv_dtype,
            max_num_batched_tokens=dep.max_num_batched_tokens,
        )
        kv = kv_capacity_tokens(
            model,
            gpu,
            tp=tp,
            gpu_memory_utilization=dep.gpu_memory_utilization,
            kv_dtype=dep.kv_dtype,
            max_num_batched_tokens=dep.max_num_batched_tokens,
        )
        node, first_slot = _place(nodes, dep.gpu, tp * dp)
        slots = [
            GpuSlot(
                first_slot + k,
                "GPU-" + str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                f"00000000:{gpu.pci_buses[first_slot + k]}:00.0",
            )
            for k in range(tp * dp)
        ]
        pod = f"vllm-{_slug(model.served_name)}-{_pod_hash(rng, 10)}-{_pod_hash(rng, 5)}"
        replicas.append(
            ReplicaConfig(
                index=i,
                deployment=dep,
                model=model,
                gpu=gpu,
                tp=tp,
                dp=dp,
                dialect=dialect_of.get(i, dialect),
                pod=pod,
                node=node,
                gpus=slots,
                kv_tokens=kv,
            )
        )
    return replicas


def older_dialect(dialect: str) -> str | None:
    """The vLLM dialect released before `dialect`, or None for the oldest."""
    i = DIALECTS.index(dialect)
    return DIALECTS[i + 1] if i + 1 < len(DIALECTS) else None


def check_options(
    *,
    replicas: int,
    dialect: str,
    dp: int,
    speed: float = 1.0,
    dialect_of: Mapping[int, str] | None = None,
) -> None:
    """Reject what no real fleet could look like, with one clear sentence."""
    if replicas < 1:
        raise ValueError(f"--replicas must be at least 1, not {replicas}")
    if dp < 1:
        raise ValueError(f"--dp must be at least 1, not {dp}")
    check_dialects(replicas, dialect, dialect_of, dp)
    if not speed > 0:
        raise ValueError(f"--speed must be positive, not {speed}")


def check_dialects(
    replicas: int, dialect: str, dialect_of: Mapping[int, str] | None, dp: int
) -> None:
    """Reject a dialect layout no real fleet could have, with one clear sentence."""
    if dialect not in DIALECTS:
        raise ValueError(f"unknown dialect {dialect!r} (choose from {', '.join(DIALECTS)})")
    for index, name in sorted((dialect_of or {}).items()):
        if not 0 <= index < replicas:
            raise ValueError(
                f"--dialect-of names replica {index}, but the fleet has 0..{replicas - 1}"
            )
        if name not in DIALECTS:
            raise ValueError(
                f"--dialect-of {index}={name}: unknown dialect {name!r} "
                f"(choose from {', '.join(DIALECTS)})"
            )
    if dp > 1:
        for index in range(replicas):
            name = (dialect_of or {}).get(index, dialect)
            if name not in DIALECTS_WITH_ENGINE_LABEL:
                which = (
                    f"replica {index}'s dialect"
                    if dialect_of and index in dialect_of
                    else "a dialect"
                )
                raise ValueError(f"--dp {dp} needs {which} with the engine label, not {name!r}")


def _with_max_model_len(dep: Deployment, value: int) -> Deployment:
    fields = {name: getattr(dep, name) for name in Deployment.__dataclass_fields__}
    fields["max_model_len"] = value
    return Deployment(**fields)


def _place(nodes: dict[str, list[int]], gpu: str, count: int) -> tuple[str, int]:
    used = nodes.setdefault(gpu, [])
    for n, taken in enumerate(used):
        if taken + count <= GPUS_PER_NODE:
            used[n] += count
            return _node_name(gpu, n), taken
    if count > GPUS_PER_NODE:
        raise ValueError(f"a replica needs {count} GPUs, more than one {GPUS_PER_NODE}-GPU node")
    used.append(count)
    return _node_name(gpu, len(used) - 1), 0


def _node_name(gpu: str, n: int) -> str:
    return f"gpu-{gpu.lower()}-node-{n:02d}"


def _pod_hash(rng: random.Random, length: int) -> str:
    return "".join(rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(length))


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).replace(".", "-")
