// Types of the JavaScript runtime (web/runtime/index.mjs, node.mjs) and so of the npm package's entries.
// Read from the runtime: kernel.mjs (getKernel, the kernel function), tensors.mjs (inputs), executor.mjs
// (outputs, meta, memory), errors.mjs (the error classes), boot.mjs (the assets folder); keep them in step
// (tests/test_npm_package.py type-checks apps against them).

declare global {
  // WebGPU's own types come from @webgpu/types (or a lib.dom that has them), and merge with these; an app
  // without them still type-checks, with only the members named here.
  interface GPUBuffer {
    readonly size: number;
    readonly usage: number;
  }
  interface GPUDevice {}
}

/** The kernel this package provides (getKernel refuses any other id with a KernelNotFoundError). */
export type KernelId = "webgpu-kernels/ai.onnx.ConvTranspose" | (string & {});

/** float16 needs a device with the `shader-f16` feature; its values travel as Uint16Array bit patterns. */
export type Dtype = "float32" | "float16";

/** Numbers a CPU tensor may hold: converted to the dtype's typed array unless they already are one. */
export type TensorData =
  | Float32Array | Uint16Array | Float64Array | Int8Array | Uint8Array | Uint8ClampedArray
  | Int16Array | Int32Array | Uint32Array | readonly number[];

/** A tensor in CPU memory: flat, row-major data. */
export interface CpuTensor {
  data: TensorData;
  shape: readonly number[];
  /** "float32" unless given. */
  dtype?: Dtype;
  /** Weights that do not change: written to the GPU once and kept while the same array comes back
   * (call kernel.forget(array) after changing it in place). */
  constant?: boolean;
}

/** A tensor in a GPUBuffer of the kernel's device, with GPUBufferUsage.STORAGE and at least the shape's bytes. */
export interface GpuTensor {
  buffer: GPUBuffer;
  shape: readonly number[];
  dtype?: Dtype;
  /** false when the buffer may hold NaN or Inf (the kernel then runs a variant exact for them). Default true. */
  finite?: boolean;
}

export type Tensor = CpuTensor | GpuTensor;

/** ONNX ConvTranspose's attributes (opsets 11-22); every one optional, defaults as ONNX's. */
export interface ConvTransposeAttributes {
  strides?: readonly number[];
  pads?: readonly number[];
  dilations?: readonly number[];
  group?: number;
  output_padding?: readonly number[];
  output_shape?: readonly number[];
  auto_pad?: "NOTSET" | "SAME_UPPER" | "SAME_LOWER" | "VALID";
  kernel_shape?: readonly number[];
}

/** One request: x [N, C, ...spatial] (1D, 2D or 3D), w [C, M/group, ...kernel], b [M] optional. */
export interface KernelInputs extends ConvTransposeAttributes {
  x: Tensor;
  w: Tensor;
  b?: Tensor | null;
  /** Forces a variant by name instead of the planner's choice. */
  variant?: string | null;
}

export interface CallOptions {
  /** "cpu" (default): y read back into a typed array; "gpu": y stays in a GPUBuffer the caller owns. */
  output?: "cpu" | "gpu";
  /** Measure GPU time (timestamp-query) also when y stays on the GPU; CPU outputs are always timed where the
   * device can. */
  timing?: boolean;
  /** Receives performance.now() marks of the call's stages. */
  profile?: Record<string, unknown> | null;
  /** With a CPU output: y is read into this array (y's dtype and element count), which the result's y.data is.
   * A caller that reuses one array per layer saves the new array's cost (page faults: 2.8 ms against 0.57 for
   * 4 MiB on the H200). */
  into?: Float32Array | Uint16Array | null;
}

export interface Meta {
  variant: string;
  /** Why the planner chose it. */
  reason: string;
  /** GPU time of the passes this call ran (weight passes only on the call that runs them), from timestamp-query;
   * null without the feature. */
  gpu_ms: number | null;
  y_shape: number[];
  /** How many pieces the request ran as (more than 1 past the device's limits). */
  pieces: number;
}

export interface CpuOutput {
  /** Float32Array for float32, Uint16Array (float16 bit patterns) for float16. */
  data: Float32Array | Uint16Array;
  shape: number[];
  dtype: Dtype;
}

