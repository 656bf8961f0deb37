"""The Groups pages' forms. They read what the owner typed into the columns groups.services and groups.rules take
(amounts typed in major units become minor units, questions one a line become the JSON list) and refuse, with a
message on the field, what the models' constraints would refuse without naming a field; every other refusal is the
service's, shown on the form by the view."""

from decimal import Decimal
from typing import Any, ClassVar

from django import forms

from core.currency import Currency, minor_unit_exponent
from core.money import minor_units_parse
from groups.models import DiscountDuration, DiscountType, Metric, PartnerGroup, Period, TierRule
from programs.models import COMMISSION_RATE_MAX, DURATION_MONTHS_MAX, PERCENT_TYPES, CommissionType

from .form_errors import FieldErrorsForm

# Amounts typed in major units stay below this (as the payouts page's): far past any real bonus or discount.
AMOUNT_MAX = Decimal(10) ** 12
HOLD_DAYS_MAX = 365  # as the program's settings (programs.messages.HOLD_DAYS_INVALID)
QUESTIONS_MAX = 10
QUESTION_MAX = 200
# A revenue threshold is typed in major units of the sales' currency, as the dashboard shows revenue (2 decimals).
REVENUE_PLACES = 2

RATE_POSITIVE = "Enter a rate greater than 0."
RATE_PERCENT_MAX = "A percent rate is at most 100."
RATE_TOO_LARGE = "Enter a rate of at most 9,999,999,999.9999."
PERCENT_RANGE = "Enter a percent greater than 0 and at most 100."
PERCENT_REQUIRED = "Enter the percent off."
AMOUNT_REQUIRED = "Enter the amount off."
AMOUNT_INVALID = "Enter an amount in {currency} greater than 0, with at most {places} decimals."
MONTHS_REQUIRED = "Enter for how many months the discount applies."
QUESTIONS_TOO_MANY = f"Ask at most {QUESTIONS_MAX} questions."
QUESTION_TOO_LONG = f"A question is at most {QUESTION_MAX} characters."
THRESHOLD_SALES = "Enter a whole number of sales, 1 or more."
THRESHOLD_REVENUE = "Enter a revenue greater than 0, with at most 2 decimals."
BONUS_AMOUNT_INVALID = "Enter the bonus in {currency} greater than 0, with at most {places} decimals."

COMMISSION_TYPE_CHOICES = [
    (CommissionType.PERCENT, "Percent of each sale (not renewals)"),
    (CommissionType.RECURRING_PERCENT, "Percent of each sale, renewals included"),
    (CommissionType.FIXED, "Fixed amount per sale (not renewals)"),
    (CommissionType.RECURRING_FIXED, "Fixed amount per sale, renewals included"),
]
DISCOUNT_TYPE_CHOICES = [("", "No discount"), *DiscountType.choices]
CURRENCY_CHOICES = [(code, code) for code in Currency.values]
DIRECTION_CHOICES = [(TierRule.Direction.PROMOTE, "Promote at or above"), (TierRule.Direction.DEMOTE, "Demote below")]


class GroupChoiceField(forms.ModelChoiceField[PartnerGroup]):
    def label_from_instance(self, obj: PartnerGroup) -> str:
        return obj.name


def _plain(value: Decimal | int) -> str:
    """30.0000 as the owner typed it: "30" (normalize() alone writes 3E+1)."""
    return f"{Decimal(value).normalize():f}"


def _minor(text: str, currency: str) -> int | None:
    minor = minor_units_parse(text, currency, below=AMOUNT_MAX) if text else None
    return minor if minor is not None and minor > 0 else None


def questions_text(questions: list[dict[str, Any]]) -> str:
    """The stored questions as the form shows them: one a line, a required one ending with " *"."""
    lines = []
    for question in questions if isinstance(questions, list) else []:
        if isinstance(question, dict) and question.get("label"):
            lines.append(f"{question['label']}{' *' if question.get('required') else ''}")
    return "\n".join(lines)


