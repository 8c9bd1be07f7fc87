"""The crawl's end of a child process (``utils/child_process.py``) with a real child:
answers in order, a backlog that never blocks the loop, the stall watchdog, and how a
child ended, as its owners describe it."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from typing import Any

from tests.support.distributed_helpers import run_async
from traverse_crawl.utils.child_process import ChildProcess, exit_description

ECHO = "tests.support.echo_child"


class Owner:
    """What an owner of a child keeps: the answers, and whether it waits for one."""

    def __init__(self, config: dict[str, Any], **options: Any) -> None:
        self.answers: list[Any] = []
        self.sent = 0
        self.ended = asyncio.get_running_loop().create_future()
        self.child = ChildProcess(
            asyncio.get_running_loop(), ECHO, config, self.answers.extend, self._ended,
            site_packages=False, owed=lambda: len(self.answers) < self.sent, **options,
        )  # fmt: skip

    def send(self, job: Any) -> None:
        self.sent += 1
        self.child.send(job)

    def _ended(self) -> None:
        self.ended.set_result(self.child.how)


def test_a_child_answers_in_order_and_ends_with_its_summary() -> None:
    async def run() -> tuple[Owner, str, int]:
        owner = Owner({})
        for i in range(500):
            owner.send((i, b"x" * 100))
        owner.child.close()
        how = await asyncio.wait_for(owner.ended, 60)
        return owner, how, owner.child.pid or 0

    owner, how, pid = run_async(run())
    assert owner.answers == [(i, b"x" * 100) for i in range(500)]
    assert owner.child.summary["answered"] == 500 and owner.child.summary["cpu_s"] >= 0
    assert how == "ended (exit status 0)" and owner.child.returncode == 0
    assert not os.path.exists(f"/proc/{pid}")  # reaped: no zombie left
    assert not owner.child.send("late")  # a closed child takes nothing more


def test_sending_never_blocks_the_loop_what_the_pipe_cannot_take_waits_in_memory() -> None:
    async def run() -> tuple[Owner, float, int]:
        owner = Owner({"delay": 1.0})  # reads nothing for a second
        await asyncio.sleep(0.3)  # started: the frames go to the pipe, then to memory
        started = time.monotonic()
        for i in range(200):
            owner.send((i, b"y" * 100_000))  # 20 MB: far more than the pipe holds
        took = time.monotonic() - started
        backlog = owner.child.backlog
        owner.child.close()
        await asyncio.wait_for(owner.ended, 60)
        return owner, took, backlog

    owner, took, backlog = run_async(run())
    assert took < 0.9, f"sending took {took:.2f} s: it waited for the child"
    assert backlog > 10_000_000
    assert [answer[0] for answer in owner.answers] == list(range(200))
    assert owner.child.how == "ended (exit status 0)"


def test_a_child_that_answers_nothing_while_owed_is_killed() -> None:
    async def run() -> tuple[Owner, float]:
        owner = Owner({}, stall_timeout=0.5, stall_setting="SOME_STALL_TIMEOUT")
        owner.send("first")
        while not owner.answers:
            await asyncio.sleep(0.01)
        assert owner.child.pid is not None
        os.kill(owner.child.pid, signal.SIGSTOP)
        await asyncio.sleep(0.8)  # owed nothing meanwhile: not a stall
        assert owner.child.alive
        started = time.monotonic()
        owner.send("second")
        await asyncio.wait_for(owner.ended, 30)
        return owner, time.monotonic() - started

    owner, waited = run_async(run())
    assert 0.4 < waited < 10, waited
    assert owner.child.stalled and owner.answers == ["first"]
    assert owner.child.how == ("answered nothing for 0.5 s (SOME_STALL_TIMEOUT) and was stopped")
    assert owner.child.returncode == -signal.SIGKILL


def test_how_a_killed_child_ended() -> None:
    async def run() -> Owner:
        owner = Owner({})
        owner.send("first")
        while not owner.answers:
            await asyncio.sleep(0.01)
        owner.child.kill()
        await asyncio.wait_for(owner.ended, 30)
        return owner

    owner = run_async(run())
    assert owner.child.how == "ended (killed by SIGKILL)"
    assert exit_description(3) == "exit status 3"
    assert exit_description(-signal.SIGTERM) == "killed by SIGTERM"
