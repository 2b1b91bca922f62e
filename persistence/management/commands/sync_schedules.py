from django.core.management.base import BaseCommand

from synthorg.schedules import sync_schedules


class Command(BaseCommand):
    help = "Create, update and delete django-q2 schedules to match what the apps declare."

    def handle(self, *args, **options):
        report = sync_schedules()
        for label, names in (
            ("created", report.created),
            ("updated", report.updated),
            ("deleted", report.deleted),
        ):
            for name in names:
                self.stdout.write(f"{label}: {name}")
        total = len(report.created) + len(report.updated) + len(report.deleted)
        self.stdout.write(self.style.SUCCESS(f"Schedules in sync ({total} change(s))."))
