"""ACL-style GEMM configurations (GEMMConfig), GEMM shapes (GEMMParam) and their legality.

A ``GEMMConfig`` holds the knobs of one of three strategies, in the column orders of the CSV
search lists (the orders of ACL's GEMM tuner):

- ``native``: ``m0,n0,k0``
- ``reshaped_rhs_only``: ``m0,n0,k0,h0,interleave_rhs,transpose_rhs,export_to_cl_image_rhs``
- ``reshaped``: ``m0,n0,k0,v0,h0,interleave_lhs,interleave_rhs,transpose_rhs,
  export_to_cl_image_rhs``

Legality is checked in two steps, both before anything is built: ``GEMMConfig(...)`` checks what
does not depend on the shape (block widths that an OpenCL vector type has, flags that are 0 or 1),
``check_fits(config, M, N, K, batch, device)`` what does (an exported RHS image within the
device's image2d limits, buffers within its largest allocation).

The reshaped layouts are described by ``BlockLayout``: the matrix is cut into blocks (N0 x K0 for
the RHS, M0 x K0 for the LHS, zero-padded past the edges); ``group`` blocks (H0 or V0) that are
neighbours along N (or M) share one row of the reshaped matrix, one after the other for every
K-block; inside a block the values are ``nvec`` vectors of ``vlen`` floats, and with
``interleave`` the vectors of the group's blocks alternate (vector 0 of every block, then vector 1
of every block, ...).
"""

from __future__ import annotations

import csv
import math
import numbers
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from importlib import resources
from typing import Any, NoReturn

from ..errors import TensorschedError
from ..runtime.device import Device

STRATEGIES = ("native", "reshaped_rhs_only", "reshaped")
ALIASES = {"reshaped_only_rhs": "reshaped_rhs_only", "rhs_only": "reshaped_rhs_only"}
COLUMNS = {
    "native": ("m0", "n0", "k0"),
    "reshaped_rhs_only": (
        "m0",
        "n0",
        "k0",
        "h0",
        "interleave_rhs",
        "transpose_rhs",
        "export_to_cl_image_rhs",
    ),
    "reshaped": (
        "m0",
        "n0",
        "k0",
        "v0",
        "h0",
        "interleave_lhs",
        "interleave_rhs",
        "transpose_rhs",
        "export_to_cl_image_rhs",
    ),
}
VECTOR_WIDTHS = (1, 2, 3, 4, 8, 16)  # float, float2, float3, float4, float8, float16
IMAGE_VECTOR_WIDTHS = (4, 8, 16)  # whole RGBA float texels


class AclConfigError(TensorschedError):
    """A GEMMConfig that the ACL-style kernels cannot run (on this shape or device)."""


def strategy_name(strategy: str) -> str:
    """The canonical strategy name (``reshaped_only_rhs`` is accepted for ``reshaped_rhs_only``)."""
    name = ALIASES.get(str(strategy).strip().lower(), str(strategy).strip().lower())
    if name not in STRATEGIES:
        raise AclConfigError(
            f"unknown GEMM strategy '{strategy}'; use one of {', '.join(STRATEGIES)}"
        )
    return name


