"""Reports of located results (check findings, verify drift, load-test verdicts): one shape, SARIF, JUnit.

`located.Located` is the protocol every result satisfies, `located.locate` the one helper that
turns a spec path into file, line and column; `sarif(results, tool, ...)` and
`junit(results, name, ...)` are the one writer of each format.
"""

from __future__ import annotations

from archkit.diagnostics import Outcome
from archkit.reporting.junit import junit
from archkit.reporting.located import Located, Location, Result, locate
from archkit.reporting.sarif import RuleInfo, sarif

__all__ = ["Located", "Location", "Outcome", "Result", "RuleInfo", "junit", "locate", "sarif"]
