from django.apps import AppConfig


class MemoryInterfacesConfig(AppConfig):
    name = "memory.interfaces"
    label = "memory_interfaces"
    verbose_name = "Agent memory interfaces"

    def ready(self) -> None:
        from memory.interfaces.tools.catalogue import register_memory_tools

        register_memory_tools()
