"""The API's shared plumbing, below every app's endpoints: the error shape and exception
handler, the JSON parser, paging, conditional reads, the work budget and the OpenAPI
helpers. It imports no page or endpoint app (the web-layers import contract)."""
