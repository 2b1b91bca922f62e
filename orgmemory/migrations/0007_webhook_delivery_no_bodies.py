"""Drop what earlier attempts kept of endpoints' answers and connection errors.

Deliveries used to keep the first 200 bytes of a failed answer, or the connection error's
text, in ``last_error``, which every member of the company sees. From now on only the status
or the kind of failure is kept (orgmemory.services.webhooks); this rewrites older rows the
same way.
"""

from django.db import migrations
from django.db.models import Q, TextField, Value
from django.db.models.functions import Cast, Concat


def scrub(apps, schema_editor):
    WebhookDelivery = apps.get_model("orgmemory", "WebhookDelivery")
    failed = WebhookDelivery.objects.exclude(last_error="")
    failed.filter(response_status__isnull=False).update(
        last_error=Concat(Value("HTTP "), Cast("response_status", output_field=TextField()))
    )
    failed.filter(response_status__isnull=True).exclude(
        Q(last_error="The company's webhook was removed or disabled.")
    ).update(last_error="The endpoint could not be reached.")


class Migration(migrations.Migration):
    dependencies = [("orgmemory", "0006_orgfact_search")]

    operations = [migrations.RunPython(scrub, migrations.RunPython.noop)]
