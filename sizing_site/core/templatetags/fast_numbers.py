"""The `floatformat` filter of every template: sizing_site.core.numbers.floatformat, the
same string as Django's, registered under Django's name. settings.TEMPLATES lists this
library in "builtins", after Django's own, so that it replaces Django's filter in every
template (and in {% blocktranslate with %}) without a {% load %}."""

from __future__ import annotations

from django import template

from sizing_site.core.numbers import floatformat

register = template.Library()
register.filter("floatformat", floatformat, is_safe=True)
