"""One turn's reads are made once, shared by the tasks it starts, and never outlive the turn."""

import asyncio

import pytest

from ops_app.core.turn_memo import remembered, turn_scope


class Loader:
    def __init__(self, *answers):
        self.answers = list(answers)
        self.calls = 0
        self.gate: asyncio.Event | None = None
        self.entered = asyncio.Event()

    async def __call__(self):
        self.calls += 1
        self.entered.set()
        if self.gate is not None:
            await self.gate.wait()
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


async def test_outside_a_turn_every_read_goes_to_the_source():
    load = Loader(1, 2)
    assert await remembered("version", load) == 1
    assert await remembered("version", load) == 2
    assert load.calls == 2


async def test_inside_a_turn_a_key_is_read_once_and_other_keys_apart():
    version, sources = Loader(7), Loader(["prom"])
    with turn_scope():
        assert await remembered(("version", 1), version) == 7
        assert await remembered(("version", 1), version) == 7
        assert await remembered(("sources", 1), sources) == ["prom"]
    assert version.calls == 1 and sources.calls == 1


async def test_parallel_workers_of_one_turn_share_a_single_load():
    load = Loader(42)
    load.gate = asyncio.Event()
    with turn_scope():
        workers = [asyncio.create_task(remembered("endpoint", load)) for _ in range(3)]
        await load.entered.wait()  # the first worker is inside the load; the others wait on it
        load.gate.set()
        assert await asyncio.gather(*workers) == [42, 42, 42]
    assert load.calls == 1


async def test_a_failed_read_is_not_remembered_for_the_rest_of_the_turn():
    load = Loader(RuntimeError("database away"), 5)
    with turn_scope():
        with pytest.raises(RuntimeError, match="database away"):
            await remembered("version", load)
        assert await remembered("version", load) == 5
    assert load.calls == 2


async def test_a_waiter_loads_for_itself_when_the_first_load_fails():
    load = Loader(RuntimeError("timeout"), 9)
    load.gate = asyncio.Event()
    with turn_scope():
        first = asyncio.create_task(remembered("k", load))
        await load.entered.wait()
        second = asyncio.create_task(remembered("k", load))
        await asyncio.sleep(0)  # one loop pass: the second caller starts waiting on the first load
        load.gate.set()
        with pytest.raises(RuntimeError):
            await first
        assert await second == 9
    assert load.calls == 2  # the waiter's own load, after the first one failed


async def test_the_next_turn_reads_again():
    load = Loader(1, 2)
    with turn_scope():
        assert await remembered("version", load) == 1
    with turn_scope():
        assert await remembered("version", load) == 2
