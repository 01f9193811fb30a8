"""Before/after tests written as IR text: the exact printed lowering of small schedules, the
simplifier's rules on expressions, and the loop structure of the seed tutorial's conv kernels
at the full VGG size (56x56x256, 3x3)."""

import itertools
import re
import textwrap

import numpy as np
import pytest
import seed_conv
from hypothesis import given, settings
from hypothesis import strategies as st
from ts_check import gemm

import tensorsched as ts
from tensorsched.ir import expr as E
from tensorsched.ir.printer import print_expr
from tensorsched.ir.simplify import simplify
from tensorsched.ir.structural import structural_equal


def ir(s, args):
    return str(ts.lower(s, args))


def expect(text):
    return textwrap.dedent(text).strip("\n")


def block(text, name):
    """The ``produce name { ... }`` block of ``text`` (matching braces), dedented."""
    start = text.index(f"produce {name} {{")
    depth = 0
    for k in range(start, len(text)):
        if text[k] == "{":
            depth += 1
        elif text[k] == "}":
            depth -= 1
            if depth == 0:
                line_start = text.rfind("\n", 0, start) + 1
                return textwrap.dedent(text[line_start : k + 1])
    raise AssertionError(f"unbalanced produce {name}")  # pragma: no cover


# ---------------------------------------------------------------- small schedules, exact text


def test_gemm_4x4x4_default_schedule():
    A, B, C = gemm(4, 4, 4)
    s = ts.create_schedule(C.op)
    assert ir(s, [A, B, C]) == expect("""
        produce C {
          for (i, 0, 4) {
            for (j, 0, 4) {
              C[i*4 + j] = 0f
              for (k, 0, 4) {
                C[i*4 + j] = C[i*4 + j] + A[i*4 + k]*B[k*4 + j]
              }
            }
          }
        }
    """)


def test_split_with_guard():
    X = ts.placeholder((10,), name="X")
    Y = ts.compute((10,), lambda i: X[i] + 1.0, name="Y")
    s = ts.create_schedule(Y.op)
    s[Y].split(Y.op.axis[0], factor=4)
    assert ir(s, [X, Y]) == expect("""
        produce Y {
          for (i.outer, 0, 3) {
            for (i.inner, 0, 4) {
              if (i.outer*4 + i.inner < 10) {
                Y[i.outer*4 + i.inner] = X[i.outer*4 + i.inner] + 1f
              }
            }
          }
        }
    """)


def test_split_that_divides_has_no_guard():
    X = ts.placeholder((12,), name="X")
    Y = ts.compute((12,), lambda i: X[i] + 1.0, name="Y")
    s = ts.create_schedule(Y.op)
    s[Y].split(Y.op.axis[0], nparts=3)
    assert ir(s, [X, Y]) == expect("""
        produce Y {
          for (i.outer, 0, 3) {
            for (i.inner, 0, 4) {
              Y[i.outer*4 + i.inner] = X[i.outer*4 + i.inner] + 1f
            }
          }
        }
    """)


def test_fused_loop():
    X = ts.placeholder((3, 4), name="X")
    Y = ts.compute((3, 4), lambda i, j: X[i, j] * 2.0, name="Y")
    s = ts.create_schedule(Y.op)
    s[Y].fuse(*s[Y].op.axis)
    # (f//4)*4 + f%4 folds back into f
    assert ir(s, [X, Y]) == expect("""
        produce Y {
          for (i.j.fused, 0, 12) {
            Y[i.j.fused] = X[i.j.fused]*2f
          }
        }
    """)


def test_fused_loop_transposed_read_keeps_div_and_mod():
    X = ts.placeholder((4, 3), name="X")
    Y = ts.compute((3, 4), lambda i, j: X[j, i], name="Y")
    s = ts.create_schedule(Y.op)
    s[Y].fuse(*s[Y].op.axis)
    assert ir(s, [X, Y]) == expect("""
        produce Y {
          for (i.j.fused, 0, 12) {
            Y[i.j.fused] = X[i.j.fused%4*3 + i.j.fused//4]
          }
        }
    """)


def _chain():
    X = ts.placeholder((3, 4), name="X")
    Y = ts.compute((3, 4), lambda i, j: X[i, j] * 2.0, name="Y")
    Z = ts.compute((4, 3), lambda i, j: Y[j, i] + 1.0, name="Z")
    return X, Y, Z


