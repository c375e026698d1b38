"""The trail in the admin: searchable, filterable, and read-only for everyone, superusers
included: an entry is evidence, so none is added, edited or deleted by hand."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from audit.models import AuditEntry


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    list_display = ("at", "actor", "action", "object_type", "object_text", "fleet_slug")
    list_filter = ("action", "object_type", "fleet_slug")
    search_fields = ("actor", "object_text", "object_id", "fleet_slug")
    date_hierarchy = "at"
    readonly_fields = (
        "at", "actor", "action", "object_type", "object_id", "object_text", "fleet",
        "fleet_slug", "changes",
    )  # fmt: skip

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
