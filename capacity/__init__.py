"""Capacity review (N+1) and cost per 1M good output tokens per tenant, built on the query
seam (`queries`). Only its pages exist yet; they say what they will show."""
