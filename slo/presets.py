"""SLO presets from common use: what a chat, RAG, code-completion, content-generation or
batch service usually promises. `slo_preset` and the form's preset menu start from these."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class PresetObjective:
    kind: str  # an ObjectiveKind value
    threshold_seconds: float | None
    target: float


@dataclass(frozen=True)
class Preset:
    key: str
    name: str
    why: str
    objectives: tuple[PresetObjective, ...]


PRESETS: Mapping[str, Preset] = {
    preset.key: preset
    for preset in (
        Preset(
            "chat",
            "Chat",
            "a person reads the stream as it arrives: the first token fast, then a steady pace",
            (PresetObjective("ttft", 0.2, 0.99), PresetObjective("itl", 0.05, 0.99)),
        ),
        Preset(
            "rag",
            "RAG",
            "an answer is used whole, after retrieval: the whole request counts",
            (PresetObjective("e2e", 3.0, 0.99),),
        ),
        Preset(
            "code",
            "Code completion",
            "a completion is useless once the developer types on: short end-to-end latency",
            (PresetObjective("e2e", 2.0, 0.99),),
        ),
        Preset(
            "content",
            "Content generation",
            "long outputs read as they stream: a looser first token and pace",
            (PresetObjective("ttft", 0.6, 0.99), PresetObjective("itl", 0.2, 0.99)),
        ),
        Preset(
            "batch",
            "Batch",
            "nobody waits on a single request: only finishing matters",
            (PresetObjective("success", None, 0.99),),
        ),
    )
}
