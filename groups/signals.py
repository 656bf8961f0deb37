"""Every program gets its default group as it is created (groups.selectors.default_group also makes one for a
program older than groups, or made by a path that sent no signal)."""

from typing import Any

from django.db.models.signals import post_save
from django.dispatch import receiver

from programs.models import Program

from .selectors import default_group


@receiver(post_save, sender=Program, dispatch_uid="groups.default_group_for_new_program")
def default_group_for_new_program(sender: type[Program], instance: Program, created: bool, **_: Any) -> None:
    if created:
        default_group(instance)
