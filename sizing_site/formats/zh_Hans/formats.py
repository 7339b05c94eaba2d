"""Simplified Chinese: 1,425.5 and 2026年12月1日 13:24. Django's default groups nothing
(no thousand separator, groups of four); figures in the portal (tok/s, GB/s, USD) read as
grouped by three with a comma, as in Chinese technical and financial writing."""

DATE_FORMAT = "Y年n月j日"
TIME_FORMAT = "H:i"
DATETIME_FORMAT = "Y年n月j日 H:i"
YEAR_MONTH_FORMAT = "Y年n月"
MONTH_DAY_FORMAT = "n月j日"
SHORT_DATE_FORMAT = "Y-m-d"
SHORT_DATETIME_FORMAT = "Y-m-d H:i"
DECIMAL_SEPARATOR = "."
THOUSAND_SEPARATOR = ","
NUMBER_GROUPING = 3
