"""Fact vectors of any width: org facts are embedded with the company's embedder.

The org-fact dense leg is an exact scan over the live versions it ranks (no HNSW index), so
an untyped column needs no per-embedder index; the query compares only vectors of the
query's embedder id and width.
"""

import pgvector.django.vector
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("orgmemory", "0004_webhook_delivery_lease")]

    operations = [
        migrations.AlterField(
            model_name="factversionembedding",
            name="embedding",
            field=pgvector.django.vector.VectorField(),
        ),
    ]
