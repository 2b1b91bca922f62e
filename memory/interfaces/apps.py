from django.apps import AppConfig


class MemoryInterfacesConfig(AppConfig):
    name = "memory.interfaces"
    label = "memory_interfaces"
    verbose_name = "Agent memory interfaces"

    def ready(self) -> None:
        from memory.interfaces.console.evidence import report_linker
        from memory.interfaces.tools.catalogue import register_memory_tools
        from orgmemory.evidence_links import register_report_linker

        register_memory_tools()
        register_report_linker(report_linker)
