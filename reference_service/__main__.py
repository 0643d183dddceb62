"""Entry point: ``python -m reference_service {serve,triton,golden,verify-rollback}``."""

from __future__ import annotations

import sys

USAGE = """usage: python -m reference_service COMMAND [options]

commands:
  serve            start Triton and the gateway on 127.0.0.1; stop with SIGTERM or Ctrl-C
  triton           only the Triton worker (its own pod in Kubernetes; serve starts it itself)
  golden           regenerate the golden set (seeded, deterministic)
  verify-rollback  check a running service: models loaded, golden outputs unchanged
  quantise         make the int8 models from the shipped ONNX files (NNCF, generated pages)
"""


def main(argv: list[str]) -> int:
    if not argv or argv[0] in {"-h", "--help"}:
        print(USAGE)
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd == "serve":
        from .serve import main as serve

        return serve(rest)
    if cmd == "triton":
        from .triton_worker import main as triton

        triton(rest)
        return 0
    if cmd == "golden":
        from .golden.generate import main as golden

        golden(rest)
        return 0
    if cmd == "verify-rollback":
        from .verify_rollback import main as verify

        return verify(rest)
    if cmd == "quantise":
        from .quantise import main as quantise

        return quantise(rest)
    print(USAGE, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
