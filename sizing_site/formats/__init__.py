"""The portal's number and date formats per language (settings.FORMAT_MODULE_PATH).

Each language groups thousands (zh-hans included, where Django's default does not) and
writes dates in one pattern, day before month before year except where the language puts
the year first, with a 24-hour clock; the short forms are the same order in figures.
Anything not set here falls back to Django's own format module for the language.
"""
