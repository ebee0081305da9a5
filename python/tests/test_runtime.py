"""llmpack.runtime: Runtime / Program / Method / MethodMeta / TensorInfo
(CONTRACT P3, P4, P5) with executorch.runtime's names."""

import array

import pytest

from conftest import S
from llmpack import LlmpackError
from llmpack.runtime import Method, MethodMeta, Program, Runtime, ScalarType, TensorInfo, Verification

P3_METHODS = {
    "forward", "get_max_seq_len", "get_max_context_len", "enable_dynamic_shape", "use_kv_cache",
    "use_sdpa_with_kv_cache", "get_vocab_size", "get_bos_id", "get_eos_ids", "get_n_layers",
}


@pytest.fixture(scope="module")
def program(package):
    return Runtime.get().load_program(package)  # a pathlib.Path works too


def test_runtime_is_a_singleton():
    assert Runtime.get() is Runtime.get()


def test_method_names_and_constants(program):
    assert isinstance(program, Program)
    assert program.method_names >= P3_METHODS
    values = {name: program.load_method(name).execute([])[0] for name in P3_METHODS - {"forward"}}
    assert values["get_max_seq_len"] == S
    assert values["get_max_context_len"] == 512
    assert values["enable_dynamic_shape"] is True
    assert values["use_kv_cache"] is True
    assert values["get_vocab_size"] == 512
    assert values["get_bos_id"] == 1
    assert values["get_eos_ids"] == [2]
    assert values["get_n_layers"] == 5


def test_forward_meta(program):
    meta = program.metadata("forward")
    assert isinstance(meta, MethodMeta)
    assert meta.name() == "forward"
    assert meta.num_inputs() == 2 and meta.num_outputs() == 1
    tokens = meta.input_tensor_meta(0)
    assert isinstance(tokens, TensorInfo)
    assert tokens.sizes() == [1, S]
    assert tokens.dtype() == ScalarType.Long == 4
    assert tokens.is_dynamic()
    assert tokens.nbytes() == 8 * S
    assert repr(tokens) == f"TensorInfo(sizes=[1, {S}], dtype=int64, dynamic)"
    assert repr(meta.output_tensor_meta(0)) == "TensorInfo(sizes=[1, 512], dtype=float32)"
    assert meta.output_tensor_meta(0).sizes() == [1, 512]
    assert meta.output_tensor_meta(0).dtype() == ScalarType.Float
    assert program.load_method("forward").metadata.num_inputs() == 2
    with pytest.raises(IndexError):
        meta.input_tensor_meta(2)


def argmax(logits):
    row = logits.tolist()[0]
    return max(range(len(row)), key=row.__getitem__)


def test_forward_accepts_lists_and_buffers(program):
    forward = program.load_method("forward")
    tokens = [1, 403, 407]
    ref = forward.execute([tokens, 0])[0]
    assert isinstance(ref, memoryview)
    assert ref.shape == (1, 512) and ref.format == "f" and ref.readonly
    same = [
        forward.execute([[tokens], 0])[0],                              # [1, n] nested list
        forward.execute([array.array("q", tokens), [0]])[0],            # int64 buffer, [1] position
        forward.execute([memoryview(array.array("q", tokens)), 0])[0],  # memoryview
        forward.execute((array.array("i", tokens), array.array("q", [0])))[0],  # int32 works too
    ]
    for out in same:
        assert out.tolist() == ref.tolist()
    assert argmax(ref) == 261  # llama2.c's greedy id after BOS 403 407 (golden)


def test_forward_with_numpy(program):
    np = pytest.importorskip("numpy")
    forward = program.load_method("forward")
    out = forward.execute([np.array([[1, 403]], dtype=np.int64), np.array([0], dtype=np.int64)])[0]
    assert np.asarray(out).shape == (1, 512)


def test_forward_rejects_more_than_the_bound(program):
    forward = program.load_method("forward")
    with pytest.raises(LlmpackError, match=r"129.*128"):
        forward.execute([[1] * (S + 1), 0])
    # Exactly B tokens are accepted (P5 is about > B only).
    assert forward.execute([[1] * S, 0])[0].shape == (1, 512)


@pytest.mark.parametrize(
    "inputs, error",
    [
        ([[1.5, 2.0], 0], TypeError),
        ([["a"], 0], TypeError),
        ([array.array("d", [1.0]), 0], TypeError),
        ([b"\x01\x02", 0], TypeError),
        ([[1, 2]], ValueError),
        ([[1, 2], 0, 0], ValueError),
        ([[1, 2], [0, 5]], ValueError),
        ([[1, 2], []], ValueError),
        ([[1, 2 ** 70], 0], ValueError),
        ([[[1, 2], [3, 4]], 0], TypeError),
        ("forward", TypeError),
        (None, TypeError),
    ],
)
def test_forward_bad_inputs_raise(program, inputs, error):
    with pytest.raises(error):
        program.load_method("forward").execute(inputs)


@pytest.mark.parametrize("tokens, pos", [([600], 0), ([-1], 0), ([1], -3), ([1, 2], 511)])
def test_forward_bad_values_raise_library_errors(program, tokens, pos):
    with pytest.raises(LlmpackError, match="forward"):
        program.load_method("forward").execute([tokens, pos])


def test_constant_method_with_inputs_is_refused(program):
    with pytest.raises(ValueError, match="takes no inputs"):
        program.load_method("get_max_seq_len").execute([1])


def test_unknown_method(program):
    with pytest.raises(LlmpackError, match="no method 'nope'"):
        program.load_method("nope")
    with pytest.raises(KeyError):  # what ExecuTorch raises
        program.load_method("nope")
    with pytest.raises(LlmpackError, match="nope"):
        program.metadata("nope")


def test_load_from_bytes_and_file_object(package):
    data = package.read_bytes()
    for source in (data, bytearray(data)):
        program = Runtime.get().load_program(source, verification=Verification.Minimal)
        assert program.load_method("get_max_seq_len").execute([])[0] == S
    with open(package, "rb") as f:
        assert Runtime.get().load_program(f).load_method("get_n_layers")([])[0] == 5


def test_load_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        Runtime.get().load_program(tmp_path / "missing.gguf")
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + b"\xff" * 40)
    with pytest.raises(LlmpackError, match="bad.gguf"):
        Runtime.get().load_program(bad)
    with pytest.raises(LlmpackError):
        Runtime.get().load_program(b"not a gguf at all")
    with pytest.raises(TypeError, match="path"):
        Runtime.get().load_program(42)
