"""The .pyi stubs cover every public name of the native module, and the
Python modules export what their __all__ lists."""

import ast
import pathlib

import llmpack
import llmpack._llmpack as native
import llmpack.chat
import llmpack.runner
import llmpack.runtime

STUB = pathlib.Path(__file__).resolve().parents[1] / "llmpack" / "_llmpack.pyi"


def stub_names():
    tree = ast.parse(STUB.read_text())
    names = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            members = set()
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AnnAssign)):
                    members.add(item.name if isinstance(item, ast.FunctionDef) else item.target.id)
            names[node.name] = members
        elif isinstance(node, ast.FunctionDef):
            names[node.name] = set()
    return names


def public(obj):
    return {n for n in dir(obj) if not n.startswith("__")} - {"_pybind11_conduit_v1_"}


def test_every_native_name_has_a_stub():
    stubs = stub_names()
    module_names = {n for n in public(native) if not n.startswith("__")}
    assert module_names <= set(stubs), module_names - set(stubs)
    for name, members in stubs.items():
        obj = getattr(native, name)
        if isinstance(obj, type) and not issubclass(obj, Exception):
            assert public(obj) <= members, (name, public(obj) - members)
            assert members <= public(obj) | {"__init__", "__copy__", "__deepcopy__"}, (name, members - public(obj))


def test_module_exports():
    for module in (llmpack, llmpack.runtime, llmpack.runner, llmpack.chat):
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"
