"""Saved configurations, share links and the activity log under /api/v1/o/<org_slug>/:
what the reports pages do (sizing_site.reports.views), for scripts. One module per
subdomain; sizing_site/api_urls.py routes to each:

- `configurations`: list, save, read, rename, delete, recompute, export, duplicate,
  compare (shapes in `configuration_schema`). A configuration is saved the way the
  configurator's Save form saves it: the page's SaveForm for name, notes and tags, the
  setup fields (the configurator's query-parameter names, as POST /api/v1/estimate/ takes
  them) sized through the configurator's `configuration_size`, then frozen by
  `services.saved_configuration_create`. The client sends no figures: an unknown field is
  a 400 naming it.
- `links`: share links and the org's sharing policy (sizing_site.sharing underneath, as
  for saved plans); editors revoke their own links, admins any.
- `activity`: the org's activity log (admins).
- `base`: the base view and the responses' shape. Every view is a TenantApiView: a
  non-member gets 404 whatever the method; reads need a viewer, writes (any unsafe method)
  an editor, else 403. Rows are named by their public `code`.
"""
