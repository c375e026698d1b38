"""The incident pages (`incidents`), the runbooks (`runbooks`), the evidence exports
(`evidence`) and the Alertmanager webhook (`alertmanager`)."""
