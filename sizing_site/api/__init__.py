"""The REST API's sizing endpoints (issue 15), built on the configurator's sizing service."""
