"""Self-collision: closest points (geometry), candidate lists (lists), the narrow phase and its
fail-safe (stage), the method's constants (tuning) and what the stage reports (stats)."""
