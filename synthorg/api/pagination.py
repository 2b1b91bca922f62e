from rest_framework.pagination import CursorPagination, PageNumberPagination


class StablePageNumberPagination(PageNumberPagination):
    """Page-number pagination; views must order by a unique key so pages are stable."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500


class StableCursorPagination(CursorPagination):
    """Keyset pagination for large, append-mostly tables (constant time per page)."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500
    ordering = ("-created_at", "-id")
