from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from programs.models import Program
from tiers.milestones import bonuses_award, bonuses_award_all
from tiers.moves import tier_rules_apply


class Command(BaseCommand):
    help = (
        "Applies the tier rules and pays the milestone bonuses that are due, as the hourly beat jobs "
        "groups.apply_tiers and groups.award_bonuses do. Safe to run at any time, also beside them: a rule moves a "
        "partner once per period and a bonus is paid once per partner and period."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tiers-only", action="store_true", help="Apply the tier rules only")
        parser.add_argument("--bonuses-only", action="store_true", help="Pay the bonuses only")
        parser.add_argument("--program", type=int, help="Pay the bonuses of this program only (its id)")

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["bonuses_only"]:
            run = tier_rules_apply()
            self.stdout.write(f"Tier rules moved {run.moved} partner(s).")
        if not options["tiers_only"]:
            if options["program"]:
                program = Program.objects.filter(pk=options["program"]).first()
                if program is None:
                    self.stderr.write(f"No program #{options['program']}.")
                    return
                awarded = bonuses_award(program).awarded
            else:
                awarded = bonuses_award_all().awarded
            self.stdout.write(f"Bonuses paid: {awarded}.")
