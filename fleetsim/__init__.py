"""fleetsim: a simulated vLLM fleet that serves what real replicas serve.

No Django here: the package runs inside tests, the demo, and `python -m fleetsim`.
"""
