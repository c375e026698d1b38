"""What tests and benchmarks share: a real Prometheus on a free loopback port
(`prometheus`), free ports (`ports`), and waits on a condition rather than a clock
(`waiting`). Never imported by the apps."""
