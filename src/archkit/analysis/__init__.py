"""Pure analyses of a spec: queueing and budget math, fault-tree cut sets and probabilities.

Modules: `queueing` (Little's law, Erlang C, M/D/1, M/D/c), `batching` (dynamic batching
prediction and recommendation), `latency` (path composition over data and control flow),
`capacity` (per-stage analysis of a spec), `retry` (retry amplification, nested timeouts),
`faulttree` (cut sets and probabilities). No I/O; only `archkit.spec` is imported.
"""
