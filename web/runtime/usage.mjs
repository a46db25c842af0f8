// GPUBufferUsage and GPUMapMode bits (WebGPU constants; some hosts lack the GPUBufferUsage global).
export const USAGE = { MAP_READ: 0x1, COPY_SRC: 0x4, COPY_DST: 0x8, UNIFORM: 0x40, STORAGE: 0x80, QUERY_RESOLVE: 0x200 };
export const MAP_MODE_READ = 0x1;
