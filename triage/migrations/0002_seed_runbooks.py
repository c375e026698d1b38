"""One runbook per leaf of the triage tree. Runbooks that exist are left alone, so people's
edits survive; unapplying keeps the rows (they may have been edited since)."""

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

from triage.runbooks import runbooks_seed


def seed(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    runbooks_seed(apps.get_model("triage", "Runbook"))


class Migration(migrations.Migration):
    dependencies = [("triage", "0001_initial")]

    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
