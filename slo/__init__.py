"""SLOs: definitions, attainment from histogram buckets (a value or an interval), goodput,
error budgets and burn rates, built on the query seam (`queries`). Only its page exists
yet; it says what it will show."""
