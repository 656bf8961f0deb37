"""Errors the dashboard's forms tie to their fields. A field with an error is marked invalid and described by its
message (the element `<auto_id>_error` the template shows it in), so a screen reader reads the message with the
field, and the page's script can move focus to the first invalid field.

The services refuse with one message that names the field first ("threshold must be between 1 and 1000",
"url must not contain credentials"); the views put such a refusal on the form as a whole, and this puts it on the
field it names, where it can be tied to that field."""

from typing import Any, ClassVar

from django import forms


class FieldErrorsForm(forms.Form):
    # Refusals whose first words are not the field's name: their opening words -> the field.
    refusal_openings: ClassVar[dict[str, str]] = {}

    def field_refused(self, message: str) -> str | None:
        """The field a service's message is about, or None (the message stays on the form as a whole)."""
        named = message.split(" ", 1)[0]
        if named in self.fields:
            return named
        for opening, field in self.refusal_openings.items():
            if message.startswith(opening) and field in self.fields:
                return field
        return None

    def add_error(self, field: str | None, error: Any) -> None:
        if field is None and isinstance(error, str):
            field = self.field_refused(error)
        super().add_error(field, error)
        # A group of checkboxes or radios gets no aria-describedby from Django (it expects a fieldset to carry
        # one); each box carries it here, so the first invalid box, which gets focus, reads the message.
        for name in self.errors:
            if name in self.fields and self[name].use_fieldset:
                self.fields[name].widget.attrs["aria-describedby"] = f"{self[name].auto_id}_error"
