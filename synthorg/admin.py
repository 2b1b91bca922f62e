"""django-q2's admin pages, for superusers only.

A Schedule names any importable function and its arguments, and the worker runs it: adding
one is code execution on the server, and the task lists hold every company's arguments and
results. django-q2's own admins only check model permissions, so a staff member whose group
held the ``django_q`` permissions could do both. They are re-registered here with a check
that ignores model permissions and asks for ``is_superuser``.
"""

from __future__ import annotations

from django.contrib import admin
from django_q import admin as q_admin
from django_q.models import Failure, OrmQ, Schedule, Success


class SuperuserOnlyAdmin:
    """Mixin: every admin permission of the model is ``request.user.is_superuser``."""

    def has_module_permission(self, request):
        return request.user.is_active and request.user.is_superuser

    def has_view_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_superuser

    def has_add_permission(self, request, *args):
        return request.user.is_active and request.user.is_superuser

    def has_change_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_superuser

    def has_delete_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_superuser


def _superuser_only(admin_class: type[admin.ModelAdmin]) -> type[admin.ModelAdmin]:
    return type(admin_class.__name__, (SuperuserOnlyAdmin, admin_class), {})


Q_ADMINS = {
    Schedule: q_admin.ScheduleAdmin,
    Success: q_admin.TaskAdmin,
    Failure: q_admin.FailAdmin,
    OrmQ: q_admin.QueueAdmin,
}

for _model, _admin_class in Q_ADMINS.items():
    if admin.site.is_registered(_model):  # django_q registers OrmQ only with an ORM broker
        admin.site.unregister(_model)
        admin.site.register(_model, _superuser_only(_admin_class))
