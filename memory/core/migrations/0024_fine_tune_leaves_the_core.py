"""Fine-tune runs and adapter checkpoints move to their own app (``memory.finetune``, label
``finetune``): they leave this app's migration state only. The tables, their rows and their
constraints stay as they are (``finetune.0001_initial`` takes them over by name); no SQL
runs."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0023_reembed_job_durable"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(model_name="finetunerun", name="company"),
                migrations.RemoveField(model_name="finetunerun", name="requested_by"),
                migrations.DeleteModel(name="AdapterCheckpoint"),
                migrations.DeleteModel(name="FineTuneRun"),
            ],
            database_operations=[],
        ),
    ]
