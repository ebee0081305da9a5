"""Threads: the GIL is released while the engine runs, stop() from another
Python thread ends a long generation (R9), and concurrent calls on one runner
are refused instead of racing."""

import threading
import time

import pytest

from llmpack import LlmpackError
from llmpack.runner import GenerationConfig, TextLLMRunner


def long_config():
    # The whole context: 512 - prompt positions, far more than the test waits for.
    return GenerationConfig(max_new_tokens=100000, temperature=0.8, seed=7, echo=False, ignore_eos=True)


def test_stop_from_another_thread_ends_generation(runner):
    started = threading.Event()
    count = 0

    def callback(piece):
        nonlocal count
        count += 1
        if count == 10:
            started.set()
        time.sleep(0.002)  # gives the stopping thread the GIL; ~1 s for the whole budget

    def stopper():
        started.wait(10)
        runner.stop()

    t = threading.Thread(target=stopper)
    t.start()
    runner.generate("Once", long_config(), token_callback=callback)
    t.join()
    assert started.is_set()
    budget = long_config().resolve_max_new_tokens(512, runner.stats.num_prompt_tokens)
    assert 10 <= runner.stats.num_generated_tokens < budget
    assert count == runner.stats.num_generated_tokens


def test_generation_runs_without_holding_the_gil(runner):
    # generate() runs without callbacks in a worker thread while this thread
    # keeps asking it to stop. Were the GIL held, this thread could not run
    # until generate() had returned with the whole budget; released, a stop
    # lands while the engine works. No timing is asserted: only that a stop
    # from a pure-Python thread arrived before the budget was spent.
    errors = []

    def work():
        try:
            runner.generate("Once", long_config())
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    worker = threading.Thread(target=work)
    worker.start()
    while worker.is_alive():
        runner.stop()  # a stop before generate() starts is cleared by it; the next one counts
        worker.join(0.001)
    assert errors == []
    budget = long_config().resolve_max_new_tokens(512, runner.stats.num_prompt_tokens)
    assert runner.stats.num_generated_tokens < budget


def test_concurrent_generate_is_refused(runner):
    inside = threading.Event()
    release = threading.Event()
    errors = []

    def slow_callback(piece):
        inside.set()
        release.wait(5)

    def first():
        try:
            runner.generate("Once", GenerationConfig(max_new_tokens=3, echo=False, ignore_eos=True),
                            token_callback=slow_callback)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    t = threading.Thread(target=first)
    t.start()
    assert inside.wait(10)
    with pytest.raises(LlmpackError, match="busy"):
        runner.generate("Twice", GenerationConfig(max_new_tokens=1))
    with pytest.raises(LlmpackError, match="busy"):
        runner.reset()
    release.set()
    t.join()
    assert errors == []


def test_two_runners_in_parallel_threads(package):
    results = {}

    def work(name):
        r = TextLLMRunner(str(package), cpu_threads=1)
        results[name] = r.generate_text("Once", GenerationConfig(max_new_tokens=20, temperature=0, echo=False,
                                                                 ignore_eos=True))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results[0] == results[1] != ""


def test_interpreter_exit_during_generation_in_a_daemon_thread(package):
    # The interpreter ends a daemon thread that wants the GIL back for a
    # callback; the process must still exit cleanly.
    import os
    import subprocess
    import sys

    script = f"""
import threading, time
from llmpack.runner import GenerationConfig, TextLLMRunner
runner = TextLLMRunner({str(package)!r})
started = threading.Event()
def callback(piece):
    started.set()
    time.sleep(0.01)
config = GenerationConfig(max_new_tokens=100000, echo=False, ignore_eos=True)
threading.Thread(target=runner.generate, args=("Once", config, callback), daemon=True).start()
started.wait(10)
print("exiting", flush=True)
"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert "exiting" in done.stdout
    assert done.returncode == 0, done.stderr
    assert "terminate" not in done.stderr
