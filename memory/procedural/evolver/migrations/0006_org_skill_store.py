"""The evolver's skill table is gone: its rows moved to the one org skill store
(``procedural.0010_org_skill_store``), which this migration follows. Reversed, the table is
recreated empty and ``procedural.0010``'s reverse step fills it back."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("evolver", "0005_org_skill"),
        ("procedural", "0010_org_skill_store"),
    ]

    operations = [
        migrations.DeleteModel(name="OrgSkill"),
    ]