@dataclass(frozen=True)
class GEMMConfig:
    """The knobs of one strategy. Fields a strategy does not have keep their defaults (and are
    ignored): ``native`` uses m0, n0, k0 only; ``reshaped_rhs_only`` adds h0 and the RHS flags."""

    strategy: str
    m0: int
    n0: int
    k0: int
    v0: int = 1
    h0: int = 1
    interleave_lhs: bool = False
    interleave_rhs: bool = False
    transpose_rhs: bool = False
    export_to_cl_image_rhs: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "strategy", strategy_name(self.strategy))
        for f in fields(self)[1:]:
            value = getattr(self, f.name)
            if f.type == "bool":
                if value not in (0, 1, True, False):
                    raise AclConfigError(
                        f"{self.strategy} config {self.label}: {f.name} must be "
                        f"0 or 1, got {value!r}"
                    )
                object.__setattr__(self, f.name, bool(value))
            elif not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
                raise AclConfigError(
                    f"{self.strategy} config: {f.name} must be a positive integer, got {value!r}"
                )
            else:
                object.__setattr__(self, f.name, int(value))
        self._check()

    @classmethod
    def from_row(cls, strategy: str, row: Sequence[str | int]) -> GEMMConfig:
        """A config from one CSV row (strings or numbers) in the strategy's column order."""
        strategy = strategy_name(strategy)
        cols = COLUMNS[strategy]
        values = [str(v).strip() for v in row]
        if len(values) != len(cols):
            raise AclConfigError(
                f"a {strategy} config has {len(cols)} values "
                f"({','.join(cols)}), got {len(values)}: {','.join(values)}"
            )
        try:
            ints = [int(v) for v in values]
        except ValueError:
            raise AclConfigError(
                f"a {strategy} config must be integers ({','.join(cols)}), got {','.join(values)}"
            ) from None
        fields_: dict[str, Any] = dict(zip(cols, ints))  # flags as 0/1, made bool after
        return cls(strategy, **fields_)

    @classmethod
    def parse(cls, strategy: str, text: str) -> GEMMConfig:
        """A config from its CSV text, e.g. ``GEMMConfig.parse("native", "4,8,4")``."""
        return cls.from_row(strategy, str(text).split(","))

    def row(self) -> tuple[int, ...]:
        """The values in the strategy's CSV column order (flags as 0/1)."""
        return tuple(int(getattr(self, c)) for c in COLUMNS[self.strategy])

    @property
    def label(self) -> str:
        """The CSV text of the config, e.g. ``"4,8,4"``."""
        return ",".join(str(int(getattr(self, c))) for c in COLUMNS.get(self.strategy, ()))

    @property
    def lhs_transposed(self) -> bool:
        """The reshaped strategy stores LHS blocks transposed (K0 vectors of M0) exactly when
        the RHS blocks are not transposed (K0 vectors of N0): the kernel then accumulates outer
        products; otherwise both are rows of K0 and it accumulates dot products."""
        return self.strategy == "reshaped" and not self.transpose_rhs

    def _fail(self, message: str) -> NoReturn:
        raise AclConfigError(f"{self.strategy} config {self.label}: {message}")

    def _check(self) -> None:
        if self.m0 > 8:
            self._fail(f"m0={self.m0}: a work-item keeps m0 rows of C in registers; use 1..8")
        if self.n0 not in VECTOR_WIDTHS:
            self._fail(
                f"n0={self.n0}: no OpenCL vector type has {self.n0} floats; use one of "
                f"{', '.join(map(str, VECTOR_WIDTHS))}"
            )
        if self.k0 not in VECTOR_WIDTHS:
            self._fail(
                f"k0={self.k0}: no OpenCL vector type has {self.k0} floats; use one of "
                f"{', '.join(map(str, VECTOR_WIDTHS))}"
            )
        if self.lhs_transposed and self.m0 not in VECTOR_WIDTHS:
            self._fail(
                f"m0={self.m0}: with transpose_rhs=0 the LHS blocks are stored "
                f"transposed, as vectors of m0 floats; use m0 in 1, 2, 3, 4 or 8"
            )
        if self.strategy != "native" and self.h0 > 256:
            self._fail(f"h0={self.h0}: more than 256 blocks per reshaped row")
        if self.strategy == "reshaped" and self.v0 > 256:
            self._fail(f"v0={self.v0}: more than 256 blocks per reshaped row")
        if self.export_to_cl_image_rhs:
            width, name = (self.k0, "k0") if self.transpose_rhs else (self.n0, "n0")
            if width not in IMAGE_VECTOR_WIDTHS:
                self._fail(
                    f"export_to_cl_image_rhs=1 reads the RHS blocks as whole RGBA float "
                    f"texels, so {name} (the width of a "
                    f"{'transposed' if self.transpose_rhs else 'non-transposed'} RHS "
                    f"block row) must be 4, 8 or 16, got {width}"
                )


