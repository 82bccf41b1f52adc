"""Task stores: one contract (base.py), several backends."""
