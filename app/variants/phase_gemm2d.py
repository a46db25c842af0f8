"""Placeholder until this variant family lands."""
VARIANTS = ()