@dataclass(frozen=True)
class BlockLayout:
    """Where the blocks of a reshaped matrix lie (see the module docstring). Sizes in floats."""

    blocks: int  # blocks along N (RHS) or M (LHS)
    kblocks: int  # blocks along K
    group: int  # H0 or V0: blocks sharing one reshaped row
    nvec: int  # vectors per block
    vlen: int  # floats per vector
    interleave: bool

    @property
    def block_size(self) -> int:
        return self.nvec * self.vlen

    @property
    def rows(self) -> int:
        """Rows of the reshaped matrix (per batch)."""
        return math.ceil(self.blocks / self.group)

    @property
    def row_stride(self) -> int:
        return self.kblocks * self.group * self.block_size

    @property
    def size(self) -> int:
        return self.rows * self.row_stride

    @property
    def kblock_step(self) -> int:
        """From one K-block of a block to the next."""
        return self.group * self.block_size

    @property
    def block_offset(self) -> int:
        """From one block of a group to the next, in the same K-block."""
        return self.vlen if self.interleave else self.block_size

    @property
    def vector_stride(self) -> int:
        """From one vector of a block to the next."""
        return self.group * self.vlen if self.interleave else self.vlen

    def offset(self, block: int, kblock: int, vec: int, lane: int) -> int:
        """Position of lane ``lane`` of vector ``vec`` of block (``block``, ``kblock``)."""
        row, g = divmod(block, self.group)
        return (
            row * self.row_stride
            + kblock * self.kblock_step
            + g * self.block_offset
            + vec * self.vector_stride
            + lane
        )


def rhs_layout(cfg: GEMMConfig, N: int, K: int) -> BlockLayout:
    """The reshaped RHS: N0 x K0 blocks, K0 vectors of N0, or N0 vectors of K0 when transposed."""
    nvec, vlen = (cfg.n0, cfg.k0) if cfg.transpose_rhs else (cfg.k0, cfg.n0)
    return BlockLayout(
        math.ceil(N / cfg.n0), math.ceil(K / cfg.k0), cfg.h0, nvec, vlen, cfg.interleave_rhs
    )


def lhs_layout(cfg: GEMMConfig, M: int, K: int) -> BlockLayout:
    """The reshaped LHS: M0 x K0 blocks, M0 vectors of K0, or K0 vectors of M0 when transposed."""
    nvec, vlen = (cfg.k0, cfg.m0) if cfg.lhs_transposed else (cfg.m0, cfg.k0)
    return BlockLayout(
        math.ceil(M / cfg.m0), math.ceil(K / cfg.k0), cfg.v0, nvec, vlen, cfg.interleave_lhs
    )


def as_config(strategy: str, config: GEMMConfig | str | Sequence[str | int]) -> GEMMConfig:
    """A ``GEMMConfig`` from a config, its CSV text (``"4,8,4"``) or a sequence of values."""
    strategy = strategy_name(strategy)
    if isinstance(config, GEMMConfig):
        if config.strategy != strategy:
            raise AclConfigError(
                f"the config {config.label} is a {config.strategy} config, not a {strategy} one"
            )
        return config
    if isinstance(config, str):
        return GEMMConfig.parse(strategy, config)
    return GEMMConfig.from_row(strategy, list(config))


def check_shape(M: int, N: int, K: int, batch: int) -> None:
    """Raise ``AclConfigError`` unless M, N, K and the batch are positive integers."""
    for name, v in (("M", M), ("N", N), ("K", K), ("batch", batch)):
        if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < 1:
            raise AclConfigError(f"GEMM {name} must be a positive integer, got {v!r}")