def test_two_stages_at_root():
    X, Y, Z = _chain()
    s = ts.create_schedule(Z.op)
    assert ir(s, [X, Z]) == expect("""
        allocate Y[float32 * 3 * 4], global
        produce Y {
          for (i, 0, 3) {
            for (j, 0, 4) {
              Y[i*4 + j] = X[i*4 + j]*2f
            }
          }
        }
        produce Z {
          for (i, 0, 4) {
            for (j, 0, 3) {
              Z[i*3 + j] = Y[j*4 + i] + 1f
            }
          }
        }
    """)


def test_compute_inline():
    X, Y, Z = _chain()
    s = ts.create_schedule(Z.op)
    s[Y].compute_inline()
    assert ir(s, [X, Z]) == expect("""
        produce Z {
          for (i, 0, 4) {
            for (j, 0, 3) {
              Z[i*3 + j] = X[j*4 + i]*2f + 1f
            }
          }
        }
    """)


def test_compute_at_renames_a_shadowing_loop_variable():
    X, Y, Z = _chain()
    s = ts.create_schedule(Z.op)
    s[Y].compute_at(s[Z], s[Z].op.axis[0])
    assert ts.lower(s, [X, Z], name="f").script() == expect("""
        func f(X: float32[3, 4], Z: float32[4, 3]) {
          produce Z {
            for (i, 0, 4) {
              allocate Y[float32 * 3 * 1], global
              produce Y {
                for (i_1, 0, 3) {
                  Y[i_1] = X[i_1*4 + i]*2f
                }
              }
              for (j, 0, 3) {
                Z[i*3 + j] = Y[j] + 1f
              }
            }
          }
        }
    """)


