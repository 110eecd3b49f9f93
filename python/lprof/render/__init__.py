"""Pure functions from a profile dict to text or files; no CLI decisions."""
