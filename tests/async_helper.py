"""Runs a coroutine to completion from a sync test, also while Playwright's sync API holds this thread's loop
(the browser session fixture does, so asyncio.run would refuse): a fresh loop in a worker thread."""
import asyncio
from concurrent.futures import ThreadPoolExecutor


def run_coroutine(coro):
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()
