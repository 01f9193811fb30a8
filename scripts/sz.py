"""Code lines per layer of tensorsched (lines holding a Python token other than comments and
docstrings), in the order of the layer table; the core (ir, passes, schedules, codegen, runtime)
and the ring (the rest) summed. Usage: python scripts/sz.py [PACKAGE_DIR]"""

from __future__ import annotations

import io
import pathlib
import sys
import token
import tokenize

LAYERS = (
    "errors/config",
    "ir",
    "passes",
    "schedules",
    "codegen",
    "runtime",
    "ops",
    "tune",
    "graph",
    "baselines",
    "cli",
)
CORE = {"ir", "passes", "schedules", "codegen", "runtime"}


def code_lines(text: str) -> int:
    lines: set[int] = set()
    prev = token.INDENT
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in (
            token.COMMENT,
            token.NL,
            token.NEWLINE,
            token.INDENT,
            token.DEDENT,
            token.ENDMARKER,
        ):
            continue
        if tok.type == token.STRING and prev in (token.INDENT, token.NEWLINE, token.DEDENT):
            prev = tok.type  # a docstring (or a bare string statement)
            continue
        prev = tok.type
        lines.update(range(tok.start[0], tok.end[0] + 1))
    return len(lines)


def main() -> None:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "tensorsched")
    per: dict[str, int] = {}
    for f in sorted(root.rglob("*.py")):
        rel = f.relative_to(root).parts
        unit = rel[0] if len(rel) > 1 else f.stem
        unit = {
            "errors": "errors/config",
            "config": "errors/config",
            "__init__": "errors/config",
            "build": "runtime",
            "compare": "baselines",
            "testing": "tests (in package)",
        }.get(unit, unit)
        per[unit] = per.get(unit, 0) + code_lines(f.read_text())
    order = [u for u in LAYERS if u in per] + sorted(set(per) - set(LAYERS))
    for u in order:
        print(f"{u:20s} {per[u]:6d}")
    core = sum(n for u, n in per.items() if u in CORE)
    print(f"{'core':20s} {core:6d}\n{'ring':20s} {sum(per.values()) - core:6d}")
    print(f"{'total':20s} {sum(per.values()):6d}")


if __name__ == "__main__":
    main()
