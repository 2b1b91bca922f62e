from django.apps import AppConfig


class IngestionConfig(AppConfig):
    """Memories from conversations: flushed messages, debounced extraction, journal, dream.

    Its own app label (``ingestion``) so its migrations are independent of ``memory``'s.
    """

    name = "memory.ingestion"
    label = "ingestion"
    verbose_name = "Conversation ingestion"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from memory.ingestion.content_kinds import CONTENT_KINDS
        from memory.ingestion.schedules import register
        from persistence.content_registry import register_content_kind

        register()
        for kind in CONTENT_KINDS:  # export and erasure cover conversation data
            register_content_kind(kind)
