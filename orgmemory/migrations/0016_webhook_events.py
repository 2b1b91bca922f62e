"""Memory events on the company webhook: the events it subscribes to (a webhook that exists
keeps the approval queue's four, the column's default) and whether payloads carry memory
text (``include_content``, off); a memory event's delivery has no approval item.
"""

import django.contrib.postgres.fields
import django.db.models.deletion
import orgmemory.approval_models
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('orgmemory', '0015_webhook_delivery_job'),
        ('persistence', '0012_tenant_files_by_company_id'),
    ]

    operations = [
        migrations.AddField(
            model_name='approvalwebhook',
            name='events',
            field=django.contrib.postgres.fields.ArrayField(base_field=models.CharField(max_length=40), blank=True, default=orgmemory.approval_models._default_events, size=None),
        ),
        migrations.AddField(
            model_name='approvalwebhook',
            name='include_content',
            field=models.BooleanField(default=False),
        ),
        migrations.AlterField(
            model_name='webhookdelivery',
            name='item',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='webhook_deliveries', to='orgmemory.approvalitem'),
        ),
        migrations.AddConstraint(
            model_name='approvalwebhook',
            constraint=models.CheckConstraint(condition=models.Q(('events__contained_by', ['approval.pending', 'approval.approved', 'approval.rejected', 'approval.expired', 'memory.created', 'memory.updated', 'memory.archived', 'memory.restored', 'memory.deleted', 'lesson.created', 'approval.decided'])), name='webhook_events_known'),
        ),
    ]
