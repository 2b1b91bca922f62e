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
        from memory.ingestion.config import SECTIONS
        from synthorg.company_config.sections import register_config_sections

        register_config_sections(*SECTIONS)

        from memory.core.extensions import register_training_pair_source
        from memory.ingestion.schedules import register
        from memory.ingestion.selectors import extracted_fact_training_pairs

        register()
        register_training_pair_source("extracted", extracted_fact_training_pairs)
