from __future__ import annotations

import uuid
from typing import Any

from django.db import models

from inventory.identity import instance_candidates, normalised_target


class Fleet(models.Model):
    """A set of vLLM replicas (and their GPU exporters, gateways, probers) watched together."""

    code = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # A scrape cycle claims the fleet until this time, so two workers (or a late
    # beat tick) never scrape the same targets at once. See services.fleet_claim.
    scrape_lease_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class EndpointKind(models.TextChoices):
    VLLM = "vllm", "vLLM engine"
    DCGM = "dcgm", "DCGM exporter"
    ROUTER = "router", "router"
    GATEWAY = "gateway", "gateway"
    PROBER = "prober", "prober"
    OTHER = "other", "other"


class EndpointQuerySet(models.QuerySet["Endpoint"]):
    def enabled(self) -> EndpointQuerySet:
        return self.filter(enabled=True)


class Endpoint(models.Model):
    """One /metrics URL. FleetScope only ever sends GET to exactly this URL."""

    code = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    fleet = models.ForeignKey(Fleet, on_delete=models.CASCADE, related_name="endpoints")
    # Not URLField: its validator refuses single-label hosts (Kubernetes service
    # names); the outbound policy in clean() is the validator that matters.
    url = models.CharField(max_length=500)
    # The endpoint's identity (inventory.identity): one per target and fleet, whatever the
    # spelling of `url`. Set by save() from `url`.
    target = models.CharField(max_length=520, editable=False)
    # The `instance` label of the endpoint's stored series: host:port, or host:port/path
    # when another endpoint of the fleet already holds host:port. Unique in the fleet, so
    # two endpoints are never read as one series. Set by save().
    instance = models.CharField(max_length=520, editable=False)
    kind = models.CharField(max_length=16, choices=EndpointKind.choices, default=EndpointKind.VLLM)
    # Free labels such as model, zone, tp_group, tenant, pod, namespace.
    labels = models.JSONField(default=dict, blank=True)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = EndpointQuerySet.as_manager()

    class Meta:
        ordering = ["fleet", "url"]
        constraints = [
            models.UniqueConstraint(fields=["fleet", "url"], name="endpoint_unique_url_per_fleet"),
            models.UniqueConstraint(
                fields=["fleet", "target"], name="endpoint_unique_target_per_fleet"
            ),
            models.UniqueConstraint(
                fields=["fleet", "instance"], name="endpoint_unique_instance_per_fleet"
            ),
        ]

    def __str__(self) -> str:
        return self.url

    def save(self, *args: Any, **kwargs: Any) -> None:
        target = normalised_target(self.url)
        if target != self.target or not self.instance:
            self.target = target
            self.instance = self.instance_free(target)
            if kwargs.get("update_fields") is not None:
                kwargs["update_fields"] = {*kwargs["update_fields"], "target", "instance"}
        super().save(*args, **kwargs)

    def clean(self) -> None:
        # Registration-time checks; the scraper checks the resolved address again at connect
        # time. A second spelling of a target the fleet holds is refused, naming the first.
        from inventory.registration import endpoint_identity_check, endpoint_url_check

        endpoint_url_check(self.url)
        if self.fleet_id is not None:
            endpoint_identity_check(self.fleet_id, self.url, exclude_pk=self.pk)

    def instance_free(self, target: str) -> str:
        """The first of the target's instance names no other endpoint of the fleet holds."""
        taken = set(
            Endpoint.objects.filter(fleet_id=self.fleet_id)
            .exclude(pk=self.pk)
            .values_list("instance", flat=True)
        )
        candidates = instance_candidates(target)
        return next((name for name in candidates if name not in taken), candidates[-1])


class PrometheusSourceQuerySet(models.QuerySet["PrometheusSource"]):
    def enabled(self) -> PrometheusSourceQuerySet:
        return self.filter(enabled=True).order_by("name", "pk")


class PrometheusSource(models.Model):
    """A Prometheus (or Thanos, Mimir) API that FleetScope reads, and may discover targets from."""

    fleet = models.ForeignKey(Fleet, on_delete=models.CASCADE, related_name="prometheus_sources")
    name = models.CharField(max_length=100)
    url = models.CharField(max_length=500)
    enabled = models.BooleanField(default=True)

    objects = PrometheusSourceQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["fleet", "url"], name="prometheus_unique_url_per_fleet"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.url})"

    def clean(self) -> None:
        from inventory.registration import endpoint_url_check

        endpoint_url_check(self.url)


class ScrapeStatus(models.TextChoices):
    SUCCEEDED = "succeeded", "succeeded"
    FAILED = "failed", "failed"


