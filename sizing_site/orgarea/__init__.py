"""The org's overview page (tenancy:dashboard): what the organization has in each app, with
counts and links. It reads every app's rows through their own selectors, so it sits above
the apps (pyproject's web layers); tenancy routes it, and imports none of it."""
