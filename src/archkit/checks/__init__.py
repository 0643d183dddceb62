"""The check catalogue: one module per rule (`akNNN_name.py`), registered by code."""

from archkit.checks.registry import Context, Rule, all_rules, register, rule_meta, run_rules

__all__ = ["Context", "Rule", "all_rules", "register", "rule_meta", "run_rules"]
