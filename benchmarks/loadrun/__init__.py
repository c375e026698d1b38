"""The parts of benchmarks/load.py, which sets them up and prints their figures: the
benchmark's own database, Redis and Prometheus history (`prepare`), its helper processes
spoken to in JSON lines (`child`): the live job (`publisher`) and the websocket clients
(`sockets`); the page viewers and the /healthz probe (`viewers`), one measured period
(`run`), what it measured (`measured`) and the printed table (`report`)."""
