"""The layers of ``../shared/DESIGN.md`` point one way: every import inside ``tensorsched/``
(function-local ones included) goes to its own layer or one listed before it, and nothing
inside the package imports the package root."""

import ast
import pathlib

import tensorsched

ROOT = pathlib.Path(tensorsched.__file__).parent

# In DESIGN.md's order: a unit imports only units at its own rank or a lower one.
LAYERS = (
    ("errors", "config"),
    ("ir",),
    ("passes",),
    ("schedules",),
    ("codegen",),
    ("runtime",),
    ("ops",),
    ("tune",),
    ("graph", "frontend", "nets"),
    ("baselines",),
    ("cli",),
)
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}


def _imports(path: pathlib.Path) -> list[tuple[int, str]]:
    """``(line, module)`` for every import in ``path``, relative ones made absolute."""
    rel = path.relative_to(ROOT.parent).with_suffix("")
    package = list(rel.parts if path.name == "__init__.py" else rel.parts[:-1])
    if path.name == "__init__.py":
        package = package[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            if node.module:
                out.append((node.lineno, mod))
            else:
                out += [(node.lineno, f"{mod}.{a.name}") for a in node.names]
    return out


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "<root>"


def test_every_unit_has_a_layer():
    units = {
        p.stem if p.is_file() else p.name
        for p in ROOT.iterdir()
        if (p.suffix == ".py" and p.name not in ("__init__.py",)) or (p / "__init__.py").exists()
    }
    assert units <= set(RANK), f"add {sorted(units - set(RANK))} to DESIGN.md's layer table"


def test_imports_point_up_the_layer_table():
    wrong = []
    for path in sorted(ROOT.rglob("*.py")):
        if path == ROOT / "__init__.py":
            continue
        me = _unit(".".join(path.relative_to(ROOT.parent).with_suffix("").parts))
        for line, module in _imports(path):
            if module == "tensorsched":
                wrong.append(f"{path}:{line} imports the package root")
            elif module.startswith("tensorsched.") and RANK[_unit(module)] > RANK[me]:
                wrong.append(f"{path}:{line}: {me} imports {module}, a layer below it")
    assert not wrong, "\n".join(wrong)
