"""What the capacity and cost pages show, as plain functions the views and commands call:
`params` (the period and source from a query string or flags), `cost` (tables, trend and
the command's text) and `review` (a capacity plan's review as sections, rows and JSON)."""