def test_a_double_buffered_stage_printed_twice_renames_its_loops_inside_a_namesake():
    """Double buffering prints a stage's loops twice (the prologue, then in the consumer's
    loop) with the same variables. Inside a consumer's loop named like one of them, the
    second printing takes a suffix, so that the slot index ``(ax1.inner + 1)%2`` still
    names the consumer's loop (found by the schedule fuzzer: the text once bound it to the
    stage's own loop)."""
    A, B = ts.placeholder((1, 1), name="A"), ts.placeholder((1, 3), name="B")
    k = ts.reduce_axis((0, 1), name="k")
    C = ts.compute((1, 3), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = ts.create_schedule(C.op)
    _, _, ii, ji = s[C].tile(*s[C].op.axis, x_factor=2, y_factor=3)
    s[C].bind(ii, ts.thread_axis("threadIdx.y"))
    s[C].bind(ji, ts.thread_axis("threadIdx.x"))
    BS = s.cache_read(B, "shared", [C])
    s[BS].tile(*s[BS].op.axis, x_factor=1, y_factor=2)  # its loops: ax1.outer, ax1.inner
    BSS = s.cache_read(BS, "shared", [C])
    s[BSS].compute_at(s[C], s[C].op.reduce_axis[0])
    ax0o, _ = s[BSS].split(BSS.op.axis[0], nparts=3)
    ax1o, ax1i = s[BSS].split(BSS.op.axis[1], nparts=2)  # a loop named ax1.inner too
    s[BSS].reorder(ax0o, ax1o)
    s[BSS].bind(ax0o, ts.thread_axis("threadIdx.x"))
    s[BSS].bind(ax1o, ts.thread_axis("threadIdx.y"))
    s[BS].double_buffer("shared")
    s[BS].compute_at(s[BSS], ax1i)
    func = ts.lower(s, [A, B, C], name="f")
    text = func.script()
    assert "for (ax1.inner_1, 0, 2)" in text
    assert "B.shared[(ax1.inner + 1)%2*3 + ax1.outer*2 + ax1.inner_1]" in text
    assert structural_equal(ts.parse_ir(text), func)


def test_bind_prints_thread_extents():
    X = ts.placeholder((10,), name="X")
    Y = ts.compute((10,), lambda i: X[i] * X[i], name="Y")
    s = ts.create_schedule(Y.op)
    bo, to = s[Y].split(Y.op.axis[0], 4)
    s[Y].bind(bo, ts.thread_axis("blockIdx.x"))
    s[Y].bind(to, ts.thread_axis("threadIdx.x"))
    assert ir(s, [X, Y]) == expect("""
        produce Y {
          // attr [blockIdx.x] thread_extent = 3
          // attr [threadIdx.x] thread_extent = 4
          if (blockIdx.x*4 + threadIdx.x < 10) {
            Y[blockIdx.x*4 + threadIdx.x] = X[blockIdx.x*4 + threadIdx.x]*X[blockIdx.x*4 + threadIdx.x]
          }
        }
    """)


def test_loop_kinds_and_pragma():
    X = ts.placeholder((4, 4, 4), name="X")
    Y = ts.compute((4, 4, 4), lambda i, j, k: X[i, j, k] + 1.0, name="Y")
    s = ts.create_schedule(Y.op)
    i, j, k = s[Y].op.axis
    s[Y].parallel(i)
    s[Y].unroll(j)
    s[Y].vectorize(k)
    s[Y].pragma(j, "unroll_explicit", 0)
    assert ir(s, [X, Y]) == expect("""
        produce Y {
          parallel (i, 0, 4) {
            // pragma unroll_explicit = 0
            unrolled (j, 0, 4) {
              vectorized (k, 0, 4) {
                Y[i*16 + j*4 + k] = X[i*16 + j*4 + k] + 1f
              }
            }
          }
        }
    """)


def test_reduction_split_and_reordered_outermost():
    A, B, C = gemm(4, 4, 6)
    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    ko, ki = s[C].split(k, 4)
    s[C].reorder(ko, i, j, ki)
    assert ir(s, [A, B, C]) == expect("""
        produce C {
          for (i.init, 0, 4) {
            for (j.init, 0, 4) {
              C[i.init*4 + j.init] = 0f
            }
          }
          for (k.outer, 0, 2) {
            for (i, 0, 4) {
              for (j, 0, 4) {
                for (k.inner, 0, 4) {
                  if (k.outer*4 + k.inner < 6) {
                    C[i*4 + j] = C[i*4 + j] + A[i*6 + k.outer*4 + k.inner]*B[k.outer*16 + k.inner*4 + j]
                  }
                }
              }
            }
          }
        }
    """)


def test_lowering_is_deterministic():
    A, B, C = gemm(5, 3, 7)
    s = ts.create_schedule(C.op)
    i, j = s[C].op.axis
    s[C].tile(i, j, 2, 2)
    assert ir(s, [A, B, C]) == ir(s, [A, B, C])


# ---------------------------------------------------------------- the simplifier

x, y, z = E.Var("x"), E.Var("y"), E.Var("z")
RANGES = {x: (0, 15), y: (0, 3)}


@pytest.mark.parametrize(
    "expr,plain,ranged",
    [
        ((x * 4 + y) // 4, "x + y//4", "x"),
        ((x * 4 + y) % 4, "y%4", "y"),
        ((x * 4 + y + 4) // 4, "x + y//4 + 1", "x + 1"),
        ((y + x * 4) // 4, "x + y//4", "x"),
        (x // 2 // 3, "x//6", "x//6"),
        (x % 8 % 4, "x%4", "x%4"),
        (x // 4 * 4 + x % 4, "x", "x"),
        # a flat index taken apart and put back (a fused axis of three)
        (x // 12 * 12 + x % 12 // 4 * 4 + x % 4, "x", "x"),
        (x // 12 * 24 + x % 12 // 4 * 8 + x % 4 * 2, "x*2", "x*2"),
        ((x * 4 - 1) // 4, "x - 1", "x - 1"),
        ((x * 4 - 1) % 4, "3", "3"),
        ((x - 3) // 2, "(x + 1)//2 - 2", "(x + 1)//2 - 2"),
        (y // 4, "y//4", "0"),
        (y % 4, "y%4", "y"),
        (ts.min(x, x + 1), "x", "x"),
        (ts.max(y, 3), "max(y, 3)", "3"),
        (x * 2 + y - x * 2, "y", "y"),
    ],
)
def test_simplify_rules(expr, plain, ranged):
    assert print_expr(simplify(expr)) == plain
    assert print_expr(simplify(expr, RANGES)) == ranged


def test_simplify_x_times_4_plus_y_floordiv_4_is_x():
    out = simplify((x * 4 + y) // 4, {x: (0, 100), y: (0, 3)})
    assert out is x  # the very variable, not a copy
    # without knowing that y < 4 the rule must not fire
    assert simplify((x * 4 + y) // 4, {x: (0, 100), y: (0, 4)}) is not x


def test_simplify_decides_comparisons_from_ranges():
    assert simplify(x < 16, RANGES) == E.TRUE
    assert simplify(x >= 0, RANGES) == E.TRUE
    assert simplify(x * 4 + y < 64, RANGES) == E.TRUE
    assert simplify(x > 15, RANGES) == E.FALSE
    assert print_expr(simplify(x * 4 + y < 63, RANGES)) == "x*4 + y < 63"
    assert print_expr(simplify(ts.all(x < 16, y < 3, x < 16), RANGES)) == "y < 3"


def _evaluate(e, env):
    if isinstance(e, E.IntImm):
        return e.value
    if isinstance(e, E.Var):
        return env[e]
    a, b = _evaluate(e.a, env), _evaluate(e.b, env)
    return {
        "+": lambda: a + b,
        "-": lambda: a - b,
        "*": lambda: a * b,
        "//": lambda: a // b,
        "%": lambda: a % b,
        "min": lambda: min(a, b),
        "max": lambda: max(a, b),
    }[e.op]()


def _int_exprs():
    leaf = st.one_of(st.sampled_from([x, y, z]), st.integers(-9, 9).map(E.IntImm))

    def grow(children):
        return st.one_of(
            st.builds(E.BinOp, st.sampled_from(["+", "-", "*", "min", "max"]), children, children),
            st.builds(
                E.BinOp,
                st.sampled_from(["//", "%"]),
                children,
                st.sampled_from([-4, -3, 2, 3, 4, 8]).map(E.IntImm),
            ),
            st.builds(
                E.BinOp,
                st.sampled_from(["//", "%"]),
                children,
                st.sampled_from([x, y, z]).map(lambda v: E.BinOp("+", v, E.IntImm(1))),
            ),
        )

    return st.recursive(leaf, grow, max_leaves=8)


@settings(max_examples=150, deadline=None)
@given(
    e=_int_exprs(),
    lows=st.tuples(*[st.integers(0, 5)] * 3),
    widths=st.tuples(*[st.integers(0, 5)] * 3),
    use_ranges=st.booleans(),
)
def test_simplify_keeps_the_value(e, lows, widths, use_ranges):
    """Floor division and modulo rules are exact for every value in the ranges (negative
    operands and divisors included)."""
    ranges = {v: (lo, lo + w) for v, lo, w in zip((x, y, z), lows, widths)}
    out = simplify(e, ranges if use_ranges else None)
    for vals in itertools.product(*[range(lo, hi + 1) for lo, hi in ranges.values()]):
        env = dict(zip((x, y, z), vals))
        assert _evaluate(out, env) == _evaluate(e, env), (print_expr(e), print_expr(out), env)


# ---------------------------------------------------------------- the seed tutorial at full size


@pytest.fixture(scope="module")
def vgg_conv():
    return seed_conv.declare()  # 1x256x56x56, 256 filters of 3x3, VC=VW=4


def loop_lines(text):
    """The attr / loop header lines of ``text``, stripped, in order."""
    return [
        ln.strip()
        for ln in text.splitlines()
        if re.match(r"\s*(// attr|for|unrolled|vectorized|parallel) ", ln)
    ]


def test_seed_conv_unscheduled(vgg_conv):
    t = vgg_conv
    s = ts.create_schedule(t[-1].op)
    conv = block(ir(s, [t[0], t[1], t[-1]]), "conv")
    assert conv.startswith(
        "produce conv {\n  for (co, 0, 64) {\n    for (h, 0, 56) {\n      for (w, 0, 14) {\n"
    )
    assert loop_lines(conv) == [
        "for (co, 0, 64) {",
        "for (h, 0, 56) {",
        "for (w, 0, 14) {",
        "for (vw, 0, 4) {",
        "for (vc, 0, 4) {",
        "for (ci, 0, 256) {",
        "for (kh, 0, 3) {",
        "for (kw, 0, 3) {",
    ]


def test_seed_conv_reordered_matches_the_tutorial_text(vgg_conv):
    """The tutorial prints conv after ``reorder(_, c, h, w, vh, kc, kh, kw, vw, vc)``; the
    index expressions are the tutorial's, flattened."""
    t = vgg_conv
    conv = t[5]
    s = ts.create_schedule(t[-1].op)
    _, c, h, w, vh, vw, vc = s[conv].op.axis
    kc, kh, kw = s[conv].op.reduce_axis
    s[conv].reorder(_, c, h, w, vh, kc, kh, kw, vw, vc)
    out = "conv[co*12544 + h*224 + w*16 + vw*4 + vc]"
    assert block(ir(s, [t[0], t[1], t[-1]]), "conv") == expect(f"""
        produce conv {{
          for (co, 0, 64) {{
            for (h, 0, 56) {{
              for (w, 0, 14) {{
                for (vw.init, 0, 4) {{
                  for (vc.init, 0, 4) {{
                    conv[co*12544 + h*224 + w*16 + vw.init*4 + vc.init] = 0f
                  }}
                }}
                for (ci, 0, 256) {{
                  for (kh, 0, 3) {{
                    for (kw, 0, 3) {{
                      for (vw, 0, 4) {{
                        for (vc, 0, 4) {{
                          {out} = {out} + data_vec[h*64512 + w*4608 + ci*18 + kh*6 + vw + kw]*kernel_vec[co*9216 + ci*36 + kh*12 + kw*4 + vc]
                        }}
                      }}
                    }}
                  }}
                }}
              }}
            }}
          }}
        }}
    """)


THREADS = [
    "// attr [blockIdx.z] thread_extent = 8",
    "// attr [threadIdx.z] thread_extent = 8",
    "// attr [blockIdx.y] thread_extent = 56",
    "// attr [threadIdx.y] thread_extent = 1",
    "// attr [blockIdx.x] thread_extent = 14",
    "// attr [threadIdx.x] thread_extent = 1",
]


@pytest.mark.parametrize(
    "kernel_no,inner_kind,vc_kind",
    [
        (1, "for", "for"),  # kernel 1: bind only
        (2, "unrolled", "unrolled"),  # kernel 2: + unroll kh, kw, vw, vc
        (3, "unrolled", "vectorized"),  # kernel 3: + vectorize vc
    ],
)
def test_seed_conv_kernels_loop_structure(vgg_conv, kernel_no, inner_kind, vc_kind):
    t = vgg_conv
    s = seed_conv.schedule(t, kernel_no)
    text = ir(s, [t[0], t[1], t[-1]])
    conv = block(text, "conv")
    k = inner_kind
    assert loop_lines(conv) == THREADS + [
        f"{k} (vw.init, 0, 4) {{",
        f"{vc_kind} (vc.init, 0, 4) {{",
        "for (ci, 0, 256) {",
        f"{k} (kh, 0, 3) {{",
        f"{k} (kw, 0, 3) {{",
        f"{k} (vw, 0, 4) {{",
        f"{vc_kind} (vc, 0, 4) {{",
    ]
    # the update reads the packed data and kernel through the bound indices
    assert (
        "conv[blockIdx.z*100352 + threadIdx.z*12544 + blockIdx.y*224 + blockIdx.x*16 + "
        "vw*4 + vc] = conv["
    ) in conv
    # data_pad is inlined: no stage of its own, its border test moved into data_vec
    assert "produce data_pad" not in text
    data_vec = block(text, "data_vec")
    assert "data_pad" not in data_vec and "select(" in data_vec
    # the unpacking stage runs one work-item per output element
    assert loop_lines(block(text, "output_unpack")) == [
        "// attr [blockIdx.z] thread_extent = 32",
        "// attr [threadIdx.z] thread_extent = 8",
        "// attr [blockIdx.y] thread_extent = 56",
        "// attr [threadIdx.y] thread_extent = 1",
        "// attr [blockIdx.x] thread_extent = 56",
        "// attr [threadIdx.x] thread_extent = 1",
    ]


def test_seed_conv_kernels_differ_only_in_loop_kinds(vgg_conv):
    t = vgg_conv
    texts = [ir(seed_conv.schedule(t, n), [t[0], t[1], t[-1]]) for n in (1, 2, 3)]
    plain = [re.sub(r"\b(unrolled|vectorized) \(", "for (", x) for x in texts]
    assert plain[0] == plain[1] == plain[2]


# ---------------------------------------------------------------- the pipeline


def _tiled_gemm_with_tiles(double_buffer=None):
    """A GEMM whose A tile is a work-group tile filled per K step (``double_buffer`` marks it)."""
    A, B, C = gemm(32, 32, 32)
    s = ts.create_schedule(C.op)
    AA = s.cache_read(A, "shared", [C])
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    io, ii = s[C].split(i, 8)
    jo, ji = s[C].split(j, 8)
    ko, ki = s[C].split(k, 8)
    s[C].reorder(io, jo, ii, ji, ko, ki)
    s[C].bind(io, ts.thread_axis("blockIdx.y"))
    s[C].bind(jo, ts.thread_axis("blockIdx.x"))
    s[C].bind(ii, ts.thread_axis("threadIdx.y"))
    s[C].bind(ji, ts.thread_axis("threadIdx.x"))
    s[AA].compute_at(s[C], ko)
    ai, ak = s[AA].op.axis
    s[AA].bind(ai, ts.thread_axis("threadIdx.y"))
    s[AA].bind(ak, ts.thread_axis("threadIdx.x"))
    if double_buffer:
        s[AA].double_buffer(double_buffer)
    return s, [A, B, C]


def test_pipeline_is_one_list_of_named_passes_in_two_phases():
    from tensorsched.passes import LOWER, PIPELINE, PREPARE, passes_of

    names = [p.name for p in PIPELINE]
    assert len(set(names)) == len(names)
    assert [p.phase for p in PIPELINE] == sorted(
        (p.phase for p in PIPELINE), key=[LOWER, PREPARE].index
    )
    assert names.index("insert_barriers") < names.index("double_buffer")
    assert passes_of(LOWER) + passes_of(PREPARE) == PIPELINE


def test_double_buffer_marks_travel_in_the_ir():
    from tensorsched.ir import stmt as S
    from tensorsched.ir.visitor import Visitor
    from tensorsched.schedules.schedule_ops import schedule_to_stmt

    def marks(stmt):
        found = []

        class _V(Visitor):
            def visit_AttrStmt(self, a):
                found.append((a.key, a.buffer.name, a.value))
                self.generic_visit(a)

        _V().visit(stmt)
        return found

    s, args = _tiled_gemm_with_tiles("shared")
    stmt, _ = schedule_to_stmt(s, args)
    assert marks(stmt) == [(S.DOUBLE_BUFFER_SCOPE, "A.shared", "shared")]
    assert "// attr [A.shared] double_buffer_scope = 'shared'" in str(S.LoweredFunc("f", (), stmt))
    func = ts.lower(s, args)
    assert marks(func.body) == []  # the double_buffer pass consumes every mark
    assert "allocate A.shared[float32 * 2 * 8 * 8], shared" in str(func)
    assert marks(schedule_to_stmt(*_tiled_gemm_with_tiles())[0]) == []


def test_debug_ir_prints_only_passes_that_changed_something(monkeypatch, capsys):
    from tensorsched.codegen.opencl import emit_opencl
    from tensorsched.config import config

    monkeypatch.setattr(config, "debug_ir", True)
    s, args = _tiled_gemm_with_tiles()
    emit_opencl(ts.lower(s, args))
    printed = re.findall(r"// after (\w+) \(", capsys.readouterr().out)
    assert "insert_barriers" in printed
    for unchanged in ("simplify_again", "hoist_guards", "double_buffer", "unroll_loops"):
        assert unchanged not in printed


def test_simplify_and_insert_barriers_keep_unchanged_nodes():
    from tensorsched.passes import insert_barriers, simplify_stmt

    s, args = _tiled_gemm_with_tiles()
    body = ts.lower(s, args).body
    assert simplify_stmt(body) is body
    assert insert_barriers(body) is not body  # barriers are added again (not idempotent)
    once = insert_barriers(simplify_stmt(body))
    assert simplify_stmt(once) is once


def test_a_padded_copy_row_is_partitioned_at_its_borders():
    """partition_loops: the row loop of a padded copy, whose body tests its index against the
    padding, becomes a store of zero, a loop without the column test, and a store of zero."""
    A = ts.placeholder((4, 6, 10), name="A")
    P = ts.compute(
        (4, 8, 12),
        lambda c, h, w: ts.if_then_else(
            ts.all(h >= 1, h < 7, w >= 1, w < 11), A[c, h - 1, w - 1], 0.0
        ),
        name="P",
    )
    s = ts.create_schedule(P.op)
    c, h, w = s[P].op.axis
    s[P].bind(s[P].fuse(c, h), ts.thread_axis("blockIdx.x"))
    text = str(ts.lower(s, [A, P]))
    loops = re.findall(r"for \(w, 0, (\d+)\)", text)
    assert loops == ["10"], text
    assert "w >= 1" not in text and "w < 11" not in text, text
    assert text.count("= 0f") == 2, text  # the first and last column of a row
    A_np = np.random.default_rng(0).standard_normal((4, 6, 10)).astype(np.float32)
    out = np.full((4, 8, 12), np.nan, np.float32)
    ts.build(s, [A, P], target="python")(A_np, out)
    np.testing.assert_array_equal(out, np.pad(A_np, ((0, 0), (1, 1), (1, 1))))