export interface GpuOutput {
  buffer: GPUBuffer;
  shape: number[];
  dtype: Dtype;
  /** Hands the buffer back to the kernel (reused for the next output of its size). */
  dispose(): void;
}

export interface Result<Y> {
  y: Y;
  meta: Meta;
}

/** What kernel.upload returns: a GpuTensor in a new buffer (STORAGE | COPY_SRC | COPY_DST) the caller owns. */
/** What the plan record keeps per rate key of adaptation's samples (app/calibration.py): their count, and the sums of w
 * (the share of a prediction the rate decides), w^2, log(measured / predicted) and w times that. */
export interface CalibrationSums { n: number; w: number; ww: number; log: number; wlog: number }

export interface UploadedTensor {
  buffer: GPUBuffer;
  shape: number[];
  dtype: Dtype;
}

/** GPU memory the kernel holds for its launches (y buffers handed to callers are not counted). */
export interface KernelMemory {
  live_bytes: number;
  cached_bytes: number;
  launches: number;
  pipelines: number;
  executions: number;
  launch_cache_size: number;
  pipeline_cache_size: number;
  [counter: string]: number;
}

export interface DeviceInfo {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  is_fallback: boolean;
  features: string[];
  adapter_features: string[];
  /** The limits the package plans with. */
  limits: Record<string, number>;
  subgroup_sizes: [number | null, number | null];
  subgroup_matrix_configs: unknown[];
  memory: Record<string, number>;
}

/** The kernel: a function of one request, with the tools below. */
export interface Kernel {
  (inputs: KernelInputs, options: CallOptions & { output: "gpu" }): Promise<Result<GpuOutput>>;
  (inputs: KernelInputs, options?: CallOptions & { output?: "cpu" }): Promise<Result<CpuOutput>>;
  /** Copies CPU data once into a GPU buffer of the kernel's device. */
  upload(tensor: CpuTensor): UploadedTensor;
  /** After rewriting constant weights (an array, a GPUBuffer or a tensor holding one) in place. */
  forget(weights: TensorData | GPUBuffer | Tensor): void;
  memory(): KernelMemory;
  /** What adaptation did per signature this kernel planned (docs/api.md `adapt`). */
  adaptations(): Array<Record<string, unknown>>;
  /** What this kernel plans with of the calibration adaptation measured on this adapter (docs/api.md `adapt`): per
   * rate key what its samples add up to, and where it was read; null with none or `adapt: false`. */
  calibration(): Promise<{ source: string; rates: Record<string, CalibrationSums>; tag: string } | null>;
  /** Resolves once Python has opened the kernel and numpy has loaded (getKernel may resolve before: a revisit, a
   * first visit from the snapshot): device(), validate(), reference() and the case and bench runners need it;
   * calls never do. */
  readonly ready: Promise<true>;
  /** The adapter, its features and the limits the package plans with. */
  device(): DeviceInfo;
  /** The GPUDevice the kernel runs on (the caller's, or the one the package opened). */
  gpuDevice(): GPUDevice;
  /** Resolves once nothing the kernel set off in the background runs on (a trial's alternatives planned and compiled,
   * a starter weighed, a store's writes) and the GPU's queue is drained: in Node, await it before process.exit. */
  idle(): Promise<void>;
  /** y by the float64 CPU reference (numpy in Pyodide). */
  reference(inputs: KernelInputs): { data: Float64Array; shape: number[]; dtype: "float64" };
  /** {} when the request would run, else why not: every refusal, found without GPU work. */
  validate(inputs: KernelInputs): { error?: string; field?: string | null };
  // The web app's case and bench runners (test.json / bench.json documents).
  loadCases(text: string): string[];
  runCase(index: number, variant?: string | null): Promise<Record<string, unknown>>;
  loadBench(text: string, tier: string): unknown[];
  runBenchCase(index: number, options?: { runs?: number; warmup?: number }): Promise<unknown>;
  tuneBench(benchText: string, indices: number[],
            options?: { runs?: number; progress?: (message: string) => void }): Promise<unknown>;
}

