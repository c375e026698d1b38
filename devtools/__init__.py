"""What tests and benchmarks share: a real Prometheus on a free loopback port
(`prometheus`, also as a remote-write receiver that scrapes nothing), a feeder that writes
a fleetsim history into it as Prometheus' scrape loop would have, stale markers included
(`remote_write`), free ports (`ports`), and waits on a condition rather than a clock
(`waiting`). Never imported by the apps."""
