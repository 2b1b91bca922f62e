"""Core policies are human-authored: a CHECK on the operation log.

Added ``NOT VALID``: new rows are checked, while rows an approved write request produced
before the rule existed stay in the append-only log (history is not rewritten).
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("orgmemory", "0010_approval_decision_edits")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddConstraint(
                    model_name="operationlogentry",
                    constraint=models.CheckConstraint(
                        condition=~models.Q(category="core_policy")
                        | models.Q(author_is_human=True),
                        name="orglog_core_policy_human",
                    ),
                )
            ],
            database_operations=[
                migrations.RunSQL(
                    "ALTER TABLE orgmemory_operationlogentry ADD CONSTRAINT "
                    "orglog_core_policy_human CHECK "
                    "(category <> 'core_policy' OR author_is_human) NOT VALID",
                    reverse_sql="ALTER TABLE orgmemory_operationlogentry "
                    "DROP CONSTRAINT orglog_core_policy_human",
                )
            ],
        )
    ]
