"""The capacity review and cost pages: `review` (per fleet, one section per served model,
and a model profile from a pasted config.json) and `cost` (per fleet and period, with CSV
and JSON exports and the stored monthly reports)."""