/** Where autotuning keeps its choices between runs (web/runtime/store.mjs: IndexedDB in a browser, a JSON file in
 * Node, by default). A store you pass must answer each call within 5 s (else a warning, and it is not asked again). */
export interface AutotuneStore {
  get(key: string): Promise<string | null>;
  set(key: string, text: string): Promise<void>;
}

export interface GetKernelOptions {
  /** The contract version: 1. */
  version?: number;
  /** Your own GPUDevice: the kernel plans with its features and limits. Without it the package opens its own. */
  device?: GPUDevice | null;
  /** Pins the package revision (40 hex digits) in metadata.json. */
  revision?: string | null;
  /** Caps the device limits the package plans with (requests past them run as pieces). */
  limits?: Record<string, number> | null;
  /** Bytes of GPU memory kept for constant arrays and weight GPUBuffers (default 512 MiB, least recently used out first). */
  weightCacheBytes?: number;
  /** The folder that serves pyodide/ and bundle.zip when it is not beside the module (a CDN of yours): a
   * URL, or a path or file: URL in Node. The first getKernel's folder holds for the page (or process). */
  assets?: string | URL | null;
  /** A signature's first call times the candidate variants and keeps the fastest (stored for later runs). */
  autotune?: boolean | { store?: AutotuneStore; budgetMs?: number | null };
  /** Where plans persist between visits, so that a revisit runs the signatures it has seen before Python is up
   * (the package's default: IndexedDB in a browser, $CONVTRANSPOSE_PLANS or ~/.cache/webgpu-convtranspose/plans.json
   * in Node; false: none). Used for the package's own device, without limits, revision or autotune. */
  planStore?: PlanStore | false | null;
  /** Adaptation on repeated calls (default true): while a signature keeps being called, a few next-best
   * candidates run real calls, timed, and the fastest is kept (kernel.adaptations() says what ran). Variants
   * differ in rounding within the stated tolerances: false for bit-identical runs. What the trials measure also
   * corrects the cost model's predictions for signatures not seen yet (kernel.calibration()); false neither
   * records nor applies it. */
  adapt?: boolean;
}

/** A store of persisted plans (web/runtime/plan-store.mjs): JSON text by key, each call answered within 5 s
 * (else a warning, and it is not asked again). What it gives back is checked before use (docs/reliability.md). */
export interface PlanStore {
  get(key: string): Promise<string | null>;
  set(key: string, text: string): Promise<void>;
}

export function getKernel(id: KernelId, options?: GetKernelOptions): Promise<Kernel>;

/** The base of the errors below, and itself the error of an assets folder that cannot serve the runtime (field
 * "assets", the message naming the URL): `field` names the input or attribute at fault ("x", "strides", "output"...),
 * `pythonTraceback` is Python's traceback when Python raised it. */
export class KernelError extends Error {
  constructor(message: string, field?: string | null, traceback?: string | null);
  field?: string;
  pythonTraceback?: string;
}
/** A bad request, always refused before any GPU work. */
export class ConvTransposeError extends KernelError {
  name: "ConvTransposeError";
}
/** WebGPU refused or lost something. */
export class GpuError extends KernelError {
  name: "GpuError";
}
/** An unknown kernel id, version or revision. */
export class KernelNotFoundError extends KernelError {
  name: "KernelNotFoundError";
}

export interface BootOptions {
  assets?: string | URL | null;
  progress?: (message: string) => void;
}
/** One start-up phase: its name, start (ms since the page's or process's time origin) and length (null: running). */
export interface BootPhase {
  phase: string;
  startMs: number;
  ms: number | null;
}
/** The phases of the start-up under way or done (fetch bundle.zip, start Python, open the device, ...). */
export function bootPhases(): BootPhase[];
/** Loads Pyodide and the package once per page (getKernel does it on first use). */
export function bootApp(options?: BootOptions): Promise<{ pyodide: unknown; bridge: unknown; manifest: unknown; loadMs: number }>;
/** app.bridge.<name>(...args) in Pyodide, once booted; plain JS data back. */
export function callPython(name: string, ...args: unknown[]): Promise<any>;
export function callPythonNow(name: string, ...args: unknown[]): any;
