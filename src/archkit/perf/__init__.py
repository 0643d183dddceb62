"""The performance model of a spec: queueing, batching, latency paths, the pipeline simulation.

Modules: `queueing` (Little's law, Erlang C, M/D/1, M/D/c), `batching` (dynamic batching
prediction and recommendation), `latency` (path composition over data and control flow),
`capacity` (per-stage analysis of a spec), `retry` (retry amplification, nested timeouts),
`resources`, `pipeline`, `pipesim` and `pipesim_kernel` (the whole-pipeline simulation over
shared resources), `service_models` (what a stage's server does with arriving work: one
plug-in per kind of server, used by the demand model and the simulation). No I/O; only `archkit.spec` is imported. Fault trees are a separate
package (`archkit.faulttree`) that shares nothing with this one (an import-linter contract).
"""
