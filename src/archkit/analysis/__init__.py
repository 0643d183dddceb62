"""Pure analyses of a spec: queueing and budget math, fault-tree cut sets and probabilities."""
