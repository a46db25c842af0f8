"""The GPU layer: the only module that talks to WebGPU (navigator.gpu through Pyodide's JS interop).

It opens the device (optional features when offered, limits raised to the adapter's), compiles and
caches pipelines by their rendered source, runs a Plan's dispatches in one submission, reads the output
back, and turns WebGPU errors into GpuError. Everything above it is plain Python and numpy.
"""
from __future__ import annotations

import asyncio
import hashlib
import time
from collections import OrderedDict

import js  # noqa: F401  (Pyodide only; importing this module in CPython fails by design)
import numpy as np
from pyodide.ffi import JsException, to_js

from .caps import DEFAULT_LIMITS, DeviceCaps, matrix_configs
from .errors import GpuError
from .plan import Plan
from .render import render

OPTIONAL_FEATURES = ("shader-f16", "subgroups", "timestamp-query", "chromium-experimental-subgroup-matrix")
RAISED_LIMITS = tuple(DEFAULT_LIMITS)
MAX_QUERIES = 4096  # WebGPU caps a timestamp query set at 4096 queries
PREPARED_CACHE_SIZE = 8  # weight layouts kept on the device (per weight content and layout)
PIPELINE_CACHE_SIZE = 64  # compiled pipelines kept, least recently used dropped (per rendered source)

# GPUBufferUsage and GPUMapMode bits (constants of the WebGPU spec).
MAP_READ, COPY_SRC, COPY_DST, UNIFORM, STORAGE, QUERY_RESOLVE = 0x1, 0x4, 0x8, 0x40, 0x80, 0x200
MAP_MODE_READ = 0x1


def _js(value):
    return to_js(value, dict_converter=js.Object.fromEntries)


