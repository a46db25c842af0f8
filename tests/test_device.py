"""app/device.py in CPython: the kernel's device handle reopens a lost device and plans with capped limits."""

import pytest

from app.caps import DeviceCaps
from app.device import DeviceHandle

from .async_helper import run_coroutine


class FakeGpu:
    def __init__(self, name):
        self.name, self.lost_reason, self.caps, self.runs = name, None, DeviceCaps(), []

    async def execute(self, plan, geom, inputs):
        self.runs.append(plan)
        return self.name, None


def test_a_lost_device_is_replaced_before_the_next_call():
    opened = []

    async def opener():
        opened.append(FakeGpu(f"gpu{len(opened) + 1}"))
        return opened[-1]

    first = FakeGpu("gpu0")
    handle = DeviceHandle(first, opener, {"maxBufferSize": 1000})

    async def scenario():
        out = [await handle.execute("p1", None, {})]
        first.lost_reason = "destroyed: test"
        out.append(await handle.execute("p2", None, {}))
        out.append(await handle.execute("p3", None, {}))
        return out

    assert [name for name, _ in run_coroutine(scenario())] == ["gpu0", "gpu1", "gpu1"]
    assert len(opened) == 1 and first.runs == ["p1"] and opened[0].runs == ["p2", "p3"]
    assert handle.caps.limit("maxBufferSize") == 1000  # the cap follows the new device
    assert handle.caps.limit("maxStorageBufferBindingSize") == 134217728


def test_the_handle_names_what_it_gives_and_proxies_nothing():
    gpu = FakeGpu("g")
    gpu.executor, gpu.memory, gpu.released = "executor", lambda: {"live_bytes": 3}, []
    gpu.release_caches = lambda: gpu.released.append(True)
    handle = DeviceHandle(gpu, None)
    assert handle.gpu is gpu and handle.executor == "executor" and handle.memory() == {"live_bytes": 3}
    handle.release_caches()
    assert gpu.released == [True]
    with pytest.raises(AttributeError):
        handle.name  # the Gpu's own attributes are read on handle.gpu
    with pytest.raises(AttributeError):
        handle.largest_buffer = 7  # ... and set there: no shadow copy on the handle
