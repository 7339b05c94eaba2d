"""The parts of the load benchmark that `python benchmarks/load.py MODE` runs: the server
processes (server, worker), the clients (client, accounts), what they ask for (scenarios)
and one module per mode (pages, api, planner, abuse, hold)."""