class ScrapeRun(models.Model):
    """One scrape of one endpoint: the scraper's own health is a query, not a guess."""

    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="scrape_runs")
    started_at = models.DateTimeField()
    duration_seconds = models.FloatField()
    status = models.CharField(max_length=16, choices=ScrapeStatus.choices)
    # Machine-readable reason (refused, timeout, too_large, parse_error, blocked, ...).
    error_kind = models.CharField(max_length=32, blank=True)
    error = models.CharField(max_length=500, blank=True)
    body_bytes = models.PositiveBigIntegerField(default=0)
    samples = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-started_at"]
        indexes = [
            # selectors.endpoint_health_list: the latest run per endpoint.
            models.Index(fields=["endpoint", "-started_at"], name="scraperun_endpoint_latest"),
        ]
        constraints = [
            # Idempotency: a redelivered scrape task cannot write the same run twice.
            models.UniqueConstraint(
                fields=["endpoint", "started_at"], name="scraperun_unique_endpoint_start"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.endpoint_id} {self.started_at:%H:%M:%S} {self.status}"


class SeriesSet(models.Model):
    """The ordered list of series (name + labels) one endpoint exposed.

    Consecutive scrapes of an endpoint almost always expose the same series, so
    frames store only values, in this order, and point here.
    """

    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="series_sets")
    digest = models.CharField(max_length=64)
    # [[name, {label: value}], ...]; zlib-compressed JSON.
    series_blob = models.BinaryField()
    series_count = models.PositiveIntegerField()
    first_seen_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["endpoint", "digest"], name="seriesset_unique_digest_per_endpoint"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.series_count} series of endpoint {self.endpoint_id}"


class SampleFrame(models.Model):
    """All sample values of one successful scrape, as one compressed float64 vector."""

    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="frames")
    # A frame means nothing without its layout; both go when the endpoint goes.
    series_set = models.ForeignKey(SeriesSet, on_delete=models.CASCADE, related_name="frames")
    at = models.DateTimeField()
    values_blob = models.BinaryField()
    # Random per written row, so (pk, token) names one frame's values for good: store.py
    # caches decompressed values under it. The pk alone cannot: SQLite hands a rolled-back
    # rowid out again, to another frame of the same endpoint and time. 0: written before
    # tokens (or by hand), never cached.
    token = models.BigIntegerField(default=0)

    class Meta:
        indexes = [
            # store.frame_blocks checks its cached span listings with COUNT and SUM(token %
            # P) per endpoint over a time range: with token in the index that is an
            # index-only scan. It replaces a plain (endpoint, at) index, which the unique
            # constraint's own index already gives every other (endpoint, at) range read.
            models.Index(fields=["endpoint", "at", "token"], name="sampleframe_endpoint_at_tok"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["endpoint", "at"], name="sampleframe_unique_at"),
        ]

    def __str__(self) -> str:
        return f"frame of endpoint {self.endpoint_id} at {self.at:%Y-%m-%dT%H:%M:%SZ}"


class EndpointInventory(models.Model):
    """What an endpoint exposed when its series layout last changed: families, labels, dialect.

    Rewritten only when the layout changes; staleness comes from ScrapeRun, not from here.
    """

    endpoint = models.OneToOneField(Endpoint, on_delete=models.CASCADE, related_name="inventory")
    series_set = models.ForeignKey(SeriesSet, on_delete=models.CASCADE, related_name="+")
    scraped_at = models.DateTimeField()
    dialect = models.CharField(max_length=32)
    detected_kind = models.CharField(max_length=16)
    # {family: {"type", "help", "unit", "label_names", "series", "buckets", "problems"}}
    families = models.JSONField()
    engines = models.JSONField(default=list)
    evidence = models.JSONField(default=list)

    def __str__(self) -> str:
        return f"inventory of {self.endpoint_id}"


class JobHeartbeat(models.Model):
    """Last run of each periodic job, so readiness can tell a stalled scheduler from a quiet one."""

    job = models.CharField(max_length=100, unique=True)
    last_run_at = models.DateTimeField()
    runs = models.PositiveBigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.job} @ {self.last_run_at:%Y-%m-%dT%H:%M:%SZ}"


class TenantGrant(models.Model):
    """A tenant viewer's access: this user sees this tenant's cost and goodput on this
    fleet, and nothing else of it (`inventory.access`)."""

    user = models.ForeignKey("auth.User", on_delete=models.CASCADE, related_name="tenant_grants")
    fleet = models.ForeignKey(Fleet, on_delete=models.CASCADE, related_name="tenant_grants")
    tenant = models.CharField(max_length=100)

    class Meta:
        ordering = ["fleet", "tenant"]
        constraints = [
            models.UniqueConstraint(fields=["user", "fleet", "tenant"], name="tenant_grant_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user} sees tenant {self.tenant} on {self.fleet}"


class TokenScope(models.TextChoices):
    READ = "read", "read-only JSON, CSV and Markdown exports (GET)"
    ALERTMANAGER = "alertmanager", "the Alertmanager webhook (POST)"


class ApiToken(models.Model):
    """A bearer token for a machine: scoped, acting with its user's role, kept only as a
    SHA-256 digest (the token is shown once, at creation), revocable (`inventory.tokens`)."""

    name = models.CharField(max_length=100, unique=True)
    user = models.ForeignKey("auth.User", on_delete=models.CASCADE, related_name="api_tokens")
    scope = models.CharField(max_length=16, choices=TokenScope.choices)
    prefix = models.CharField(max_length=12)  # the token's first characters, to tell it apart
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        state = "revoked" if self.revoked_at else self.scope
        return f"{self.name} ({self.prefix}…, {state})"
