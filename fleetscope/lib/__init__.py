"""Small plain helpers any app may use: each module is its own face (no models, no views)."""
