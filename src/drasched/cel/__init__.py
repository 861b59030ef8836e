"""The DRA CEL environment: compile a device selector once, evaluate it against many devices.

Expressions are parsed with lark (grammar from cel-python), type-checked against the
declarations upstream's k8s.io/dynamic-resource-allocation/cel enables, and turned into a
Python function, so evaluation runs at the speed of hand-written code.
"""

from drasched.cel.compiler import MAX_EXPRESSION_LENGTH, CompiledSelector, compile_selector
from drasched.cel.device import DeviceView, device_view_from_slice_device
from drasched.cel.errors import CELCompileError, CELError, CELRuntimeError
from drasched.cel.semver import Semver

__all__ = [
    "MAX_EXPRESSION_LENGTH",
    "CELCompileError",
    "CELError",
    "CELRuntimeError",
    "CompiledSelector",
    "DeviceView",
    "Semver",
    "compile_selector",
    "device_view_from_slice_device",
]