class ServiceErrorsForm(FieldErrorsForm):
    def field_refused(self, message: str) -> str | None:
        # groups.services and groups.rules name the field with a colon: "commission_rate: Ensure ...".
        named = message.split(" ", 1)[0].rstrip(":")
        return named if named in self.fields else super().field_refused(message)


class GroupForm(ServiceErrorsForm):
    """A group's columns. For the default group the commission terms are left out: they are the program's."""

    refusal_openings: ClassVar[dict[str, str]] = {"A group named": "name"}

    name = forms.CharField(label="Name", max_length=100, strip=True)
    commission_type = forms.ChoiceField(label="Commission", choices=COMMISSION_TYPE_CHOICES)
    commission_rate = forms.DecimalField(
        label="Rate",
        max_digits=14,
        decimal_places=4,
        help_text="A percent for the percent types; for a fixed amount, in the smallest currency unit (5000 = 50.00).",
        widget=forms.TextInput(attrs={"inputmode": "decimal"}),
    )
    duration_months = forms.IntegerField(
        label="Recurring for (months)",
        min_value=0,
        max_value=DURATION_MONTHS_MAX,
        initial=0,
        help_text="Renewals included types only: 0 = for the customer's lifetime.",
    )
    hold_days = forms.IntegerField(label="Hold period (days)", min_value=0, max_value=HOLD_DAYS_MAX, initial=30)
    discount_type = forms.ChoiceField(
        label="Customer discount", choices=DISCOUNT_TYPE_CHOICES, required=False, widget=forms.RadioSelect
    )
    discount_percent = forms.DecimalField(
        label="Percent off",
        max_digits=5,
        decimal_places=2,
        required=False,
        widget=forms.TextInput(attrs={"inputmode": "decimal"}),
    )
    discount_amount = forms.CharField(
        label="Amount off",
        max_length=32,
        required=False,
        strip=True,
        widget=forms.TextInput(attrs={"inputmode": "decimal"}),
    )
    discount_currency = forms.ChoiceField(label="Currency", choices=CURRENCY_CHOICES, initial=Currency.USD)
    discount_duration = forms.ChoiceField(
        label="Discount applies to",
        choices=DiscountDuration.choices,
        initial=DiscountDuration.ONCE,
        widget=forms.RadioSelect,
    )
    discount_duration_months = forms.IntegerField(
        label="Months", min_value=1, max_value=DURATION_MONTHS_MAX, required=False
    )
    applications_open = forms.BooleanField(label="Open to applications", required=False)
    application_questions = forms.CharField(
        label="Application questions",
        required=False,
        strip=True,
        max_length=QUESTIONS_MAX * (QUESTION_MAX + 3),
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="One a line; end a line with * to make the question required.",
    )

    def __init__(self, *args: Any, default: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.default = default
        if default:
            for name in ("commission_type", "commission_rate", "duration_months", "hold_days"):
                del self.fields[name]

    @classmethod
    def initial_of(cls, group: PartnerGroup) -> dict[str, Any]:
        amount = ""
        if group.discount_amount_cents:
            places = minor_unit_exponent(group.discount_currency)
            amount = f"{Decimal(group.discount_amount_cents).scaleb(-places):.{places}f}"
        return {
            "name": group.name,
            "commission_type": group.commission_type,
            "commission_rate": _plain(group.commission_rate),
            "duration_months": group.duration_months,
            "hold_days": group.hold_days,
            "discount_type": group.discount_type,
            "discount_percent": _plain(group.discount_percent) if group.discount_percent else None,
            "discount_amount": amount,
            "discount_currency": group.discount_currency,
            "discount_duration": group.discount_duration,
            "discount_duration_months": group.discount_duration_months,
            "applications_open": group.applications_open,
            "application_questions": questions_text(group.application_questions),
        }

    def clean_commission_rate(self) -> Decimal | None:
        rate: Decimal | None = self.cleaned_data.get("commission_rate")
        if rate is not None and rate <= 0:
            raise forms.ValidationError(RATE_POSITIVE)
        if rate is not None and rate > COMMISSION_RATE_MAX:
            raise forms.ValidationError(RATE_TOO_LARGE)
        return rate

    def clean_application_questions(self) -> list[dict[str, Any]]:
        questions = []
        for line in self.cleaned_data.get("application_questions", "").splitlines():
            label = line.strip()
            required = label.endswith("*")
            label = label.rstrip("*").strip()
            if not label:
                continue
            if len(label) > QUESTION_MAX:
                raise forms.ValidationError(QUESTION_TOO_LONG)
            questions.append({"label": label, "required": required})
        if len(questions) > QUESTIONS_MAX:
            raise forms.ValidationError(QUESTIONS_TOO_MANY)
        return questions

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        rate = cleaned.get("commission_rate")
        if rate is not None and cleaned.get("commission_type") in PERCENT_TYPES and rate > 100:
            self.add_error("commission_rate", RATE_PERCENT_MAX)
        kind = cleaned.get("discount_type", "")
        percent, amount = cleaned.get("discount_percent"), None
        if kind == DiscountType.PERCENT:
            if percent is None:
                self.add_error("discount_percent", PERCENT_REQUIRED)
            elif not 0 < percent <= 100:
                self.add_error("discount_percent", PERCENT_RANGE)
        elif kind == DiscountType.AMOUNT:
            currency = cleaned.get("discount_currency") or Currency.USD
            typed = cleaned.get("discount_amount", "")
            amount = _minor(typed, currency)
            if not typed:
                self.add_error("discount_amount", AMOUNT_REQUIRED)
            elif amount is None:
                places = minor_unit_exponent(currency)
                self.add_error("discount_amount", AMOUNT_INVALID.format(currency=currency, places=places))
        months = cleaned.get("discount_duration_months")
        if kind and cleaned.get("discount_duration") == DiscountDuration.REPEATING:
            if months is None and "discount_duration_months" not in self.errors:
                self.add_error("discount_duration_months", MONTHS_REQUIRED)
        else:
            months = None
        cleaned["discount_percent"] = percent if kind == DiscountType.PERCENT else None
        cleaned["discount_amount_cents"] = amount if kind == DiscountType.AMOUNT else None
        cleaned["discount_duration_months"] = months
        return cleaned

    def group_fields(self) -> dict[str, Any]:
        """The cleaned form as groups.services takes it (GROUP_FIELDS)."""
        data = self.cleaned_data
        fields = {
            "name": data["name"],
            "discount_type": data["discount_type"],
            "discount_percent": data["discount_percent"],
            "discount_amount_cents": data["discount_amount_cents"],
            "discount_currency": data["discount_currency"],
            "discount_duration": data["discount_duration"],
            "discount_duration_months": data["discount_duration_months"],
            "applications_open": data["applications_open"],
            "application_questions": data["application_questions"],
        }
        if not self.default:
            for name in ("commission_type", "commission_rate", "duration_months", "hold_days"):
                fields[name] = data[name]
        return fields


def _threshold(form: forms.Form, cleaned: dict[str, Any]) -> None:
    """The typed threshold as the models store it: a count of sales, or revenue in minor units."""
    typed = cleaned.get("threshold", "")
    metric = cleaned.get("metric")
    if not typed or metric is None:
        return
    if metric == Metric.SALES:
        value = minor_units_parse(typed, Currency.VND, below=AMOUNT_MAX)  # a whole number: no decimals
        if value is None or value < 1:
            form.add_error("threshold", THRESHOLD_SALES)
            return
    else:
        minor = minor_units_parse(typed, Currency.USD, below=AMOUNT_MAX)
        if minor is None or minor < 1:
            form.add_error("threshold", THRESHOLD_REVENUE)
            return
        value = minor
    cleaned["threshold_value"] = value


class TierRuleForm(ServiceErrorsForm):
    direction = forms.ChoiceField(label="When", choices=DIRECTION_CHOICES, initial=TierRule.Direction.PROMOTE)
    metric = forms.ChoiceField(label="Figure", choices=Metric.choices)
    period = forms.ChoiceField(
        label="Per", choices=[(Period.MONTH, Period.MONTH.label), (Period.QUARTER, Period.QUARTER.label)]
    )
    threshold = forms.CharField(
        label="Threshold",
        max_length=32,
        strip=True,
        help_text="Sales: a count. Revenue: in major units of the sales' currency (1000 or 1000.00).",
        widget=forms.TextInput(attrs={"inputmode": "decimal"}),
    )
    target = GroupChoiceField(label="Move to", queryset=PartnerGroup.objects.none(), empty_label=None)

    def __init__(self, *args: Any, group: PartnerGroup, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["target"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = (
            PartnerGroup.objects.filter(program_id=group.program_id)
            .exclude(pk=group.pk)
            .order_by("-is_default", "name")
        )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        _threshold(self, cleaned)
        return cleaned

    def rule_fields(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "target": data["target"],
            "direction": data["direction"],
            "metric": data["metric"],
            "period": data["period"],
            "threshold": data["threshold_value"],
        }


class BonusForm(ServiceErrorsForm):
    name = forms.CharField(label="Name", max_length=100, strip=True)
    metric = forms.ChoiceField(label="Figure", choices=Metric.choices)
    period = forms.ChoiceField(label="Per", choices=Period.choices, initial=Period.LIFETIME)
    threshold = forms.CharField(
        label="Threshold",
        max_length=32,
        strip=True,
        help_text="Sales: a count. Revenue: in major units of the sales' currency.",
        widget=forms.TextInput(attrs={"inputmode": "decimal"}),
    )
    amount = forms.CharField(
        label="Bonus", max_length=32, strip=True, widget=forms.TextInput(attrs={"inputmode": "decimal"})
    )
    currency = forms.ChoiceField(label="Currency", choices=CURRENCY_CHOICES, initial=Currency.USD)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        _threshold(self, cleaned)
        currency, typed = cleaned.get("currency"), cleaned.get("amount", "")
        if currency and typed:
            cleaned["amount_cents"] = _minor(typed, currency)
            if cleaned["amount_cents"] is None:
                places = minor_unit_exponent(currency)
                self.add_error("amount", BONUS_AMOUNT_INVALID.format(currency=currency, places=places))
        return cleaned

    def bonus_fields(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "name": data["name"],
            "metric": data["metric"],
            "period": data["period"],
            "threshold": data["threshold_value"],
            "amount_cents": data["amount_cents"],
            "currency": data["currency"],
        }


class MoveForm(FieldErrorsForm):
    group = GroupChoiceField(label="Move to", queryset=PartnerGroup.objects.none(), empty_label=None)
    # Where to go back to: the partners page, or the partner's own page.
    back = forms.ChoiceField(choices=[("partners", "partners"), ("partner", "partner")], required=False)

    def __init__(self, *args: Any, program_id: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["group"]
        assert isinstance(field, forms.ModelChoiceField)
        # Another program's group is no choice: refused as an unknown one.
        field.queryset = PartnerGroup.objects.filter(program_id=program_id).order_by("-is_default", "name")


class CodeForm(ServiceErrorsForm):
    refusal_openings: ClassVar[dict[str, str]] = {
        "coupon_code": "code",
        "The code": "code",
        "A Stripe promotion code": "code",
        "Stripe refused": "code",
    }

    # Checked by groups.codes.code_valid (the one rule and message); the length only keeps junk out.
    code = forms.CharField(label="New code", max_length=100, strip=True)