def _padded(nbytes: int) -> int:
    # Bindings must be non-empty and 4-byte aligned; zero-size tensors still get a tiny buffer.
    return max(4, (nbytes + 3) // 4 * 4)


class Gpu:
    """One WebGPU device and its pipeline cache."""

    def __init__(self, device, caps: DeviceCaps):
        self.device = device
        self.caps = caps
        self._pipelines: OrderedDict = OrderedDict()
        self._prepared: OrderedDict = OrderedDict()
        # One plan at a time: error scopes are a per-device stack, so two interleaved calls would pop each
        # other's scopes (and share the prepared-weight cache mid-update).
        self._lock = asyncio.Lock()
        self.live_bytes = 0  # bytes of GPU buffers created and not yet destroyed (caches included)
        self.largest_buffer = 0  # the largest buffer created since the caller last reset it (split tests)
        self.lost_reason: str | None = None
        self.executions = 0  # plans submitted; tests use it to prove refusals happen before GPU work
        self.weight_preparations = 0  # weight-side passes run (the rest were served from the cache)
        device.lost.then(self._on_lost)

    def _on_lost(self, info):
        self.lost_reason = f"{info.reason}: {info.message}"

    @classmethod
    async def open(cls) -> "Gpu":
        gpu = getattr(js.navigator, "gpu", None)
        if gpu is None:
            raise GpuError("WebGPU is not available here (navigator.gpu is missing)")
        adapter = await gpu.requestAdapter(_js({"powerPreference": "high-performance"}))
        if adapter is None:
            raise GpuError("no WebGPU adapter (in Chromium without a GPU, start it with --enable-unsafe-webgpu)")
        features = [f for f in OPTIONAL_FEATURES if adapter.features.has(f)]
        limits = {name: getattr(adapter.limits, name) for name in RAISED_LIMITS}
        device = await adapter.requestDevice(_js({"requiredFeatures": features, "requiredLimits": limits}))
        info = adapter.info
        caps = DeviceCaps(
            features=frozenset(features), adapter_features=frozenset(str(f) for f in adapter.features),
            limits=limits, vendor=str(info.vendor),
            architecture=str(info.architecture), device=str(info.device), description=str(info.description),
            is_fallback=bool(getattr(info, "isFallbackAdapter", False) or getattr(adapter, "isFallbackAdapter", False)),
            subgroup_min_size=int(getattr(info, "subgroupMinSize", 0) or 0),
            subgroup_max_size=int(getattr(info, "subgroupMaxSize", 0) or 0),
            subgroup_matrix_configs=matrix_configs(getattr(info, "subgroupMatrixConfigs", None)
                                                   if "chromium-experimental-subgroup-matrix" in features else ()))
        return cls(device, caps)

    async def _pipeline(self, source: str, label: str):
        cached = self._pipelines.get(source)
        if cached is not None:
            self._pipelines.move_to_end(source)
            return cached
        module = self.device.createShaderModule(_js({"code": source, "label": label}))
        try:
            pipeline = await self.device.createComputePipelineAsync(
                _js({"label": label, "layout": "auto", "compute": {"module": module, "entryPoint": "main"}}))
        except JsException as exc:
            info = await module.getCompilationInfo()
            messages = "; ".join(f"line {m.lineNum}: {m.message}" for m in info.messages)
            raise GpuError(f"variant {label}: the shader did not compile or link: {messages or exc}") from None
        self._pipelines[source] = pipeline
        while len(self._pipelines) > PIPELINE_CACHE_SIZE:
            self._pipelines.popitem(last=False)  # GPUComputePipeline has no destroy(): dropping it frees it
        return pipeline

    def _buffer(self, nbytes: int, usage: int, data: bytes | None = None):
        size = _padded(nbytes)
        buf = self.device.createBuffer(_js({"size": size, "usage": usage, "mappedAtCreation": data is not None}))
        self.live_bytes += size
        self.largest_buffer = max(self.largest_buffer, size)
        if data is not None:
            if data:
                js.Uint8Array.new(buf.getMappedRange(0, len(data) + (-len(data)) % 4)).subarray(0, len(data)).assign(data)
            buf.unmap()
        return buf

    def _prepared_buffers(self, plan: Plan, w: np.ndarray, pipelines) -> tuple[tuple, dict, list]:
        """Buffers that the plan's weight-side passes fill, reused while the same weights come back.

        Returns (cache key, buffers, passes still to run); new buffers enter the cache only once the
        submission that fills them has succeeded."""
        key = (plan.prepare_key, hashlib.sha1(w.tobytes()).hexdigest())
        cached = self._prepared.get(key)
        if cached is not None:
            self._prepared.move_to_end(key)
            return key, cached, []
        buffers = {name: self._buffer(nbytes, STORAGE) for name, nbytes in plan.prepared.items()}
        return key, buffers, list(zip(plan.prepare, pipelines))

    def _remember_prepared(self, key: tuple, buffers: dict) -> None:
        self._prepared[key] = buffers
        while len(self._prepared) > PREPARED_CACHE_SIZE:
            for buf in self._prepared.popitem(last=False)[1].values():
                self._release(buf)

    def release_caches(self) -> None:
        """Drops every cached weight layout and pipeline (their GPU memory goes back to the device)."""
        for entry in self._prepared.values():
            for buf in entry.values():
                self._release(buf)
        self._prepared.clear()
        self._pipelines.clear()

    def _bind(self, dispatch, pipeline, buffers: dict, owned: list):
        """The dispatch's bind group: its buffers in binding order, then a uniform buffer of its sizes (owned
        by the caller, which releases it)."""
        uniforms = np.array([v for _, v in dispatch.uniforms] or [0], dtype=np.int32).tobytes()
        ubuf = self._buffer(len(uniforms) + (-len(uniforms)) % 16, UNIFORM, uniforms)
        owned.append(ubuf)
        entries = [{"binding": j, "resource": {"buffer": buffers[name]}} for j, name in enumerate(dispatch.bindings)]
        entries.append({"binding": len(entries), "resource": {"buffer": ubuf}})
        return self.device.createBindGroup(_js({"layout": pipeline.getBindGroupLayout(0), "entries": entries}))

    def _release(self, buf) -> None:
        self.live_bytes -= int(buf.size)
        buf.destroy()

    def memory(self) -> dict:
        """GPU memory the package holds: live buffer bytes, the part held by the prepared-weight cache, and
        the cache sizes (the web page's device panel shows these)."""
        cached = sum(int(buf.size) for entry in self._prepared.values() for buf in entry.values())
        return {"live_bytes": self.live_bytes, "cached_bytes": cached, "prepared_entries": len(self._prepared),
                "pipelines": len(self._pipelines), "pipeline_cache_size": PIPELINE_CACHE_SIZE}

    async def execute(self, plan: Plan, inputs: dict[str, np.ndarray], y_nbytes: int) -> tuple[bytes, float | None]:
        """Runs the plan; returns the raw bytes of y and the GPU time in ms (None without timestamp-query)."""
        async with self._lock:
            return await self._execute(plan, inputs, y_nbytes)

    async def _execute(self, plan: Plan, inputs: dict[str, np.ndarray], y_nbytes: int) -> tuple[bytes, float | None]:
        if self.lost_reason:
            raise GpuError(f"the WebGPU device was lost ({self.lost_reason})")
        device = self.device
        self.executions += 1
        pipelines = [await self._pipeline(render(d.template, d.params), plan.variant)
                     for d in plan.prepare + plan.dispatches]
        prepare_pipelines, main_pipelines = pipelines[:len(plan.prepare)], pipelines[len(plan.prepare):]
        device.pushErrorScope("out-of-memory")
        device.pushErrorScope("validation")
        used = {name for d in plan.prepare + plan.dispatches for name in d.bindings}
        buffers = {name: self._buffer(arr.nbytes, STORAGE | COPY_DST, arr.tobytes())
                   for name, arr in inputs.items() if name in used}
        buffers["y"] = self._buffer(y_nbytes, STORAGE | COPY_SRC)
        for name, nbytes in plan.scratch.items():
            buffers[name] = self._buffer(nbytes, STORAGE)
        owned = list(buffers.values())
        passes = list(zip(plan.dispatches, main_pipelines))
        fresh_prepared = None
        if plan.prepare:
            key, prepared, prepare_passes = self._prepared_buffers(plan, inputs["w"], prepare_pipelines)
            buffers |= prepared
            if prepare_passes:
                passes = prepare_passes + passes
                fresh_prepared = (key, prepared)
                self.weight_preparations += 1
        timed = self.caps.has("timestamp-query")
        if timed:
            count = 2 * len(passes)
            queries = device.createQuerySet(_js({"type": "timestamp", "count": count}))
            resolved = self._buffer(8 * count, QUERY_RESOLVE | COPY_SRC)
            stamps = self._buffer(8 * count, MAP_READ | COPY_DST)
            owned += [resolved, stamps]
        encoder = device.createCommandEncoder()
        for i, (dispatch, pipeline) in enumerate(passes):
            group = self._bind(dispatch, pipeline, buffers, owned)
            descriptor = {"label": f"{plan.variant}#{i}"}
            if timed:
                descriptor["timestampWrites"] = {"querySet": queries, "beginningOfPassWriteIndex": 2 * i,
                                                 "endOfPassWriteIndex": 2 * i + 1}
            compute = encoder.beginComputePass(_js(descriptor))
            compute.setPipeline(pipeline)
            compute.setBindGroup(0, group)
            compute.dispatchWorkgroups(*dispatch.workgroups)
            compute.end()
        readback = self._buffer(y_nbytes, MAP_READ | COPY_DST)
        owned.append(readback)
        encoder.copyBufferToBuffer(buffers["y"], 0, readback, 0, _padded(y_nbytes))
        if timed:
            encoder.resolveQuerySet(queries, 0, count, resolved, 0)
            encoder.copyBufferToBuffer(resolved, 0, stamps, 0, 8 * count)
        device.queue.submit(_js([encoder.finish()]))
        try:
            try:
                validation = await device.popErrorScope()
                oom = await device.popErrorScope()
            except JsException as exc:  # older implementations reject instead of resolving on a lost device
                raise GpuError(f"variant {plan.variant}: {self.lost_reason or exc}") from None
            for error in (validation, oom):
                if error is not None:
                    raise GpuError(f"variant {plan.variant}: WebGPU {error.constructor.name}: {error.message}")
            try:
                await readback.mapAsync(MAP_MODE_READ)
            except JsException as exc:
                why = f"the WebGPU device was lost during the call ({self.lost_reason})" if self.lost_reason else exc
                raise GpuError(f"variant {plan.variant}: reading the output back failed: {why}") from None
            data = js.Uint8Array.new(readback.getMappedRange()).to_bytes()[:y_nbytes]
            if fresh_prepared:
                self._remember_prepared(*fresh_prepared)
                fresh_prepared = None
            gpu_ms = None
            if timed and not self.lost_reason:
                await stamps.mapAsync(MAP_MODE_READ)
                ticks = np.frombuffer(js.Uint8Array.new(stamps.getMappedRange()).to_bytes(), dtype=np.uint64)
                gpu_ms = float(np.sum(ticks[1::2].astype(np.int64) - ticks[0::2].astype(np.int64))) / 1e6
            return data, gpu_ms
        finally:
            for buf in owned + (list(fresh_prepared[1].values()) if fresh_prepared else []):
                self._release(buf)
            if timed:
                queries.destroy()

    async def time_resident(self, plan: Plan, inputs: dict[str, np.ndarray], y_nbytes: int,
                            warmup: int = 1, runs: int = 5, repeats: int = 1) -> list[tuple[float, float | None]]:
        """Benchmarks only: times the plan with its inputs already on the GPU and y left there, as a peer
        library is timed (input buffers bound, output not read back). Each run submits the plan `repeats`
        times back to back in one command buffer: a real GPU then stays busy at its working clocks, as it
        does inside a model, instead of idling between calls. Per run, per repetition: (wall ms from
        encoding to queue.onSubmittedWorkDone, GPU ms summed over the compute passes' timestamps, or None
        without timestamp-query). Weight-side passes run once, first."""
        async with self._lock:
            return await self._time_resident(plan, inputs, y_nbytes, warmup, runs, repeats)

    async def _time_resident(self, plan, inputs, y_nbytes, warmup, runs, repeats):
        device = self.device
        pipelines = [await self._pipeline(render(d.template, d.params), plan.variant)
                     for d in plan.prepare + plan.dispatches]
        used = {name for d in plan.prepare + plan.dispatches for name in d.bindings}
        buffers = {name: self._buffer(arr.nbytes, STORAGE | COPY_DST, arr.tobytes())
                   for name, arr in inputs.items() if name in used}
        buffers["y"] = self._buffer(y_nbytes, STORAGE | COPY_SRC)
        for name, nbytes in list(plan.scratch.items()) + list(plan.prepared.items()):
            buffers[name] = self._buffer(nbytes, STORAGE)
        owned = list(buffers.values())

        def bound(dispatch, pipeline):
            return pipeline, self._bind(dispatch, pipeline, buffers, owned), dispatch.workgroups

        prepare = [bound(d, p) for d, p in zip(plan.prepare, pipelines)]
        main = [bound(d, p) for d, p in zip(plan.dispatches, pipelines[len(plan.prepare):])]
        repeats = max(1, min(repeats, MAX_QUERIES // (2 * len(main))))
        timed = self.caps.has("timestamp-query")
        count = 2 * len(main) * repeats
        if timed:
            queries = device.createQuerySet(_js({"type": "timestamp", "count": count}))
            resolved = self._buffer(8 * count, QUERY_RESOLVE | COPY_SRC)
            owned.append(resolved)

        def encode(todo, stamps=None):
            encoder = device.createCommandEncoder()
            for i, (pipeline, group, workgroups) in enumerate(todo):
                descriptor = {"label": f"{plan.variant}#{i}"}
                if stamps is not None:
                    descriptor["timestampWrites"] = {"querySet": queries, "beginningOfPassWriteIndex": 2 * i,
                                                     "endOfPassWriteIndex": 2 * i + 1}
                compute = encoder.beginComputePass(_js(descriptor))
                compute.setPipeline(pipeline)
                compute.setBindGroup(0, group)
                compute.dispatchWorkgroups(*workgroups)
                compute.end()
            if stamps is not None:
                encoder.resolveQuerySet(queries, 0, count, resolved, 0)
                encoder.copyBufferToBuffer(resolved, 0, stamps, 0, 8 * count)
            device.queue.submit(_js([encoder.finish()]))

        samples = []
        device.pushErrorScope("validation")
        try:
            if prepare:
                encode(prepare)
            for i in range(warmup + runs):
                stamps = self._buffer(8 * count, MAP_READ | COPY_DST) if timed else None
                start = time.perf_counter()
                encode(main * repeats, stamps)
                await device.queue.onSubmittedWorkDone()
                wall = (time.perf_counter() - start) * 1000 / repeats
                gpu_ms = None
                if timed:
                    await stamps.mapAsync(MAP_MODE_READ)
                    ticks = np.frombuffer(js.Uint8Array.new(stamps.getMappedRange()).to_bytes(), dtype=np.uint64)
                    gpu_ms = float(np.sum(ticks[1::2].astype(np.int64) - ticks[0::2].astype(np.int64))) / 1e6 / repeats
                    self._release(stamps)
                if i >= warmup:
                    samples.append((wall, gpu_ms))
        finally:
            error = await device.popErrorScope()
            for buf in owned:
                self._release(buf)
            if timed:
                queries.destroy()
        if error is not None:
            raise GpuError(f"variant {plan.variant}: WebGPU {error.constructor.name}: {error.message}")
        return samples
