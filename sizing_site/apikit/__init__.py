"""The REST API's sizing endpoints, built on the configurator's sizing service."""
