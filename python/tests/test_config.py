"""GenerationConfig (CONTRACT G1) and Stats as Python objects; no fixtures needed."""

import copy
import json

import pytest

from llmpack.runner import GenerationConfig, Stats


def test_defaults_are_the_cpp_ones():
    c = GenerationConfig()
    assert c.echo is True
    assert c.max_new_tokens == -1 and c.seq_len == -1
    assert c.temperature == pytest.approx(0.8)
    assert c.top_k == 0 and c.top_p == 1.0 and c.min_p == 0.0 and c.repeat_penalty == 1.0
    assert c.repeat_last_n == 64 and c.presence_penalty == 0.0 and c.frequency_penalty == 0.0
    assert c.top_n_sigma == 0.0 and GenerationConfig(top_n_sigma=1.5).top_n_sigma == 1.5
    assert c.seed is None and c.ignore_eos is False and c.warming is False
    assert c.num_bos == -1 and c.num_eos == 0 and c.stop == []


def test_keywords_and_repr():
    c = GenerationConfig(echo=False, max_new_tokens=7, seq_len=99, temperature=1.7, top_k=40, top_p=0.9,
                         min_p=0.05, repeat_penalty=1.1, presence_penalty=0.5, frequency_penalty=-1.5,
                         seed=2 ** 64 - 1, ignore_eos=True, warming=True, num_bos=0, num_eos=1,
                         stop=["\n\n", "The end"])
    assert (c.max_new_tokens, c.seq_len, c.top_k, c.num_bos, c.num_eos) == (7, 99, 40, 0, 1)
    assert c.seed == 2 ** 64 - 1
    assert c.stop == ["\n\n", "The end"]
    assert "max_new_tokens=7" in repr(c) and "'The end'" in repr(c)
    assert (c.presence_penalty, c.frequency_penalty) == (0.5, -1.5)
    assert c.logit_bias == {}
    c.logit_bias = {5: float("-inf"), 7: 2.0}
    assert c.logit_bias == {5: float("-inf"), 7: 2.0} and "logit_bias={5: -inf, 7: 2.0}" in repr(c)
    assert "presence_penalty=0.5" in repr(c) and "frequency_penalty=-1.5" in repr(c)
    d = copy.deepcopy(c)
    d.max_new_tokens = 3
    assert c.max_new_tokens == 7
    with pytest.raises(TypeError):
        GenerationConfig(True)  # keyword arguments only


def test_a_single_stop_string_is_accepted():
    assert GenerationConfig(stop="END").stop == ["END"]


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(temperature=-0.1), dict(temperature=float("nan")), dict(top_p=0.0), dict(top_p=1.5),
        dict(min_p=2.0), dict(repeat_penalty=0.0), dict(max_new_tokens=-2), dict(seq_len=-5),
        dict(presence_penalty=2.5), dict(frequency_penalty=-2.5), dict(presence_penalty=float("nan")),
        dict(logit_bias={-1: 1.0}), dict(logit_bias={3: 150.0}), dict(logit_bias={3: float("inf")}),
        dict(top_n_sigma=-1.0), dict(top_n_sigma=float("inf")),
        dict(num_bos=-2), dict(num_eos=-1), dict(max_new_tokens=2 ** 40), dict(seed=-1), dict(stop=[""]),
    ],
)
def test_bad_values_raise_value_error(kwargs):
    with pytest.raises(ValueError):
        GenerationConfig(**kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [dict(max_new_tokens="10"), dict(temperature="hot"), dict(seed=1.5), dict(stop=[1]), dict(stop=5),
     dict(unknown=1)],
)
def test_wrong_types_raise_type_error(kwargs):
    with pytest.raises(TypeError):
        GenerationConfig(**kwargs)


def test_bad_assignment_leaves_config_unchanged():
    c = GenerationConfig(temperature=0.5)
    with pytest.raises(ValueError, match="temperature"):
        c.temperature = -1.0
    assert c.temperature == 0.5
    with pytest.raises(ValueError):
        c.top_p = 3.0
    assert c.top_p == 1.0
    c.temperature = 2.5  # any temperature >= 0 is accepted (G5)
    assert c.temperature == 2.5


def test_resolve_max_new_tokens_g1():
    C = 512
    assert GenerationConfig().resolve_max_new_tokens(C, 100) == 412
    assert GenerationConfig(max_new_tokens=50).resolve_max_new_tokens(C, 100) == 50
    assert GenerationConfig(max_new_tokens=500).resolve_max_new_tokens(C, 100) == 412
    assert GenerationConfig(seq_len=300).resolve_max_new_tokens(C, 100) == 200
    assert GenerationConfig(seq_len=900).resolve_max_new_tokens(C, 100) == 412
    assert GenerationConfig(seq_len=300, max_new_tokens=150).resolve_max_new_tokens(C, 100) == 150
    assert GenerationConfig(seq_len=300, max_new_tokens=250).resolve_max_new_tokens(C, 100) == 200
    with pytest.raises(ValueError, match="budget"):
        GenerationConfig(seq_len=50).resolve_max_new_tokens(C, 100)


def test_stats_fields_and_json():
    s = Stats()
    s.num_prompt_tokens = 10
    s.num_generated_tokens = 5
    s.inference_start_ms = 1000
    s.prompt_eval_end_ms = 1100
    s.first_token_ms = 1100
    s.inference_end_ms = 1500
    assert s.prefill_tokens_per_second() == pytest.approx(100.0)
    assert s.decode_tokens_per_second() == pytest.approx(10.0)  # S2: (5 - 1) / 0.4 s
    j = json.loads(s.to_json_string())
    assert j["prompt_tokens"] == 10 and j["generated_tokens"] == 5
    assert "Stats(" in repr(s)
    s.model_load_start_ms = 5
    s.reset()
    assert s.num_generated_tokens == 0 and s.model_load_start_ms == 5
    s.reset(all_stats=True)
    assert s.model_load_start_ms == 0


def test_logit_bias_takes_a_dict_of_token_ids():
    assert GenerationConfig(logit_bias={3: -1.5}).logit_bias == {3: -1.5}
    with pytest.raises(TypeError):
        GenerationConfig(logit_bias=[3])
    with pytest.raises(TypeError):
        GenerationConfig(logit_bias={"3": 1.0})
