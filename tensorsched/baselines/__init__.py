"""ACL-style hand-written OpenCL GEMM baseline and its tuner (see ``acl_gemm``, ``acl_tuner``)."""

from .acl_gemm import AclConv2d, AclGemm, conv2d_gemm_shape
from .configs import (
    STRATEGIES,
    AclConfigError,
    GEMMConfig,
    check_fits,
    load_config_list,
    load_gemm_params,
)

__all__ = [
    "AclConv2d",
    "AclGemm",
    "conv2d_gemm_shape",
    "STRATEGIES",
    "AclConfigError",
    "GEMMConfig",
    "check_fits",
    "load_config_list",
    "load_gemm_params",
]
