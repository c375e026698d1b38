"""`manage.py capacity`: the capacity review from flags, a config.json, or a fleet."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from capacity.figures import GIB, Quantity
from capacity.ledgers import CapacityInputError
from capacity.profiles import (
    ModelConfigError,
    ModelShape,
    gpu_profile,
    parse_hf_config,
    weight_dtype_of,
)
from capacity.review import CapacityInputs, capacity_review, length, render_text

SHAPE_FLAGS = {
    "num_layers": "--layers",
    "num_attention_heads": "--attention-heads",
    "num_kv_heads": "--kv-heads",
    "head_dim": "--head-dim",
    "parameters": "--params",
}
QUANTITY_FLAGS = {
    "lambda_peak_requests_per_second": "--lambda-peak",
    "mu_good_requests_per_second": "--mu-good",
    "rho_target_fraction": "--rho-target",
    "failure_reserve_replicas": "--failure-reserve",
    "rollout_reserve_replicas": "--rollout-reserve",
    "failure_domain_replicas": "--failure-domain",
    "current_replicas": "--current-replicas",
}


def entered(key: str, value: float, unit: str, flag: str) -> Quantity:
    return Quantity(key, float(value), unit, "entered", flag)


class Command(BaseCommand):
    help = "Capacity review: weights, KV and replica ledgers with N+1, as text or --json."
    # Pure arithmetic on flags and a file: it reads no model, URL or database.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        shape = parser.add_argument_group("model")
        shape.add_argument("--config", help="a Hugging Face config.json; flags override it")
        shape.add_argument("--params", type=float, help="parameter count, e.g. 8.03e9")
        shape.add_argument("--dtype", help="weight dtype: bf16, fp16, fp8, int8, int4, awq, gptq")
        shape.add_argument("--layers", type=int)
        shape.add_argument("--attention-heads", type=int)
        shape.add_argument("--kv-heads", type=int)
        shape.add_argument("--head-dim", type=int)
        shape.add_argument("--kv-dtype", default="auto", help="auto (model dtype), bf16, fp8")
        lengths = parser.add_argument_group("request lengths (tokens)")
        lengths.add_argument("--prompt-tokens", type=float, help="prompt length to size for (p99)")
        lengths.add_argument("--output-tokens", type=float, help="output length to size for (p99)")
        for kind in ("prompt", "output"):
            for p in ("p50", "p95", "p99"):
                lengths.add_argument(f"--{kind}-tokens-{p}", type=float)
        hw = parser.add_argument_group("hardware")
        hw.add_argument("--tp", type=int, default=1)
        hw.add_argument("--pp", type=int, default=1)
        hw.add_argument("--gpu", help="a seeded example GPU profile, e.g. H100-80GB")
        hw.add_argument("--usable-memory-gib", type=float, help="what CUDA exposes, per GPU")
        hw.add_argument("--gpus-per-node", type=int)
        hw.add_argument("--gpu-memory-utilization", type=float, default=0.9)
        load = parser.add_argument_group("load and replicas")
        load.add_argument("--lambda-peak", type=float, help="peak arrivals, requests/s")
        load.add_argument("--mu-good", type=float, help="good requests/s one replica serves")
        load.add_argument("--rho-target", type=float, help="target utilisation in (0, 1)")
        load.add_argument("--failure-reserve", type=int)
        load.add_argument("--rollout-reserve", type=int, default=0)
        load.add_argument("--failure-domain", type=int, default=1)
        load.add_argument("--current-replicas", type=int)
        fleet = parser.add_argument_group("measured inputs from a fleet")
        fleet.add_argument("--fleet", help="fleet slug: measured inputs fill what was not entered")
        fleet.add_argument("--model", help="model name within the fleet")
        fleet.add_argument("--backend", choices=("local", "prometheus"), default="local")
        parser.add_argument("--json", action="store_true", help="print JSON instead of text")

    def handle(self, *args: Any, **options: Any) -> None:
        provenance: list[str] = []
        inputs = self.build_inputs(options, provenance)
        if options.get("fleet"):
            # Imported here: without --fleet the command is arithmetic and needs no database.
            from capacity.measured import FleetInputError, fleet_inputs

            try:
                measured = fleet_inputs(
                    options["fleet"], model_name=options.get("model"), backend=options["backend"]
                )
            except FleetInputError as exc:
                raise CommandError(str(exc)) from None
            inputs = inputs.with_measured(measured)
            provenance.append(f"measured from fleet {options['fleet']}: {', '.join(measured)}")
        try:
            review = capacity_review(inputs)
        except CapacityInputError as exc:
            flag = QUANTITY_FLAGS.get(exc.field, exc.field)
            raise CommandError(f"{flag}: {exc.message}") from None
        except ValueError as exc:
            text = str(exc)
            raise CommandError(text if text.startswith("-") else self.flag_of(text)) from None
        if options["json"]:
            payload = {"inputs": provenance, **review.to_dict()}
            self.stdout.write(json.dumps(payload, indent=2, allow_nan=False))
        else:
            self.stdout.write(render_text(review, provenance))

    def build_inputs(self, o: dict[str, Any], provenance: list[str]) -> CapacityInputs:
        shape = self.build_shape(o)
        for name in ("num_layers", "num_attention_heads", "num_kv_heads", "head_dim"):
            source = shape.source_of(name)
            if source.startswith("entered"):
                source = f"entered: {SHAPE_FLAGS[name]}"
            provenance.append(f"{name} = {getattr(shape, name)} ({source})")
        p = shape.parameters
        provenance.append(
            f"parameters = {p.value if p.known else 'needs measurement'} "
            f"({p.origin}{': ' + p.note if p.note else ''})"
        )
        dtype = o.get("dtype") or weight_dtype_of(shape)
        if not dtype:
            raise CommandError("--dtype: needed (the config gives no usable weight dtype)")
        provenance.append(f"weight dtype = {dtype} ({'--dtype' if o.get('dtype') else 'config'})")
        for flag in ("tp", "pp"):
            if o[flag] < 1:
                raise CommandError(f"--{flag}: must be >= 1, got {o[flag]}")
        gmu = o["gpu_memory_utilization"]
        if not 0 < gmu <= 1:
            raise CommandError(f"--gpu-memory-utilization: must be in (0, 1], got {gmu}")
        gpu = None
        if o.get("gpu") and o.get("usable_memory_gib") is not None:
            raise CommandError("--usable-memory-gib: give either it or --gpu, not both")
        if o.get("gpu"):
            try:
                gpu = gpu_profile(o["gpu"])
            except ValueError as exc:
                raise CommandError(f"--gpu: {exc}") from None
            usable = gpu.usable_memory()
        elif o.get("usable_memory_gib") is not None:
            if not o["usable_memory_gib"] > 0:
                raise CommandError(
                    f"--usable-memory-gib: must be positive, got {o['usable_memory_gib']}"
                )
            usable = entered(
                "usable_memory_bytes_per_gpu",
                o["usable_memory_gib"] * GIB,
                "bytes",
                "--usable-memory-gib",
            )
        else:
            raise CommandError("--usable-memory-gib: needed (or --gpu NAME)")
        fields: dict[str, Any] = {
            "shape": shape,
            "weight_dtype": dtype,
            "kv_dtype": o["kv_dtype"],
            "gpu": gpu,
            "usable_memory_bytes_per_gpu": usable,
            "tp": o["tp"],
            "pp": o["pp"],
            "gpu_memory_utilization": entered(
                "gpu_memory_utilization_fraction", gmu, "fraction", "--gpu-memory-utilization"
            ),
        }
        if o.get("gpus_per_node") is not None:
            if o["gpus_per_node"] < 1:
                raise CommandError(f"--gpus-per-node: must be >= 1, got {o['gpus_per_node']}")
            fields["gpus_per_node"] = entered(
                "gpus_per_node_gpus", o["gpus_per_node"], "gpus", "--gpus-per-node"
            )
        for kind in ("prompt", "output"):
            for pct in ("p50", "p95", "p99"):
                value = o.get(f"{kind}_tokens_{pct}")
                flag = f"--{kind}-tokens-{pct}"
                if value is None and pct == "p99":
                    value, flag = o.get(f"{kind}_tokens"), f"--{kind}-tokens"
                if value is not None and (value < 0 or (kind == "prompt" and value == 0)):
                    raise CommandError(f"{flag}: must be positive, got {value}")
                fields[f"{kind}_tokens_{pct}"] = length(kind, pct, value, flag)
        units = {
            "lambda_peak": "requests_per_second",
            "mu_good": "requests_per_second",
            "rho_target": "fraction",
            "failure_reserve": "replicas",
            "rollout_reserve": "replicas",
            "failure_domain": "replicas",
            "current_replicas": "replicas",
        }
        keys = {v: k for k, v in QUANTITY_FLAGS.items()}
        for name, unit in units.items():
            flag = "--" + name.replace("_", "-")
            if o.get(name) is not None:
                field = "failure_domain_replicas" if name == "failure_domain" else name
                fields[field] = entered(keys[flag], o[name], unit, flag)
        return CapacityInputs(**fields)

    def build_shape(self, o: dict[str, Any]) -> ModelShape:
        overrides = {
            "num_layers": o.get("layers"),
            "num_attention_heads": o.get("attention_heads"),
            "num_kv_heads": o.get("kv_heads"),
            "head_dim": o.get("head_dim"),
        }
        try:
            if o.get("config"):
                try:
                    text = Path(o["config"]).read_text()
                except OSError as exc:
                    raise CommandError(f"--config: cannot read {o['config']} ({exc})") from None
                try:
                    shape = parse_hf_config(text)
                except ModelConfigError as exc:
                    raise CommandError(f"--config: {exc}") from None
                shape = shape.override(**overrides)
                if o.get("params") is not None:
                    shape = shape.override(parameters=self.parameters(o["params"]))
                return shape
            for name in ("num_layers", "num_kv_heads", "head_dim"):
                if overrides[name] is None:
                    raise CommandError(f"{SHAPE_FLAGS[name]}: needed (or --config config.json)")
            return ModelShape.entered(
                num_layers=overrides["num_layers"],
                num_kv_heads=overrides["num_kv_heads"],
                head_dim=overrides["head_dim"],
                num_attention_heads=overrides["num_attention_heads"],
                parameters=o.get("params"),
                dtype=o.get("dtype"),
            )
        except ModelConfigError as exc:
            raise CommandError(f"{SHAPE_FLAGS.get(exc.field, exc.field)}: {exc.message}") from None

    @staticmethod
    def flag_of(message: str) -> str:
        """Name the flag a ledger's ValueError is about."""
        for word, flag in (
            ("weight dtype", "--dtype"),
            ("kv dtype", "--kv-dtype"),
            ("tp:", "--tp"),
        ):
            if word in message:
                return f"{flag}: {message.removeprefix('tp: ')}"
        return message

    @staticmethod
    def parameters(value: float) -> Quantity:
        if not value > 0:
            raise CommandError(f"--params: must be positive, got {value}")
        return entered("parameters_count", value, "parameters", "--params")
