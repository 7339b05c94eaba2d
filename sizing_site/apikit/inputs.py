"""The ground rules of the API's input serializers: each endpoint declares its input as a
nested `InputSerializer` on one of these bases, validates the body or query with it and
hands its typed `validated_data` to the service; the schema is generated from the same
serializer (`request=` or `parameters=`), so the two cannot drift.

- BodyInput: a JSON body (or a multipart form) is an object naming only the serializer's
  fields, each value of its field's JSON type (errors.json_object, errors.json_types),
  checked before the fields read it: DRF's own fields would take 7 as the text "7" and
  "1" as a number, and read a JSON null body as no object at all.
- QueryInput: the parameters named in `once` come once and not blank
  (errors.single_values): DRF reads the last of repeated values and a blank one as absent.

Both word their refusals as the pages' forms do where DRF words them otherwise: "This
field is required." for null or blank (the API has always read a null as blank), Django's
"at most N characters (it has M)"; `Choice` and `SlugRow` refuse a choice or an unknown
slug in a form's words, and `OptionalText` reads null and blank as "".
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NoReturn

from django.core.validators import MaxLengthValidator
from django.utils.translation import gettext_lazy as _
from rest_framework import serializers
from rest_framework.fields import empty

from sizing_site.apikit.errors import Refused, json_object, json_types, single_values

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

# Django's forms' words for what DRF words otherwise.
REQUIRED = _("This field is required.")
INVALID_CHOICE = _("Select a valid choice. %(value)s is not one of the available choices.")
UNKNOWN_ROW = _("Select a valid choice. That choice is not one of the available choices.")
_DRF_MAX_LENGTH = serializers.CharField.default_error_messages["max_length"]


class _FormWording(serializers.Serializer[Any]):
    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        fields = super().get_fields()
        for field in fields.values():
            field.error_messages.update(blank=REQUIRED, null=REQUIRED)
            most = getattr(field, "max_length", None)
            if most is not None and field.error_messages["max_length"] == _DRF_MAX_LENGTH:
                # Django's validator says "... at most 100 characters (it has 101)."
                field.validators = [
                    MaxLengthValidator(most) if isinstance(v, MaxLengthValidator) else v
                    for v in field.validators
                ]
        return fields


class BodyInput(_FormWording):
    """A JSON object with no field outside the serializer's, each of its field's type."""

    def run_validation(self, data: Any = empty) -> Any:
        try:
            json_object(data, frozenset(self.fields))
            json_types(data, self.fields)
        except Refused as exc:
            raise serializers.ValidationError(exc.errors) from None
        return super().run_validation(data)


class QueryInput(_FormWording):
    """Query parameters; those in `once` (the typed ones) sent once, not blank."""

    once: tuple[str, ...] = ()

    def run_validation(self, data: Any = empty) -> Any:
        if errors := single_values(data, self.once):
            raise serializers.ValidationError(errors)
        return super().run_validation(data)


class Choice(serializers.ChoiceField):
    """DRF's ChoiceField whose refusal is worded with %-placeholders, as Django's forms and
    this project word theirs: %(value)s is the value sent, %(choices)s the choices."""

    default_error_messages = {"invalid_choice": INVALID_CHOICE}

    def fail(self, key: str, **kwargs: Any) -> NoReturn:
        if key != "invalid_choice":
            super().fail(key, **kwargs)
        raise not_a_choice(kwargs["input"], self.choices, self.error_messages[key])


def not_a_choice(
    value: Any, choices: Iterable[Any], message: StrOrPromise = INVALID_CHOICE
) -> serializers.ValidationError:
    """The refusal of `value`, not among `choices`, in `message`'s words (%(value)s and
    %(choices)s): a choice that only the database knows is refused in the same words."""
    listed = ", ".join(str(choice) for choice in choices)
    return serializers.ValidationError(
        str(message) % {"value": value, "choices": listed}, code="invalid_choice"
    )


class SlugRow(serializers.SlugRelatedField[Any]):
    """A row by its slug (the queryset's), refused as a form's ModelChoiceField refuses one."""

    def __init__(self, **kwargs: Any) -> None:
        messages = {"does_not_exist": UNKNOWN_ROW, "invalid": UNKNOWN_ROW}
        kwargs["error_messages"] = {**messages, **kwargs.get("error_messages", {})}
        super().__init__(slug_field="slug", **kwargs)


class OptionalText(serializers.CharField):
    """Text that may be left out, sent blank or sent as null: each reads as ""."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("default", "")
        super().__init__(required=False, allow_blank=True, allow_null=True, **kwargs)

    def run_validation(self, data: Any = empty) -> Any:
        value = super().run_validation(data)
        return "" if value is None else value
