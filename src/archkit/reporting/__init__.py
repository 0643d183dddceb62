"""Reports of located results (check findings, verify drift, load-test verdicts): SARIF and JUnit."""

from __future__ import annotations
