"""What a capacity reviewer and a cost reporter enter: model and GPU profiles, a fleet's
capacity plan per model, prices, tenant rules, and the stored monthly cost reports.

Entered numbers are facts someone typed; nothing here holds a default price. Seeded GPU
profiles carry `example=True` and every page that shows one says so.
"""

from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from inventory.models import Fleet


class ModelProfile(models.Model):
    """A model's shape: from a pasted Hugging Face config.json or entered by hand."""

    class Origin(models.TextChoices):
        ENTERED = "entered", "entered"
        CONFIG = "model config", "model config"

    name = models.CharField(max_length=200, unique=True)
    architecture = models.CharField(max_length=200, blank=True)
    params = models.BigIntegerField(null=True, blank=True, validators=[MinValueValidator(1)])
    dtype = models.CharField(max_length=32)
    layers = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    attention_heads = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    kv_heads = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    head_dim = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    origin = models.CharField(max_length=16, choices=Origin.choices, default=Origin.ENTERED)
    config = models.JSONField(default=dict, blank=True)  # the pasted config.json, as given

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class GpuProfile(models.Model):
    """Usable memory is what CUDA can allocate, not the card's nameplate."""

    name = models.CharField(max_length=200, unique=True)
    usable_memory_bytes = models.BigIntegerField(validators=[MinValueValidator(1)])
    gpus_per_node = models.PositiveSmallIntegerField(default=8, validators=[MinValueValidator(1)])
    price_per_hour_usd = models.DecimalField(
        max_digits=10, decimal_places=4, null=True, blank=True,
        validators=[MinValueValidator(0)],
    )  # fmt: skip
    example = models.BooleanField(default=False)  # seeded: replace with your own figures
    note = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} (example)" if self.example else self.name


class CapacityPlan(models.Model):
    """How one model is served on a fleet, and the policy its capacity is judged by."""

    fleet = models.ForeignKey(Fleet, on_delete=models.CASCADE, related_name="capacity_plans")
    model_name = models.CharField(max_length=200)  # the served name, as vLLM labels it
    model_profile = models.ForeignKey(ModelProfile, on_delete=models.PROTECT)
    gpu_profile = models.ForeignKey(GpuProfile, on_delete=models.PROTECT)
    tp = models.PositiveSmallIntegerField(default=1, validators=[MinValueValidator(1)])
    pp = models.PositiveSmallIntegerField(default=1, validators=[MinValueValidator(1)])
    kv_dtype = models.CharField(max_length=32, default="auto")
    rho_target = models.FloatField(validators=[MinValueValidator(0.01), MaxValueValidator(0.99)])
    failure_reserve = models.PositiveSmallIntegerField(default=1)
    rollout_reserve = models.PositiveSmallIntegerField(default=0)
    failure_domain_replicas = models.PositiveSmallIntegerField(
        default=1, validators=[MinValueValidator(1)]
    )
    # Entered figures are what-ifs; empty: measured (lambda_peak from the fleet's history,
    # mu_good from the SLO app).
    lambda_peak_requests_per_second = models.FloatField(
        null=True, blank=True, validators=[MinValueValidator(0.0)]
    )
    mu_good_requests_per_second = models.FloatField(
        null=True, blank=True, validators=[MinValueValidator(1e-9)]
    )

    class Meta:
        ordering = ["fleet", "model_name"]
        constraints = [
            models.UniqueConstraint(
                fields=["fleet", "model_name"], name="capacity_plan_one_per_fleet_model"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.fleet.slug}/{self.model_name}"


class FleetPrice(models.Model):
    """What a fleet's GPUs and platform cost. No row, or an empty price: "no price set"."""

    fleet = models.OneToOneField(Fleet, on_delete=models.CASCADE, related_name="price")
    price_per_gpu_hour_usd = models.DecimalField(
        max_digits=10, decimal_places=4, null=True, blank=True,
        validators=[MinValueValidator(0)],
    )  # fmt: skip
    platform_cost_usd_per_month = models.DecimalField(
        max_digits=12, decimal_places=2, null=True, blank=True,
        validators=[MinValueValidator(0)],
    )  # fmt: skip
    # GPUs behind each replica when the fleet has no DCGM exporters to count them.
    gpus_per_replica = models.PositiveSmallIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1)]
    )
    note = models.CharField(max_length=300, blank=True)

    def __str__(self) -> str:
        return f"{self.fleet.slug} price"


class TenantRule(models.Model):
    class Kind(models.TextChoices):
        GATEWAY_LABEL = "gateway_label", "gateway label"
        LORA_ADAPTER = "lora_adapter", "LoRA adapter"
        MODEL_NAME = "model_name", "model name"
        REPLICA = "replica", "replica"

    fleet = models.ForeignKey(Fleet, on_delete=models.CASCADE, related_name="tenant_rules")
    tenant = models.CharField(max_length=100)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    label = models.CharField(max_length=100, default="tenant", blank=True)
    pattern = models.CharField(max_length=300)  # an exact value, or `re:<regex>`
    order = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["fleet", "order", "tenant"]

    def __str__(self) -> str:
        return f"{self.tenant}: {self.kind} {self.pattern}"


class CostReportRecord(models.Model):
    """A stored report (the monthly task writes one per fleet and month)."""

    fleet = models.ForeignKey(Fleet, on_delete=models.CASCADE, related_name="cost_reports")
    period_start = models.DateTimeField()
    period_end = models.DateTimeField()
    created_at = models.DateTimeField(auto_now=True)
    content = models.JSONField()
    csv = models.TextField()

    class Meta:
        ordering = ["fleet", "-period_start"]
        constraints = [
            models.UniqueConstraint(
                fields=["fleet", "period_start", "period_end"], name="cost_report_one_per_period"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.fleet.slug} {self.period_start:%Y-%m}"