def check_fits(
    cfg: GEMMConfig,
    M: int,
    N: int,
    K: int,
    batch: int = 1,
    device: Device | None = None,
    broadcast_b: bool = False,
) -> None:
    """Raise ``AclConfigError`` if ``cfg`` cannot run GEMM (M, N, K, batch) on ``device``
    (``None``: check only what does not depend on a device)."""
    check_shape(M, N, K, batch)
    where = f"{cfg.strategy} config {cfg.label} on GEMM {M}x{N}x{K} batch {batch}"
    b_batch = 1 if broadcast_b else batch
    sizes = {"A": M * K * batch, "B": K * N * b_batch, "C": M * N * batch}
    if cfg.strategy != "native":
        rhs = rhs_layout(cfg, N, K)
        sizes["reshaped B"] = rhs.size * b_batch
        if cfg.export_to_cl_image_rhs:
            width, height = rhs.row_stride // 4, rhs.rows * b_batch
            if device is not None:
                dev = device.cl_device
                if not dev.image_support:
                    raise AclConfigError(
                        f"{where}: export_to_cl_image_rhs=1 needs image "
                        f"support, which '{device.name}' has not"
                    )
                if width > dev.image2d_max_width or height > dev.image2d_max_height:
                    raise AclConfigError(
                        f"{where}: the reshaped RHS image would be {width}x{height} texels but "
                        f"'{device.name}' allows at most {dev.image2d_max_width}x"
                        f"{dev.image2d_max_height} (image2d_max_width x height); use a smaller "
                        f"h0, or export_to_cl_image_rhs=0"
                    )
    if cfg.strategy == "reshaped":
        sizes["reshaped A"] = lhs_layout(cfg, M, K).size * batch
    for name, n in sizes.items():
        if n >= 2**31:
            raise AclConfigError(
                f"{where}: {name} has {n} elements; the kernels index with "
                "32-bit integers, so at most 2**31 - 1"
            )
    if device is not None:
        limit = device.cl_device.max_mem_alloc_size
        for name, n in sizes.items():
            if 4 * n > limit:
                raise AclConfigError(
                    f"{where}: {name} needs {4 * n} bytes, more than the "
                    f"largest buffer of '{device.name}' ({limit} bytes)"
                )


# ---- CSV lists


def _rows(path: str | os.PathLike[str]) -> Iterator[tuple[int, list[str]]]:
    """Non-empty, non-comment rows of a headerless CSV file (a header row of names is skipped)."""
    with open(path, newline="") as f:
        for n, row in enumerate(csv.reader(f), 1):
            row = [c.strip() for c in row]
            if not row or not row[0] or row[0].startswith("#"):
                continue
            if n == 1 and not row[0].lstrip("-").isdigit():
                continue  # a header
            yield n, row


def load_config_list(strategy: str, path: str | os.PathLike[str]) -> list[GEMMConfig]:
    """The GEMMConfig search list of ``strategy`` from a CSV file (one config a line)."""
    strategy = strategy_name(strategy)
    out = []
    for n, row in _rows(path):
        try:
            out.append(GEMMConfig.from_row(strategy, row))
        except AclConfigError as exc:
            raise AclConfigError(f"{path}:{n}: {exc}") from None
    return out


def load_gemm_params(path: str | os.PathLike[str]) -> list[tuple[int, int, int, int]]:
    """The GEMMParam list ``[(M, N, K, B), ...]`` from a headerless ``M,N,K,B`` CSV file."""
    out = []
    for n, row in _rows(path):
        try:
            vals = tuple(int(v) for v in row)
        except ValueError:
            raise AclConfigError(
                f"{path}:{n}: expected M,N,K,B integers, got {','.join(row)}"
            ) from None
        if len(vals) != 4:
            raise AclConfigError(f"{path}:{n}: expected 4 values M,N,K,B, got {len(vals)}")
        check_shape(*vals)
        out.append(vals)
    return out


def default_config_path(strategy: str) -> str:
    """The default search list shipped with tensorsched for ``strategy``."""
    return str(resources.files("tensorsched.baselines") / "data" / f"{strategy_name(strategy)}.csv")
