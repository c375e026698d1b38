"""The audit trail: who changed which configuration row (SLOs and their objectives,
fleets, endpoints, Prometheus sources, tenant rules, prices, capacity plans, GPU profiles,
runbooks), when, and from what to what. Recorded by signals on every path that saves or
deletes through the ORM (audit.tracked lists the models); read by audit.selectors."""
