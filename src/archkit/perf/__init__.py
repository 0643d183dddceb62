"""The performance model of a spec: queueing, batching, latency paths, the pipeline simulation.

Modules: `queueing` (Little's law, Erlang C, M/D/1, M/D/c), `batching` (dynamic batching
prediction and recommendation), `latency` (path composition over data and control flow),
`capacity` (per-stage analysis of a spec), `retry` (retry amplification, nested timeouts),
`resources`, `pipeline`, `pipesim` and `pipesim_kernel` (the whole-pipeline simulation over
shared resources). No I/O; only `archkit.spec` is imported. Fault trees are a separate
package (`archkit.faulttree`) that shares nothing with this one (an import-linter contract).
"""
