"""The one operator table: precedence (higher binds tighter) and spelling of each binary operator.

The IR printer and the C-family code generators read it, so a parenthesis is added in exactly
the places where precedence requires one; the IR grammar and the tensor-expression grammar are
generated from it (``parser.binary_rules``), so the parsers read the text as it was printed.
"""

BINARY = {
    # op: (precedence, IR spelling)
    "||": (2, "||"),
    "&&": (3, "&&"),
    "==": (6, "=="),
    "!=": (6, "!="),
    "<": (7, "<"),
    "<=": (7, "<="),
    ">": (7, ">"),
    ">=": (7, ">="),
    "+": (9, "+"),
    "-": (9, "-"),
    "*": (10, "*"),
    "/": (10, "/"),
    "//": (10, "//"),
    "%": (10, "%"),
}
UNARY = 12  # !x, -x
ATOM = 13  # names, constants, calls, indexing
FUNCTION_STYLE = ("min", "max")  # printed as min(a, b)


def needs_parens(child_prec: int, parent_prec: int, right_side: bool) -> bool:
    """Whether a child of precedence ``child_prec`` under ``parent_prec`` needs parentheses.

    All binary operators associate to the left, so an equal-precedence child on the right
    (``a - (b - c)``) keeps its parentheses.
    """
    return child_prec < parent_prec or (right_side and child_prec == parent_prec)
