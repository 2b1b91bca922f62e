from django_filters import rest_framework as filters

from memory.core.domain import normalise_tags
from memory.core.models.memory import Memory, validate_subject_field
from synthorg.api.fields import UtcDateTimeFilter


class TagsFilter(filters.BaseCSVFilter, filters.CharFilter):
    """``?tag=a,b``: memories carrying every listed tag (normalised like stored tags)."""

    def filter(self, qs, value):
        if not value:
            return qs
        try:
            tags = list(normalise_tags(value))
        except ValueError:
            return qs.none()
        return qs.filter(tags__contains=tags)


class MemoryFilter(filters.FilterSet):
    category = filters.ChoiceFilter(choices=Memory._meta.get_field("category").choices)
    namespace = filters.CharFilter()
    tag = TagsFilter(help_text="Comma-separated; a memory must carry all of them.")
    created_after = UtcDateTimeFilter(
        field_name="created_at", lookup_expr="gte", help_text="ISO 8601; inclusive."
    )
    created_before = UtcDateTimeFilter(
        field_name="created_at", lookup_expr="lt", help_text="ISO 8601; exclusive."
    )
    level = filters.ChoiceFilter(choices=Memory.Level.choices)
    session_id = filters.CharFilter()
    subject = filters.CharFilter(
        validators=[validate_subject_field],
        strip=False,
        help_text="Only memories about this end user.",
    )
    include_superseded = filters.ChoiceFilter(
        choices=[("true", "true"), ("false", "false")],
        method="_noop",
        help_text="Also list memories that were superseded (default: false).",
    )

    class Meta:
        model = Memory
        fields = ("category", "namespace", "level", "session_id")

    def _noop(self, queryset, name, value):
        return queryset

    def filter_queryset(self, queryset):
        queryset = super().filter_queryset(queryset)
        if self.form.cleaned_data.get("include_superseded") != "true":
            queryset = queryset.filter(superseded_at__isnull=True)
        return queryset
